package executor

import (
	"context"
	"errors"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/jobs"
)

// The status card job queued behind a running one (the wake's second
// slot) waits for it instead of syncing beside it; a job for another
// Ticket, or with nothing older running, goes ahead.
func TestCardJobWaitsForTheOlderRunningOne(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		q := queue.New(d, queue.Config{ID: "card-test"})
		queue.AddWorker(q, river.WorkFunc(func(context.Context, *river.Job[jobs.CardArgs]) error { return nil }))
		require.NoError(t, q.Init())
		insert := func(args jobs.CardArgs) int64 {
			res, err := q.Insert(ctx, args, nil)
			require.NoError(t, err)
			return res.Job.ID
		}
		running := insert(jobs.CardArgs{TicketID: 7})
		elsewhere := insert(jobs.CardArgs{TicketID: 8})
		behind := insert(jobs.CardArgs{TicketID: 7, Slot: 1})
		_, err := d.Exec(ctx, `UPDATE river_job SET state = 'running' WHERE id IN ($1, $2)`, running, elsewhere)
		require.NoError(t, err)

		e := &Executor{deps: Deps{DB: d}}
		w := &CardWorker{e: e}
		err = w.Work(ctx, &river.Job[jobs.CardArgs]{JobRow: &rivertype.JobRow{ID: behind}, Args: jobs.CardArgs{TicketID: 7, Slot: 1}})
		var snooze *river.JobSnoozeError
		require.True(t, errors.As(err, &snooze), "the job behind a running one for the same Ticket snoozes: %v", err)

		older, err := e.olderCardSync(ctx, running, 7)
		require.NoError(t, err)
		require.False(t, older, "nothing older runs for ticket 7")
		older, err = e.olderCardSync(ctx, behind, 9)
		require.NoError(t, err)
		require.False(t, older, "a running job for another Ticket holds nothing up")

		_, err = d.Exec(ctx, `UPDATE river_job SET state = 'completed', finalized_at = CURRENT_TIMESTAMP WHERE id = $1`, running)
		require.NoError(t, err)
		older, err = e.olderCardSync(ctx, behind, 7)
		require.NoError(t, err)
		require.False(t, older, "once the older one ended, the job goes ahead")
	})
}
