package executor

import (
	"context"

	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// write makes one outgoing write at most once through the outbox (see
// outbox.Box.Write), unless a person paused or stopped the Ticket: a call
// the model asked for just before the pause or the stop still runs (the
// Session ends at the step's end), but it may not write.
func (e *Executor) write(ctx context.Context, o tickets.Outgoing, send func(context.Context) (string, error),
	find func(context.Context) (string, bool, error)) (string, error) {
	if t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, o.TicketID); err != nil {
		return "", err
	} else if err := held(t); err != nil {
		return "", err
	}
	box := &outbox.Box{DB: e.deps.DB, Tickets: e.deps.Tickets, Logger: e.cfg.Logger}
	return box.Write(ctx, o, send, find)
}

// held refuses the Executor's writes and moves on a Ticket a person holds:
// paused until resumed, or stopped.
func held(t tickets.Ticket) error {
	switch {
	case t.Pause != nil:
		return session.Refuse("ticket %d is paused by %s: nothing is written until a person resumes it", t.ID, t.Pause.By)
	case t.Stop != nil:
		return session.Refuse("ticket %d was stopped by %s: nothing more is written; end your turn", t.ID, t.Stop.By)
	}
	return nil
}
