package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// reportedReason marks a Session stopped at a limit whose Ticket was
// reported blocked; the limit follows it ("reported: max_steps").
const reportedReason = "reported"

// StoppedAtLimit reports whether the Ticket's latest Executor Session
// stopped at a limit (steps, wall time, token or cost budget), rather than
// by a pause or a person's stop, or not at all: such a Ticket can be
// continued. It is the tickets.LimitCheck of the Stopper.
func (e *Executor) StoppedAtLimit(ctx context.Context, q db.Querier, ticketID int64) (bool, error) {
	x, err := e.execution(ctx, q, ticketID)
	if err != nil || x.SessionID == 0 {
		return false, err
	}
	s, err := e.sessions.Store().Latest(ctx, q, x.SessionID)
	if err != nil {
		return false, err
	}
	return s.State == session.StateStopped && !pausedReason(s.StateReason) && !strings.HasPrefix(s.StateReason, "stopped by"), nil
}

// continueSession starts the Ticket's new Session on a person's continue:
// the same branch and pull request, and a handoff from the last Session
// (why it stopped, its last words, and the host's facts: the original
// request, the pull request, work not pushed, open questions, the last
// steps) as its first message.
// The Session, the handoff and the taken request commit together.
func (e *Executor) continueSession(ctx context.Context, t tickets.Ticket, prev int64) (int64, error) {
	last, err := e.sessions.Store().Latest(ctx, e.deps.DB, prev)
	if err != nil {
		return 0, err
	}
	msgs, err := e.sessions.Store().Messages(ctx, e.deps.DB, last.ID, 0)
	if err != nil {
		return 0, err
	}
	var final string
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" && strings.TrimSpace(msgs[i].Content) != "" {
			final = msgs[i].Content
			break
		}
	}
	facts, err := e.handoffFacts(ctx, t.ID)
	if err != nil {
		return 0, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "host: %s asked to continue ticket %d %q. This is a new Session of the same Ticket; ", e.actorName(ctx, t.ID, t.Continue.By), t.ID, t.Title)
	fmt.Fprintf(&b, "the previous one (Session %d) stopped: %s.\n", last.ID, strings.TrimPrefix(last.StateReason, reportedReason+": "))
	if t.Repo != "" {
		fmt.Fprintf(&b, "Work on in %s on branch %s", t.Repo, e.workBranch(t))
		if t.PullNumber != 0 {
			fmt.Fprintf(&b, " and its pull request #%d", t.PullNumber)
		}
		b.WriteString("; check git_status and git_diff first: the workspace holds what was pushed and committed.\n")
	}
	if final != "" {
		b.WriteString("\nHandoff: the previous Session's last words:\n")
		b.WriteString(final)
		b.WriteString("\n")
	}
	b.WriteString("\n")
	b.WriteString(facts)
	var sid int64
	err = e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		s, err := e.sessions.Create(ctx, tx, session.RoleExecutor, t.ID)
		if err != nil {
			return err
		}
		sid = s.ID
		if _, err := tx.Exec(ctx, `UPDATE executions SET session_id = $2, updated_at = $3 WHERE ticket_id = $1`, t.ID, sid, e.cfg.Now().UTC()); err != nil {
			return fmt.Errorf("recording the new session of ticket %d: %w", t.ID, err)
		}
		text := b.String()
		line, err := e.renewBudget(ctx, tx, t)
		if err != nil {
			return err
		}
		if line != "" {
			text += "\n" + line + "\n"
		}
		if _, err := e.sessions.Append(ctx, tx, sid, text); err != nil {
			return err
		}
		return e.deps.Tickets.ContinueTaken(ctx, tx, t.ID)
	})
	if err != nil {
		return 0, err
	}
	e.cfg.Logger.Info("continuing a ticket in a new session", "ticket", t.ID, "session", sid, "previous", last.ID, "by", t.Continue.By)
	return sid, nil
}

// Continuer starts a new Session of a Ticket whose work stopped, on a
// person's word (tickets.Stopper).
type Continuer interface {
	Continue(ctx context.Context, ticketID int64, actor string) error
}

// continueOnMessage continues a Ticket whose Session stopped at a limit
// when a person who may command it wrote to it since: their message is a
// request to go on, so it starts a new Session with a handoff (through the
// Continuer, which says so in the Ticket's conversation) instead of being
// appended to a Session that will not read it. It returns the new Session,
// or 0 when nothing continues the Ticket.
func (e *Executor) continueOnMessage(ctx context.Context, t tickets.Ticket, sid int64) (int64, error) {
	if t.Stop != nil {
		return 0, nil
	}
	atLimit, err := e.StoppedAtLimit(ctx, e.deps.DB, t.ID)
	if err != nil || !atLimit {
		return 0, err
	}
	cards, err := e.deps.Tickets.Inbox(ctx, e.deps.DB, t.ID, inboxBatch)
	if err != nil {
		return 0, err
	}
	var by *tickets.Card
	for _, c := range cards {
		if c.Author.Type == tickets.AuthorUser && e.mayCommand(t, c.Card) == nil {
			by = &c.Card
			break
		}
	}
	if by == nil {
		return 0, nil
	}
	actor := tickets.Actor(*by)
	if err := e.deps.Continuer.Continue(ctx, t.ID, actor); err != nil {
		if errors.Is(err, tickets.ErrNotStopped) || errors.Is(err, tickets.ErrEnded) || errors.Is(err, tickets.ErrPaused) {
			return 0, nil
		}
		return 0, err
	}
	e.cfg.Logger.Info("a person's message continues a ticket stopped at a limit", "ticket", t.ID, "card", by.ID, "by", actor)
	if t, err = e.deps.Tickets.Ticket(ctx, e.deps.DB, t.ID); err != nil {
		return 0, err
	}
	if t.Continue == nil {
		// Another job of the Ticket took the request first.
		return 0, nil
	}
	next, err := e.continueSession(ctx, t, sid)
	if err != nil {
		return 0, err
	}
	if err := e.deps.Tickets.SetTicketState(ctx, e.deps.DB, t.ID, tickets.TicketWorking); err != nil && !errors.Is(err, tickets.ErrPaused) {
		return 0, err
	}
	return next, nil
}

// mayCommand reports why the author of c may not command Ticket t, or nil
// when they may (Config.MayCommand; by default only the requester).
func (e *Executor) mayCommand(t tickets.Ticket, c tickets.Card) error {
	if e.cfg.MayCommand != nil {
		return e.cfg.MayCommand(t, c)
	}
	if tickets.IsRequester(t, c) {
		return nil
	}
	return errors.New("only the person who asked may command the Ticket")
}
