package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/tickets"
)

// Commands people give the bot directly (docs/architecture.md#commands); the host applies them
// without the model, so no prompt text can change who commands a Ticket.
const (
	CommandPause  = "pause"
	CommandResume = "resume"
	CommandAccept = outbox.ActionAccept
	// CommandStop ends the Ticket at its Executor's next step
	// (tickets.Store.Stop); it closes nothing.
	CommandStop = "stop"
	// CommandContinue starts a new Session of a Ticket a person stopped
	// or whose Session stopped at a limit (tickets.Store.Continue).
	CommandContinue = "continue"
	// CommandRetry runs a Ticket whose last Executor job failed — it ran
	// out of attempts and reported blocked — again (tickets.Store.Retry).
	CommandRetry = "retry"
)

// Command is a person's command found in a card.
type Command struct {
	Name   string
	Reason string
	// TicketID is set when a card button names its Ticket.
	TicketID int64
}

// ParseCommand finds a command in an addressed card: a comment or message
// whose first word after any @mentions is stop, pause, resume, continue,
// retry or accept ("@bot pause wrong approach"), or a Feishu card button
// whose value is {"action": "pause", "ticket": 12}. It reports false for
// anything else.
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

func isCommand(s string) bool {
	switch s {
	case CommandPause, CommandResume, CommandAccept, CommandStop, CommandContinue, CommandRetry:
		return true
	}
	return false
}

// MayCommand reports why the author of card c may not command Ticket t,
// or nil when they may: a person who is the Ticket's requester, passes
// the gate where the card was written (the GitHub permission on its
// repository, the allowed Feishu chats and members), or is an admin. A
// GitHub permission counts only on the Ticket's own repository: a card
// written in another one (a Thread the Ticket follows there) commands it
// only for its requester or an admin.
func (o *Orchestrator) MayCommand(t tickets.Ticket, c tickets.Card) error {
	if c.Author.Type != tickets.AuthorUser {
		return errors.New("only people command Tickets")
	}
	if tickets.IsRequester(t, c) || o.cfg.Gate.Admin(c) == nil {
		return nil
	}
	if c.Source == tickets.SourceGitHub && t.Repo != "" && !strings.EqualFold(t.Repo, c.Thread.Repo) {
		return fmt.Errorf("%s wrote in %s, not in %s, ticket %d's repository, and is neither its requester nor an admin", tickets.Actor(c), c.Thread.Repo, t.Repo, t.ID)
	}
	if err := o.cfg.Gate.Author(c); err != nil {
		return fmt.Errorf("%s is not the requester of ticket %d, nor an admin, and %w", tickets.Actor(c), t.ID, err)
	}
	return nil
}

// actor names a card's author in pause records.
func actor(c tickets.Card) string { return tickets.Actor(c) }

// applyCommand applies a person's command to the Tickets it names (a card
// button) or that the card's Thread is followed by (stopped Tickets
// included, so that they can be continued), inside the transaction that
// admits the card. Only a person who may command a Ticket commands it: a
// bot, CI or anyone else is ignored here, and their card flows on as an
// ordinary card. A command card that commanded something is not work for
// the main Session: a candidate is marked ignored with the reason, and a
// stop's card stays with the Ticket it stopped.
func (o *Orchestrator) applyCommand(ctx context.Context, tx *db.Tx, c tickets.Card) error {
	cmd, ok := ParseCommand(c)
	if !ok {
		return nil
	}
	st := o.deps.Tickets
	ids := []int64{cmd.TicketID}
	if cmd.TicketID == 0 {
		var err error
		if ids, err = st.CommandTargets(ctx, tx, c.Thread.ID); err != nil {
			return err
		}
	}
	var applied []string
	for _, id := range ids {
		t, err := st.Ticket(ctx, tx, id)
		if errors.Is(err, tickets.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if o.MayCommand(t, c) != nil {
			continue
		}
		done, err := o.command(ctx, tx, cmd, t, c)
		if err != nil {
			return err
		}
		if done {
			applied = append(applied, fmt.Sprintf("%s ticket %d", cmd.Name, id))
		}
	}
	if c.State != tickets.CardCandidate {
		return nil
	}
	note := "the host applied the person's command: " + strings.Join(applied, ", ")
	switch {
	case len(applied) == 0 && c.Kind == "card_action" && cmd.TicketID != 0:
		// A button press is a command and never work: one that changed
		// nothing (refused, or not applying any more) goes no further.
		note = fmt.Sprintf("the button press (%s ticket %d) changed nothing", cmd.Name, cmd.TicketID)
	case len(applied) == 0:
		return nil
	}
	if err := st.SetCardState(ctx, tx, c.ID, tickets.CardIgnored, 0); err != nil {
		return err
	}
	return st.SetRoutingNote(ctx, tx, c.ID, note)
}

// command applies one command to one Ticket and reports whether it
// changed the Ticket; a command that does not apply (pausing a paused
// Ticket, continuing one that runs) changes nothing and says nothing.
func (o *Orchestrator) command(ctx context.Context, tx *db.Tx, cmd Command, t tickets.Ticket, c tickets.Card) (bool, error) {
	st := o.deps.Tickets
	by := actor(c)
	log := func(msg string, args ...any) {
		tx.AfterCommit(func() {
			o.cfg.Logger.Info(msg, append([]any{"ticket", t.ID, "repo", t.Repo, "by", by, "card", c.ID}, args...)...)
		})
	}
	switch cmd.Name {
	case CommandPause:
		if t.Pause != nil || tickets.Ended(t.State) {
			return false, nil
		}
		if err := st.Pause(ctx, tx, t.ID, by, cmd.Reason); err != nil {
			return false, err
		}
		log("ticket paused", "reason", cmd.Reason)
		return true, o.confirmPause(ctx, tx, t, &c, by, cmd.Reason)
	case CommandResume:
		if t.Pause == nil {
			return false, nil
		}
		if err := st.Resume(ctx, tx, t.ID, by); err != nil {
			return false, err
		}
		log("ticket resumed")
		return true, o.resumed(ctx, tx, t, &c, by)
	case CommandAccept:
		accepted, err := st.AcceptProposal(ctx, tx, t.ID)
		if err != nil || !accepted {
			return false, err
		}
		log("proposal accepted")
		return true, o.EnqueueExecutor(ctx, tx, t.ID)
	case CommandStop:
		if t.Stop != nil || tickets.Ended(t.State) {
			return false, nil
		}
		// The command is the stop itself, not work for the Ticket: it
		// stays with the Ticket rather than going back to the main
		// Session when the stop ends the Ticket.
		if c.State == tickets.CardFollowUp {
			if err := st.MarkDelivered(ctx, tx, t.ID, c.ID, 0, tickets.DeliveryWithheld, "the person's stop"); err != nil {
				return false, err
			}
		}
		if _, err := st.Stop(ctx, tx, t.ID, by, cmd.Reason); err != nil {
			return false, err
		}
		log("ticket stopped", "reason", cmd.Reason)
		return true, o.stopped(ctx, tx, t, &c, by, cmd.Reason)
	case CommandContinue:
		// "continue budget 20M tokens" raises the Ticket's budget too; a
		// budget that cannot be read changes nothing and says how.
		raise, _, err := tickets.ParseBudget(cmd.Reason)
		if err != nil {
			log("continue refused: unreadable budget", "words", oneLine(cmd.Reason))
			return false, o.confirm(ctx, tx, t, &c, "budget", fmt.Sprintf("Ticket %d (%s) was not continued: %s, e.g. \"@%s continue budget 20M tokens\".",
				t.ID, oneLine(t.Title), err, o.cfg.BotLogin))
		}
		atLimit := false
		if o.deps.AtLimit != nil {
			var err error
			if atLimit, err = o.deps.AtLimit(ctx, tx, t.ID); err != nil {
				return false, err
			}
		}
		err = st.Continue(ctx, tx, t.ID, by, atLimit)
		if errors.Is(err, tickets.ErrNotStopped) || errors.Is(err, tickets.ErrEnded) || errors.Is(err, tickets.ErrPaused) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if err := st.RaiseBudget(ctx, tx, t.ID, raise, by); err != nil {
			return false, err
		}
		log("ticket continued", "after_limit", atLimit, "raise", raise.Tokens, "raise_cost", raise.Cost)
		return true, o.continued(ctx, tx, t, &c, by, raise)
	case CommandRetry:
		err := st.Retry(ctx, tx, t.ID)
		if errors.Is(err, tickets.ErrNotFailed) || errors.Is(err, tickets.ErrEnded) || errors.Is(err, tickets.ErrPaused) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		log("ticket retried")
		return true, o.retried(ctx, tx, t, &c, by)
	}
	return false, nil
}

var (
	_ tickets.PauseHook = (*Orchestrator)(nil)
	_ tickets.StopHook  = (*Orchestrator)(nil)
	_ tickets.RetryHook = (*Orchestrator)(nil)
)

// Stopped says once, in the Ticket's original conversation, that a person
// stopped it from the panel or the API, and wakes its Executor: a running
// Session ends at its next step, and the job's end brings the Ticket's
// progress on GitHub to its last state (tickets.StopHook).
func (o *Orchestrator) Stopped(ctx context.Context, tx *db.Tx, t tickets.Ticket, by, reason string) error {
	return o.stopped(ctx, tx, t, nil, by, reason)
}

// stopped wakes the stopped Ticket's Executor and says so once, under the
// person's command card c or, without one, in the Ticket's original
// conversation.
func (o *Orchestrator) stopped(ctx context.Context, tx *db.Tx, t tickets.Ticket, c *tickets.Card, by, reason string) error {
	text := fmt.Sprintf("Stopped ticket %d (%s) at %s's word", t.ID, oneLine(t.Title), o.actorName(ctx, tx, t.ID, by))
	if reason = oneLine(reason); reason != "" {
		text += ": " + reason
	}
	text += fmt.Sprintf(". Nothing more is written for it, and nothing was closed; \"@%s continue\" starts it again.", o.cfg.BotLogin)
	if err := o.EnqueueExecutor(ctx, tx, t.ID); err != nil {
		return err
	}
	return o.confirm(ctx, tx, t, c, "stop", text)
}

// Continued wakes the Executor of a Ticket a person continued, which
// starts its new Session, and confirms it (tickets.StopHook).
func (o *Orchestrator) Continued(ctx context.Context, tx *db.Tx, t tickets.Ticket, by string) error {
	raise := tickets.Budget{}
	if b, ok, err := o.deps.Tickets.TicketBudget(ctx, tx, t.ID); err != nil {
		return err
	} else if ok {
		raise = b.Raise
	}
	return o.continued(ctx, tx, t, nil, by, raise)
}

func (o *Orchestrator) continued(ctx context.Context, tx *db.Tx, t tickets.Ticket, c *tickets.Card, by string, raise tickets.Budget) error {
	if err := o.EnqueueExecutor(ctx, tx, t.ID); err != nil {
		return err
	}
	text := fmt.Sprintf("Continuing ticket %d (%s) at %s's word, in a new Session that picks up where the last one stopped", t.ID, oneLine(t.Title), o.actorName(ctx, tx, t.ID, by))
	if !raise.IsZero() {
		text += fmt.Sprintf(", with %s more to spend", raise)
	}
	return o.confirm(ctx, tx, t, c, "continue", text+".")
}

// Retried wakes the Executor of a Ticket a person retried from the panel
// or the API and confirms it (tickets.RetryHook).
func (o *Orchestrator) Retried(ctx context.Context, tx *db.Tx, t tickets.Ticket, by string) error {
	return o.retried(ctx, tx, t, nil, by)
}

func (o *Orchestrator) retried(ctx context.Context, tx *db.Tx, t tickets.Ticket, c *tickets.Card, by string) error {
	if err := o.EnqueueExecutor(ctx, tx, t.ID); err != nil {
		return err
	}
	return o.confirm(ctx, tx, t, c, "retry", fmt.Sprintf("Retrying ticket %d (%s) at %s's word: its last job failed, and a new one goes on where its Session stopped.",
		t.ID, oneLine(t.Title), o.actorName(ctx, tx, t.ID, by)))
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
	text := fmt.Sprintf("Paused ticket %d (%s) at %s's word", t.ID, oneLine(t.Title), o.actorName(ctx, tx, t.ID, by))
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
	return o.confirm(ctx, tx, t, c, "resume", fmt.Sprintf("Resumed ticket %d (%s) at %s's word; the work continues.", t.ID, oneLine(t.Title), o.actorName(ctx, tx, t.ID, by)))
}

// actorName is how the acknowledgement names the person who gave a
// command (people.ActorName); the records and logs keep the actor. A
// failed lookup names the actor and is logged.
func (o *Orchestrator) actorName(ctx context.Context, q db.Querier, ticketID int64, actor string) string {
	name, err := people.ActorName(ctx, q, actor)
	if err != nil {
		o.cfg.Logger.Warn("finding a person's name", "ticket", ticketID, "actor", actor, "error", err)
	}
	return name
}

// confirm enqueues the update of the Ticket's status card, records a
// short confirmation under the person's command card, or
// in the Ticket's original conversation, and schedules a turn to send it;
// a stop's confirmation waits for the Executor to release it.
func (o *Orchestrator) confirm(ctx context.Context, tx *db.Tx, t tickets.Ticket, c *tickets.Card, what, text string) error {
	// A Ticket asked for in Feishu shows the change on its status card.
	if err := o.wake.ShowCard(ctx, tx, t.ID); err != nil {
		return err
	}
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
	if target == "" {
		return o.ScheduleTurn(ctx, tx)
	}
	// A stop is said only once the stopped Executor has made its last
	// writes: the message is held until its job releases it
	// (tickets.Store.ReleaseOutgoing), so nothing is written for the
	// Ticket after it.
	_, err = o.deps.Tickets.RecordIntent(ctx, tx, tickets.Outgoing{Key: key, TicketID: t.ID, CardID: card.ID,
		Source: card.Source, Kind: outbox.KindComment, Target: target, Body: text, Held: what == CommandStop})
	if err != nil {
		return err
	}
	return o.ScheduleTurn(ctx, tx)
}

// AnswerCardAction is the immediate answer to a press of a card button
// that carries a command for a Ticket (a status card's Pause, Resume,
// Stop or Continue, a proposal's Accept): a toast saying whether the
// person may give it. It changes nothing: the press is stored before the
// answer and applied as the person's command like any card (applyCommand,
// which checks again), and the status card then shows the change. Any
// other press is answered with an empty body.
func (o *Orchestrator) AnswerCardAction(ctx context.Context, a *feishu.CardAction) feishu.CardActionResponse {
	c := tickets.Card{Source: tickets.SourceFeishu, Kind: "card_action", Addressed: true, AddressedWhy: "card_action",
		Thread: tickets.Thread{Source: tickets.SourceFeishu, Repo: a.ChatID},
		Author: tickets.Author{ID: a.OperatorOpenID, Type: tickets.AuthorUser}, Text: string(a.Value)}
	cmd, ok := ParseCommand(c)
	if !ok || cmd.TicketID == 0 {
		return feishu.CardActionResponse{}
	}
	toast := func(kind, text string) feishu.CardActionResponse {
		return feishu.CardActionResponse{Toast: &feishu.Toast{Type: kind, Content: text}}
	}
	t, err := o.deps.Tickets.Ticket(ctx, o.deps.DB, cmd.TicketID)
	switch {
	case errors.Is(err, tickets.ErrNotFound):
		return toast("error", fmt.Sprintf("There is no ticket %d.", cmd.TicketID))
	case err != nil:
		o.cfg.Logger.Error("answering a card button", "ticket", cmd.TicketID, "error", err)
		return toast("error", "Something went wrong; please try again.")
	}
	if err := o.MayCommand(t, c); err != nil {
		o.cfg.Logger.Info("card button refused", "ticket", t.ID, "command", cmd.Name, "by", tickets.Actor(c))
		return toast("error", fmt.Sprintf("You may not %s ticket %d: only its requester, the people allowed to ask the bot, and admins may.", cmd.Name, t.ID))
	}
	o.cfg.Logger.Info("card button accepted", "ticket", t.ID, "command", cmd.Name, "by", tickets.Actor(c))
	return toast("info", fmt.Sprintf("Got it: %s ticket %d. The card shows the change in a moment.", cmd.Name, t.ID))
}
