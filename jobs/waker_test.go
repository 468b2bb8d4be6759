package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/jobs"
	"github.com/superagent-dev/superagent/tickets"
)

// TestMain fails the package when a test leaves goroutines behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newQueue is a queue that is never started: the tests read the rows the
// wakes insert.
func newQueue(t *testing.T, d *db.DB) *queue.Queue {
	t.Helper()
	q := queue.New(d, queue.Config{ID: "jobs-test"})
	queue.AddWorker(q, river.WorkFunc(func(context.Context, *river.Job[jobs.RouteArgs]) error { return nil }))
	queue.AddWorker(q, river.WorkFunc(func(context.Context, *river.Job[jobs.ExecuteArgs]) error { return nil }))
	require.NoError(t, q.Init())
	return q
}

// states returns the states of kind's jobs in insert order: slot 0's job
// comes first, as the wakes try slot 1 only after slot 0.
func states(t *testing.T, d *db.DB, kind string) []string {
	t.Helper()
	rs, err := d.Query(context.Background(), `SELECT state FROM river_job WHERE kind = $1 ORDER BY id`, kind)
	require.NoError(t, err)
	defer rs.Close()
	var out []string
	for rs.Next() {
		var state string
		require.NoError(t, rs.Scan(&state))
		out = append(out, state)
	}
	require.NoError(t, rs.Err())
	return out
}

func TestWakeExecutorKeepsOneWaitingPerSlot(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		w := &jobs.Waker{Queue: newQueue(t, d)}
		wake := func() { require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error { return w.WakeExecutor(ctx, tx, 7) })) }

		wake()
		wake()
		require.Equal(t, []string{"available"}, states(t, d, "execute_ticket"), "a waiting job absorbs the second wake")

		// The job starts: it may have taken its last look already, so a
		// wake queues one behind it, and only one.
		_, err := d.Exec(ctx, `UPDATE river_job SET state = 'running' WHERE kind = 'execute_ticket'`)
		require.NoError(t, err)
		wake()
		wake()
		require.Equal(t, []string{"running", "available"}, states(t, d, "execute_ticket"))

		// Another Ticket has its own slots.
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error { return w.WakeExecutor(ctx, tx, 8) }))
		var n int
		require.NoError(t, d.QueryRow(ctx, `SELECT COUNT(*) FROM river_job WHERE kind = 'execute_ticket'`).Scan(&n))
		require.Equal(t, 3, n)
	})
}

// A turn is available at once: the turn itself waits out the debounce,
// so River's promotion of scheduled jobs (every few seconds) never stands
// between a due turn and its start.
func TestReportsWakeTheMainSessionAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		store := tickets.New(tickets.Config{Now: func() time.Time { return now }})
		w := &jobs.Waker{Queue: newQueue(t, d), Tickets: store, Now: func() time.Time { return now }}

		tk, err := store.CreateTicket(ctx, d, tickets.Ticket{Title: "Fix the typo", State: tickets.TicketWorking})
		require.NoError(t, err)
		var r tickets.Report
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			r, err = w.Report(ctx, tx, tickets.Report{TicketID: tk.ID, State: tickets.ReportDone, Summary: "The typo is fixed and the tests pass."})
			return err
		}))
		require.NotZero(t, r.ID)
		require.Equal(t, []string{"available"}, states(t, d, "route_turn"))

		// A rolled-back Report leaves neither the Report nor a turn.
		err = d.InTx(ctx, func(tx *db.Tx) error {
			if _, err := w.Report(ctx, tx, tickets.Report{TicketID: tk.ID, State: tickets.ReportBlocked, Summary: "blocked"}); err != nil {
				return err
			}
			return context.Canceled
		})
		require.ErrorIs(t, err, context.Canceled)
		reports, err := store.Reports(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Len(t, reports, 1)
		require.Len(t, states(t, d, "route_turn"), 1)
	})
}

func TestWakesWithoutAQueueDoNothing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		var w *jobs.Waker
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			if err := w.ScheduleTurn(ctx, tx); err != nil {
				return err
			}
			return (&jobs.Waker{}).WakeExecutor(ctx, tx, 1)
		}))
		var n int
		require.NoError(t, d.QueryRow(ctx, `SELECT COUNT(*) FROM river_job`).Scan(&n))
		require.Zero(t, n)
	})
}

// TestScheduleTurnOncePerTransaction: the cards of one batch schedule one
// turn, asking River once.
func TestScheduleTurnOncePerTransaction(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		w := &jobs.Waker{Queue: newQueue(t, d)}
		var first, again int64
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			before := d.Statements()
			require.NoError(t, w.ScheduleTurn(ctx, tx))
			first = d.Statements() - before
			require.NoError(t, w.ScheduleTurn(ctx, tx))
			require.NoError(t, w.ScheduleTurn(ctx, tx))
			again = d.Statements() - before - first
			return nil
		}))
		require.Positive(t, first)
		require.Zero(t, again)
		require.Equal(t, []string{"available"}, states(t, d, "route_turn"))

		// Another transaction sees the waiting turn with one read.
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			before := d.Statements()
			require.NoError(t, w.ScheduleTurn(ctx, tx))
			require.Equal(t, int64(1), d.Statements()-before)
			return nil
		}))
		require.Equal(t, []string{"available"}, states(t, d, "route_turn"))

		// A turn that started holds the lease while it waits for a burst
		// to end: until its turn_due what arrives is its to read.
		_, err := d.Exec(ctx, `UPDATE river_job SET state = 'running' WHERE kind = 'route_turn'`)
		require.NoError(t, err)
		until := time.Now().UTC().Add(time.Minute)
		seed.RoutingLease(t, d, "job:1", until, until)
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error { return w.ScheduleTurn(ctx, tx) }))
		require.Equal(t, []string{"running"}, states(t, d, "route_turn"))

		// Once it has read, what arrives needs the job queued behind it.
		_, err = d.Exec(ctx, `UPDATE routing_state SET turn_due = NULL`)
		require.NoError(t, err)
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error { return w.ScheduleTurn(ctx, tx) }))
		require.Equal(t, []string{"running", "available"}, states(t, d, "route_turn"))

		// A transaction that failed to schedule tries again.
		err = d.InTx(ctx, func(tx *db.Tx) error {
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			require.Error(t, w.ScheduleTurn(cancelled, tx))
			before := d.Statements()
			require.NoError(t, w.ScheduleTurn(ctx, tx))
			require.Positive(t, d.Statements()-before)
			return nil
		})
		require.NoError(t, err)
	})
}
