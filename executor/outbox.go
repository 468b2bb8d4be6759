package executor

import (
	"context"
	"fmt"

	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// write makes one outgoing write at most once. The intent (o.Key names
// it) is recorded before the call and claimed just before it; what the
// write produced is kept with it. A retried call whose earlier attempt
// finished answers the same without writing; one whose earlier attempt
// died mid-call first asks find whether the write landed (nil find: the
// other side deduplicates, so it is sent again).
func (e *Executor) write(ctx context.Context, o tickets.Outgoing, send func(context.Context) (string, error),
	find func(context.Context) (string, bool, error)) (string, error) {
	st, d := e.deps.Tickets, e.deps.DB
	// A call the model asked for just before a person paused the Ticket
	// still runs (the stop comes at the step's end); it may not write.
	if t, err := st.Ticket(ctx, d, o.TicketID); err != nil {
		return "", err
	} else if t.Pause != nil {
		return "", session.Refuse("ticket %d is paused by %s: nothing is written until a person resumes it", t.ID, t.Pause.By)
	}
	rec, err := st.RecordIntent(ctx, d, o)
	if err != nil {
		return "", err
	}
	var won bool
	switch rec.State {
	case tickets.OutgoingSent:
		return rec.Result, nil
	case tickets.OutgoingSending:
		if find != nil {
			ref, ok, err := find(ctx)
			if err != nil {
				return "", fmt.Errorf("checking whether %s was sent: %w", o.Kind, err)
			}
			if ok {
				return ref, st.SentIntent(ctx, d, rec.ID, ref)
			}
		}
		won, err = st.Reclaim(ctx, d, rec.ID, tickets.OutgoingSending)
	case tickets.OutgoingFailed:
		won, err = st.Reclaim(ctx, d, rec.ID, tickets.OutgoingFailed)
	default:
		won, err = st.ClaimIntent(ctx, d, rec.ID)
	}
	if err != nil {
		return "", err
	}
	if !won {
		return "", fmt.Errorf("another attempt is sending this %s", o.Kind)
	}
	ref, sendErr := send(ctx)
	if sendErr != nil && ctx.Err() != nil {
		// Cut off mid-call: whether it landed is unknown. It stays
		// sending, and the retry asks find.
		return "", sendErr
	}
	if sendErr != nil {
		if err := st.FinishIntent(context.WithoutCancel(ctx), d, rec.ID, sendErr); err != nil {
			e.cfg.Logger.Error("recording a failed write", "key", o.Key, "error", err)
		}
		return "", sendErr
	}
	return ref, st.SentIntent(context.WithoutCancel(ctx), d, rec.ID, ref)
}

// marker is hidden in every GitHub body the Executor writes, so a retry
// can find a write whose answer it never saw.
func marker(key string) string { return "<!-- superagent:" + key + " -->" }
