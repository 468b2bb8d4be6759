package executor

import (
	"context"

	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// write makes one outgoing write at most once through the outbox (see
// outbox.Box.Write), unless a person paused the Ticket: a call the model
// asked for just before the pause still runs (the stop comes at the
// step's end), but it may not write.
func (e *Executor) write(ctx context.Context, o tickets.Outgoing, send func(context.Context) (string, error),
	find func(context.Context) (string, bool, error)) (string, error) {
	if t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, o.TicketID); err != nil {
		return "", err
	} else if t.Pause != nil {
		return "", session.Refuse("ticket %d is paused by %s: nothing is written until a person resumes it", t.ID, t.Pause.By)
	}
	box := &outbox.Box{DB: e.deps.DB, Tickets: e.deps.Tickets, Logger: e.cfg.Logger}
	return box.Write(ctx, o, send, find)
}
