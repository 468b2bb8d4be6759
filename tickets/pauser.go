package tickets

import (
	"context"
	"log/slog"

	"github.com/superagent-dev/superagent/internal/db"
)

// PauseHook is told, inside the transaction that changed it, that a person
// paused or resumed a Ticket: the orchestrator confirms it in the Ticket's
// conversation and, on resume, wakes the Executor.
type PauseHook interface {
	Paused(ctx context.Context, tx *db.Tx, t Ticket, actor, reason string) error
	Resumed(ctx context.Context, tx *db.Tx, t Ticket, actor string) error
}

// Pauser pauses and resumes Tickets in their own transactions on a
// person's word: the admin panel, the API, a chat or comment command. It
// satisfies admin.Pauser.
type Pauser struct {
	d      *db.DB
	store  *Store
	hooks  []PauseHook
	logger *slog.Logger
}

// NewPauser returns a Pauser over d; the hooks hear of every pause and
// resume that changed a Ticket.
func NewPauser(d *db.DB, store *Store, hooks ...PauseHook) *Pauser {
	return &Pauser{d: d, store: store, hooks: hooks, logger: slog.New(slog.DiscardHandler)}
}

// WithLogger has the Pauser log each pause and resume it made, once
// committed.
func (p *Pauser) WithLogger(l *slog.Logger) *Pauser {
	p.logger = l
	return p
}

// Pause holds a Ticket until a person resumes it.
func (p *Pauser) Pause(ctx context.Context, ticketID int64, actor, reason string) error {
	return p.d.InTx(ctx, func(tx *db.Tx) error {
		before, err := p.store.Ticket(ctx, tx, ticketID)
		if err != nil {
			return err
		}
		if err := p.store.Pause(ctx, tx, ticketID, actor, reason); err != nil || before.Pause != nil {
			return err
		}
		after, err := p.store.Ticket(ctx, tx, ticketID)
		if err != nil {
			return err
		}
		for _, h := range p.hooks {
			if err := h.Paused(ctx, tx, after, actor, reason); err != nil {
				return err
			}
		}
		tx.AfterCommit(func() {
			p.logger.Info("ticket paused", "ticket", ticketID, "repo", after.Repo, "by", actor, "reason", reason)
		})
		return nil
	})
}

// Resume lifts the pause. Call it only for a person.
func (p *Pauser) Resume(ctx context.Context, ticketID int64, actor string) error {
	return p.d.InTx(ctx, func(tx *db.Tx) error {
		before, err := p.store.Ticket(ctx, tx, ticketID)
		if err != nil {
			return err
		}
		if err := p.store.Resume(ctx, tx, ticketID, actor); err != nil || before.Pause == nil {
			return err
		}
		after, err := p.store.Ticket(ctx, tx, ticketID)
		if err != nil {
			return err
		}
		for _, h := range p.hooks {
			if err := h.Resumed(ctx, tx, after, actor); err != nil {
				return err
			}
		}
		tx.AfterCommit(func() { p.logger.Info("ticket resumed", "ticket", ticketID, "repo", after.Repo, "by", actor) })
		return nil
	})
}
