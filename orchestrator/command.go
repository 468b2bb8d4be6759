package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/tickets"
)

// Commands people give the bot directly; the host applies them without the
// model, so no prompt text can change who pauses or resumes.
const (
	CommandPause  = "pause"
	CommandResume = "resume"
	CommandAccept = "accept"
)

// Command is a person's command found in a card.
type Command struct {
	Name   string
	Reason string
	// TicketID is set when a card button names its Ticket.
	TicketID int64
}

// ParseCommand finds a command in an addressed card: a comment or message
// whose first word after any @mentions is pause, resume or accept ("@bot
// pause wrong approach"), or a Feishu card button whose value is
// {"action": "pause", "ticket": 12}. It reports false for anything else.
func ParseCommand(c tickets.Card) (Command, bool) {
	if !c.Addressed {
		return Command{}, false
	}
	if c.Kind == "card_action" {
		var v struct {
			Action string `json:"action"`
			Ticket int64  `json:"ticket"`
			Reason string `json:"reason"`
		}
		line, _, _ := strings.Cut(c.Text, "\n")
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			return Command{}, false
		}
		name := strings.ToLower(strings.TrimSpace(v.Action))
		if !isCommand(name) {
			return Command{}, false
		}
		return Command{Name: name, TicketID: v.Ticket, Reason: v.Reason}, true
	}
	words := strings.Fields(c.Text)
	for len(words) > 0 && strings.HasPrefix(words[0], "@") {
		words = words[1:]
	}
	if len(words) == 0 {
		return Command{}, false
	}
	name := strings.ToLower(strings.TrimRight(words[0], ".!:,"))
	if !isCommand(name) {
		return Command{}, false
	}
	return Command{Name: name, Reason: strings.Join(words[1:], " ")}, true
}

func isCommand(s string) bool { return s == CommandPause || s == CommandResume || s == CommandAccept }

// actor names a card's author in pause records.
func actor(c tickets.Card) string {
	if c.Author.Login != "" {
		return c.Source + ":" + c.Author.Login
	}
	return c.Source + ":" + c.Author.ID
}

// applyCommand pauses, resumes or accepts the Tickets a person's command
// names (a card button) or that follow the card's Thread. Only a person who
// passes the gate commands: a bot, CI or anyone else is ignored here, and
// their card flows on as an ordinary card.
func (o *Orchestrator) applyCommand(ctx context.Context, tx *db.Tx, c tickets.Card) error {
	cmd, ok := ParseCommand(c)
	if !ok || o.cfg.Gate.Author(c) != nil {
		return nil //nolint:nilerr // someone the gate refuses commands nothing; the card flows on
	}
	st := o.deps.Tickets
	ids := []int64{cmd.TicketID}
	if cmd.TicketID == 0 {
		var err error
		if ids, err = st.Subscribers(ctx, tx, c.Thread.ID); err != nil {
			return err
		}
	}
	for _, id := range ids {
		t, err := st.Ticket(ctx, tx, id)
		if errors.Is(err, tickets.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		switch cmd.Name {
		case CommandPause:
			if err := st.Pause(ctx, tx, id, actor(c), cmd.Reason); err != nil && !errors.Is(err, tickets.ErrEnded) {
				return err
			}
		case CommandResume:
			if t.Pause == nil {
				continue
			}
			if err := st.Resume(ctx, tx, id, actor(c)); err != nil {
				return err
			}
			if !t.Proposal {
				if err := o.EnqueueExecutor(ctx, tx, id); err != nil {
					return err
				}
			}
		case CommandAccept:
			accepted, err := st.AcceptProposal(ctx, tx, id)
			if err != nil {
				return err
			}
			if accepted {
				if err := o.EnqueueExecutor(ctx, tx, id); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
