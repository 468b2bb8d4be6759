package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/tickets"
)

// Commands people give the bot directly; the host applies them without the
// model, so no prompt text can change who pauses or resumes.
const (
	CommandPause  = "pause"
	CommandResume = "resume"
	CommandAccept = outbox.ActionAccept
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
func actor(c tickets.Card) string { return tickets.Actor(c) }

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
			if t.Pause != nil || tickets.Ended(t.State) {
				continue
			}
			if err := st.Pause(ctx, tx, id, actor(c), cmd.Reason); err != nil {
				return err
			}
			if err := o.confirmPause(ctx, tx, t, &c, actor(c), cmd.Reason); err != nil {
				return err
			}
			tx.AfterCommit(func() {
				o.cfg.Logger.Info("ticket paused", "ticket", t.ID, "repo", t.Repo, "by", actor(c), "card", c.ID, "reason", cmd.Reason)
			})
		case CommandResume:
			if t.Pause == nil {
				continue
			}
			if err := st.Resume(ctx, tx, id, actor(c)); err != nil {
				return err
			}
			if err := o.resumed(ctx, tx, t, &c, actor(c)); err != nil {
				return err
			}
			tx.AfterCommit(func() { o.cfg.Logger.Info("ticket resumed", "ticket", t.ID, "repo", t.Repo, "by", actor(c), "card", c.ID) })
		case CommandAccept:
			accepted, err := st.AcceptProposal(ctx, tx, id)
			if err != nil {
				return err
			}
			if accepted {
				if err := o.EnqueueExecutor(ctx, tx, id); err != nil {
					return err
				}
				tx.AfterCommit(func() { o.cfg.Logger.Info("proposal accepted", "ticket", t.ID, "repo", t.Repo, "by", actor(c), "card", c.ID) })
			}
		}
	}
	return nil
}

var (
	_ tickets.PauseHook = (*Orchestrator)(nil)
	_ tickets.StopHook  = (*Orchestrator)(nil)
)

// Stopped says once, in the Ticket's original conversation, that a person
// stopped it from the panel or the API, and wakes its Executor: a running
// Session ends at its next step, and the job's end brings the Ticket's
// progress on GitHub to its last state (tickets.StopHook).
func (o *Orchestrator) Stopped(ctx context.Context, tx *db.Tx, t tickets.Ticket, by, reason string) error {
	text := fmt.Sprintf("Stopped ticket %d (%s) at %s's word", t.ID, oneLine(t.Title), by)
	if reason = oneLine(reason); reason != "" {
		text += ": " + reason
	}
	text += fmt.Sprintf(". Nothing more is written for it; \"@%s continue\" starts it again.", o.cfg.BotLogin)
	if err := o.EnqueueExecutor(ctx, tx, t.ID); err != nil {
		return err
	}
	return o.confirm(ctx, tx, t, nil, "stop", text)
}

// Continued wakes the Executor of a Ticket a person continued, which
// starts its new Session, and confirms it (tickets.StopHook).
func (o *Orchestrator) Continued(ctx context.Context, tx *db.Tx, t tickets.Ticket, by string) error {
	if err := o.EnqueueExecutor(ctx, tx, t.ID); err != nil {
		return err
	}
	return o.confirm(ctx, tx, t, nil, "continue", fmt.Sprintf("Continuing ticket %d (%s) at %s's word, in a new Session that picks up where the last one stopped.", t.ID, oneLine(t.Title), by))
}

// Paused confirms a pause from the panel or the API in the Ticket's
// original conversation (tickets.PauseHook).
func (o *Orchestrator) Paused(ctx context.Context, tx *db.Tx, t tickets.Ticket, by, reason string) error {
	return o.confirmPause(ctx, tx, t, nil, by, reason)
}

// Resumed wakes the Executor of a Ticket a person resumed from the panel or
// the API and confirms it in the Ticket's original conversation
// (tickets.PauseHook).
func (o *Orchestrator) Resumed(ctx context.Context, tx *db.Tx, t tickets.Ticket, by string) error {
	return o.resumed(ctx, tx, t, nil, by)
}

func (o *Orchestrator) confirmPause(ctx context.Context, tx *db.Tx, t tickets.Ticket, c *tickets.Card, by, reason string) error {
	text := fmt.Sprintf("Paused ticket %d (%s) at %s's word", t.ID, oneLine(t.Title), by)
	if reason = oneLine(reason); reason != "" {
		text += ": " + reason
	}
	text += fmt.Sprintf(". Nothing more happens on it until a person says \"@%s resume\".", o.cfg.BotLogin)
	return o.confirm(ctx, tx, t, c, "pause", text)
}

func (o *Orchestrator) resumed(ctx context.Context, tx *db.Tx, t tickets.Ticket, c *tickets.Card, by string) error {
	if !t.Proposal {
		if err := o.EnqueueExecutor(ctx, tx, t.ID); err != nil {
			return err
		}
	}
	return o.confirm(ctx, tx, t, c, "resume", fmt.Sprintf("Resumed ticket %d (%s) at %s's word; the work continues.", t.ID, oneLine(t.Title), by))
}

// confirm records a short confirmation under the person's command card, or
// in the Ticket's original conversation, and schedules a turn to send it.
func (o *Orchestrator) confirm(ctx context.Context, tx *db.Tx, t tickets.Ticket, c *tickets.Card, what, text string) error {
	var card tickets.Card
	switch {
	case c != nil:
		card = *c
	case t.SourceCardID != 0:
		src, err := o.deps.Tickets.Card(ctx, tx, t.SourceCardID)
		if err != nil {
			return err
		}
		card = src
	default:
		return nil
	}
	target, err := o.messageTarget(ctx, tx, card)
	if err != nil {
		return err
	}
	key := fmt.Sprintf("%s:ticket:%d:%d", what, t.ID, o.cfg.Now().UnixNano())
	if c != nil {
		key = fmt.Sprintf("%s:ticket:%d:card:%d", what, t.ID, c.ID)
	}
	if err := o.record(ctx, tx, key, outbox.KindComment, card, t.ID, target, text); err != nil {
		return err
	}
	return o.ScheduleTurn(ctx, tx)
}
