package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/jobs"
	"github.com/superagent-dev/superagent/tickets"
)

// A stop's held acknowledgement is released by the watchdog only when no
// Executor job of the Ticket is left to release it after its last write.
func TestOrphanedStopAcknowledgementIsReleased(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil)
		ctx := context.Background()
		tk, err := e.store.CreateTicket(ctx, d, tickets.Ticket{Title: "Stopped"})
		require.NoError(t, err)
		_, err = e.store.RecordIntent(ctx, d, tickets.Outgoing{Key: "stop:ticket:1", TicketID: tk.ID, Source: tickets.SourceGitHub,
			Kind: "comment", Target: "octo/hello#issue:1", Body: "Stopped ticket 1.", Held: true})
		require.NoError(t, err)
		// The Executor's job, waiting in the queue (not worked here).
		q := queue.New(d, queue.Config{ID: "held"})
		queue.AddWorker(q, river.WorkFunc(func(context.Context, *river.Job[jobs.ExecuteArgs]) error { return nil }))
		require.NoError(t, q.Init())
		w := &jobs.Waker{Queue: q, Tickets: e.store}
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error { return w.WakeExecutor(ctx, tx, tk.ID) }))

		n, err := e.x.ReleaseOrphanedHolds(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "a waiting Executor job releases it after its last write")
		held, err := e.store.TicketsWithHeldOutgoing(ctx, d)
		require.NoError(t, err)
		require.Equal(t, []int64{tk.ID}, held)

		// The job was discarded: nothing else will release it.
		_, err = d.Exec(ctx, `UPDATE river_job SET state = 'discarded', finalized_at = $1 WHERE kind = 'execute_ticket'`, time.Now().UTC())
		require.NoError(t, err)
		n, err = e.x.ReleaseOrphanedHolds(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		held, err = e.store.TicketsWithHeldOutgoing(ctx, d)
		require.NoError(t, err)
		require.Empty(t, held)
	})
}
