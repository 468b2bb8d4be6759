package tickets

import (
	"context"

	"github.com/superagent-dev/superagent/internal/db"
)

// Pauser pauses and resumes Tickets in their own transactions on a
// person's word: the admin panel, the API, a chat or comment command. It
// satisfies admin.Pauser.
type Pauser struct {
	d     *db.DB
	store *Store
}

// NewPauser returns a Pauser over d.
func NewPauser(d *db.DB, store *Store) *Pauser { return &Pauser{d: d, store: store} }

// Pause holds a Ticket until a person resumes it.
func (p *Pauser) Pause(ctx context.Context, ticketID int64, actor, reason string) error {
	return p.d.InTx(ctx, func(tx *db.Tx) error { return p.store.Pause(ctx, tx, ticketID, actor, reason) })
}

// Resume lifts the pause. Call it only for a person.
func (p *Pauser) Resume(ctx context.Context, ticketID int64, actor string) error {
	return p.d.InTx(ctx, func(tx *db.Tx) error { return p.store.Resume(ctx, tx, ticketID, actor) })
}
