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
// (why it stopped, its last words, the assignment) as its first message.
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
	var assignment string
	if t.SourceCardID != 0 {
		c, err := e.deps.Tickets.Card(ctx, e.deps.DB, t.SourceCardID)
		if err != nil && !errors.Is(err, tickets.ErrNotFound) {
			return 0, err
		}
		if err == nil {
			assignment = tickets.Render(c)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "host: %s asked to continue ticket %d %q. This is a new Session of the same Ticket; ", t.Continue.By, t.ID, t.Title)
	fmt.Fprintf(&b, "the previous one (Session %d) stopped: %s.\n", last.ID, strings.TrimPrefix(last.StateReason, reportedReason+": "))
	if t.Repo != "" {
		fmt.Fprintf(&b, "Work on in %s on branch %s", t.Repo, e.branch(t.ID))
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
	if assignment != "" {
		b.WriteString("\nThe card that started the Ticket:\n")
		b.WriteString(assignment)
	}
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
		if _, err := e.sessions.Append(ctx, tx, sid, b.String()); err != nil {
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
