package tickets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/superagent-dev/superagent/internal/db"
)

// ErrNotStopped is returned by Continue for a Ticket whose work did not
// stop: it is running, or it has not started, so there is nothing to
// continue.
var ErrNotStopped = errors.New("ticket's work has not stopped")

// Stop ends a Ticket on a person's word: it is cancelled (its pause, if
// any, ends with it) and the stop is recorded, so the Executor's StopCheck
// ends the running Session at its next step and every later write is
// refused. Stopping a stopped Ticket does nothing; an otherwise ended
// Ticket is refused with ErrEnded. It reports whether it stopped the
// Ticket.
func (s *Store) Stop(ctx context.Context, q db.Querier, id int64, actor, reason string) (bool, error) {
	t, err := s.Ticket(ctx, q, id)
	if err != nil {
		return false, err
	}
	if t.Stop != nil {
		return false, nil
	}
	if Ended(t.State) {
		return false, fmt.Errorf("stopping ticket %d: %w", id, ErrEnded)
	}
	_, err = q.Exec(ctx, `UPDATE tickets SET state = 'cancelled', proposal = FALSE, paused_at = NULL, paused_by = '',
    pause_reason = '', resume_state = '', stopped_by = $2, stopped_at = $3, stop_reason = $4,
    continue_by = '', continue_at = NULL, updated_at = $3 WHERE id = $1`, id, actor, s.nowUTC(), reason)
	if err != nil {
		return false, fmt.Errorf("stopping ticket %d: %w", id, err)
	}
	return true, s.releaseHeld(ctx, q, id)
}

// Continue asks for a new Executor Session of a Ticket whose work stopped:
// a person's stop (the Ticket is reopened) or a limit (steps, wall time,
// budget), which left it waiting. The Executor takes the request
// (ContinueTaken) when it starts the new Session with a handoff from the
// last one. A paused Ticket is refused with ErrPaused (resume it), a
// proposal or a Ticket that is running with ErrNotStopped, a done Ticket
// with ErrEnded. stoppedAtLimit says whether the Ticket's latest Session
// stopped at a limit; the caller reads it from the Sessions.
func (s *Store) Continue(ctx context.Context, q db.Querier, id int64, actor string, stoppedAtLimit bool) error {
	t, err := s.Ticket(ctx, q, id)
	if err != nil {
		return err
	}
	switch {
	case t.Pause != nil:
		return fmt.Errorf("continuing ticket %d: %w", id, ErrPaused)
	case t.State == TicketDone || (t.State == TicketCancelled && t.Stop == nil):
		return fmt.Errorf("continuing ticket %d: %w", id, ErrEnded)
	case t.Proposal || (t.Stop == nil && !stoppedAtLimit):
		return fmt.Errorf("continuing ticket %d: %w", id, ErrNotStopped)
	}
	_, err = q.Exec(ctx, `UPDATE tickets SET state = 'open', stopped_by = '', stopped_at = NULL, stop_reason = '',
    continue_by = $2, continue_at = $3, updated_at = $3 WHERE id = $1`, id, actor, s.nowUTC())
	if err != nil {
		return fmt.Errorf("continuing ticket %d: %w", id, err)
	}
	return nil
}

// ContinueTaken clears a Ticket's continue request once its new Session
// exists; call it in the transaction that creates the Session.
func (s *Store) ContinueTaken(ctx context.Context, q db.Querier, id int64) error {
	if _, err := q.Exec(ctx, `UPDATE tickets SET continue_by = '', continue_at = NULL WHERE id = $1`, id); err != nil {
		return fmt.Errorf("taking the continue request of ticket %d: %w", id, err)
	}
	return nil
}

// StopHook is told, inside the transaction that changed it, that a person
// stopped or continued a Ticket: the orchestrator says so once in the
// Ticket's conversation and wakes the Executor, which ends the running
// Session or starts the new one.
type StopHook interface {
	Stopped(ctx context.Context, tx *db.Tx, t Ticket, actor, reason string) error
	Continued(ctx context.Context, tx *db.Tx, t Ticket, actor string) error
}

// LimitCheck reports, inside tx, whether the Ticket's latest Executor
// Session stopped at a limit; the Session runtime knows, package tickets
// does not.
type LimitCheck func(ctx context.Context, q db.Querier, ticketID int64) (bool, error)

// Stopper stops, continues and retries Tickets in their own transactions
// on a person's word, beside the Pauser: the admin panel and the API call
// it, and the Executor continues through it when a person writes to a
// Ticket that stopped at a limit. The comment and chat commands apply the
// same Store operations inside the transaction that admits their card.
type Stopper struct {
	d       *db.DB
	store   *Store
	atLimit LimitCheck
	hooks   []StopHook
	logger  *slog.Logger
}

// NewStopper returns a Stopper over d. atLimit tells whether a Ticket's
// latest Session stopped at a limit (nil: never, so only a stopped Ticket
// can be continued); the hooks hear of every stop and continue that
// changed a Ticket.
func NewStopper(d *db.DB, store *Store, atLimit LimitCheck, hooks ...StopHook) *Stopper {
	return &Stopper{d: d, store: store, atLimit: atLimit, hooks: hooks, logger: slog.New(slog.DiscardHandler)}
}

// WithLogger has the Stopper log each stop and continue it made, once
// committed.
func (p *Stopper) WithLogger(l *slog.Logger) *Stopper {
	p.logger = l
	return p
}

// Stop ends the Ticket at its Executor's next step (Store.Stop).
func (p *Stopper) Stop(ctx context.Context, ticketID int64, actor, reason string) error {
	return p.d.InTx(ctx, func(tx *db.Tx) error {
		changed, err := p.store.Stop(ctx, tx, ticketID, actor, reason)
		if err != nil || !changed {
			return err
		}
		t, err := p.store.Ticket(ctx, tx, ticketID)
		if err != nil {
			return err
		}
		for _, h := range p.hooks {
			if err := h.Stopped(ctx, tx, t, actor, reason); err != nil {
				return err
			}
		}
		tx.AfterCommit(func() {
			p.logger.Info("ticket stopped", "ticket", ticketID, "repo", t.Repo, "by", actor, "reason", reason)
		})
		return nil
	})
}

// Continue starts a new Session of a Ticket whose work stopped
// (Store.Continue).
func (p *Stopper) Continue(ctx context.Context, ticketID int64, actor string) error {
	return p.ContinueWith(ctx, ticketID, actor, Budget{})
}

// ContinueWith is Continue with a raise of the Ticket's budget
// (Store.RaiseBudget), recorded in the same transaction; an empty raise
// is a plain Continue.
func (p *Stopper) ContinueWith(ctx context.Context, ticketID int64, actor string, raise Budget) error {
	return p.d.InTx(ctx, func(tx *db.Tx) error {
		atLimit := false
		if p.atLimit != nil {
			var err error
			if atLimit, err = p.atLimit(ctx, tx, ticketID); err != nil {
				return err
			}
		}
		if err := p.store.Continue(ctx, tx, ticketID, actor, atLimit); err != nil {
			return err
		}
		if err := p.store.RaiseBudget(ctx, tx, ticketID, raise, actor); err != nil {
			return err
		}
		t, err := p.store.Ticket(ctx, tx, ticketID)
		if err != nil {
			return err
		}
		for _, h := range p.hooks {
			if err := h.Continued(ctx, tx, t, actor); err != nil {
				return err
			}
		}
		raised := ""
		if !raise.IsZero() {
			raised = raise.String()
		}
		tx.AfterCommit(func() {
			p.logger.Info("ticket continued", "ticket", ticketID, "repo", t.Repo, "by", actor, "after_limit", atLimit, "raise", raised)
		})
		return nil
	})
}

// RetryHook is told, inside the transaction that changed it, that a person
// retried a Ticket whose last Executor job failed; a StopHook that is also
// a RetryHook hears of the Stopper's retries.
type RetryHook interface {
	Retried(ctx context.Context, tx *db.Tx, t Ticket, actor string) error
}

// Retry runs a Ticket whose latest Executor job failed again
// (Store.Retry).
func (p *Stopper) Retry(ctx context.Context, ticketID int64, actor string) error {
	return p.d.InTx(ctx, func(tx *db.Tx) error {
		if err := p.store.Retry(ctx, tx, ticketID); err != nil {
			return err
		}
		t, err := p.store.Ticket(ctx, tx, ticketID)
		if err != nil {
			return err
		}
		for _, h := range p.hooks {
			if r, ok := h.(RetryHook); ok {
				if err := r.Retried(ctx, tx, t, actor); err != nil {
					return err
				}
			}
		}
		tx.AfterCommit(func() { p.logger.Info("ticket retried", "ticket", ticketID, "repo", t.Repo, "by", actor) })
		return nil
	})
}
