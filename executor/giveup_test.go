package executor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/jobs"
	"github.com/superagent-dev/superagent/tickets"
)

// An Executor that keeps failing (here: the App lost access to the
// repository) is retried, then reports the Ticket blocked once and stops.
func TestRepeatedFailureReportsBlocked(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(fakeopenai.Request) fakeopenai.Reply { return fakeopenai.Text("unreachable") })
		ctx := context.Background()
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		_, err := d.Exec(ctx, `UPDATE github_repositories SET active = FALSE`)
		require.NoError(t, err)

		job := func(attempt int) *river.Job[jobs.ExecuteArgs] {
			return &river.Job[jobs.ExecuteArgs]{JobRow: &rivertype.JobRow{ID: 42, Attempt: attempt},
				Args: jobs.ExecuteArgs{TicketID: tk.ID}}
		}
		w := e.x.Worker()
		err = w.Work(ctx, job(1))
		require.ErrorContains(t, err, "is the App installed there?")
		var cancel *river.JobCancelError
		require.False(t, errors.As(err, &cancel), "an early failure is retried")
		reports, err := e.store.Reports(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Empty(t, reports)

		err = w.Work(ctx, job(5))
		require.True(t, errors.As(err, &cancel), "the last attempt stops the job: %v", err)
		reports, err = e.store.Reports(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Len(t, reports, 1)
		require.Equal(t, tickets.ReportBlocked, reports[0].State)
		require.Contains(t, reports[0].Summary, "failed 5 times")
		require.Contains(t, reports[0].Summary, "is the App installed there?")
		got, err := e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketWaiting, got.State)
		require.Empty(t, e.model.Requests(), "no model request without a workspace")
	})
}
