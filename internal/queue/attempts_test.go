package queue_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/retry"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

// chore is a job of the maintenance queue whose worker does what the
// test says.
type chore struct {
	TicketID int64 `json:"ticket_id"`
	Fail     bool  `json:"fail"`
	Backoff  bool  `json:"backoff"`
}

func (chore) Kind() string { return "test_chore" }

func (chore) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue.Maintenance, MaxAttempts: 2}
}

// turn is a job of a role's queue, which a process without its worker
// never fetches.
type turn struct{}

func (turn) Kind() string { return "test_turn" }

func (turn) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queue.Routing} }

func jobState(t *testing.T, d *db.DB, id int64) (state string, attempt int) {
	t.Helper()
	require.NoError(t, d.QueryRow(context.Background(), "SELECT state, attempt FROM river_job WHERE id = $1", id).Scan(&state, &attempt))
	return state, attempt
}

func waitState(t *testing.T, d *db.DB, id int64, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if s, _ := jobState(t, d, id); s == want {
			return
		}
		require.True(t, time.Now().Before(deadline), "job %d never became %s", id, want)
		time.Sleep(20 * time.Millisecond)
	}
}

// Every failed attempt is a WARN line naming the job and its Ticket, with
// what the job noted about itself; the last one an ERROR. The queue of a
// role this process has no worker for is not fetched: its job waits.
func TestFailuresAreLoggedAndUnworkedQueuesWait(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		var log syncBuffer
		q := queue.New(d, queue.Config{ID: "attempts", Logger: slog.New(slog.NewJSONHandler(&log, nil))})
		started := make(chan struct{}, 1)
		queue.AddWorker(q, river.WorkFunc(func(ctx context.Context, job *river.Job[chore]) error {
			queue.Note(ctx, "cards", []int64{7, 8})
			switch {
			case job.Args.Backoff:
				started <- struct{}{}
				return retry.Sleep(ctx, time.Hour)
			case job.Args.Fail:
				return errors.New("installation 42 not found")
			}
			return nil
		}))
		require.NoError(t, q.Init())
		require.True(t, q.Works(queue.Maintenance))
		require.False(t, q.Works(queue.Routing), "no worker, no fetching")

		// Another process (with a model) enqueued a turn.
		other := queue.New(d, queue.Config{InsertOnly: true})
		require.NoError(t, other.Init())
		unworked, err := other.Insert(ctx, turn{}, nil)
		require.NoError(t, err)
		waiting, err := queue.WaitingForRoles(ctx, d)
		require.NoError(t, err)
		require.Equal(t, 1, waiting, "the turn waits for a process with a model")
		failing, err := q.Insert(ctx, chore{TicketID: 31, Fail: true}, &river.InsertOpts{MaxAttempts: 1})
		require.NoError(t, err)
		require.NoError(t, q.Start(ctx))

		waitState(t, d, failing.Job.ID, "discarded")
		lines := log.String()
		require.Contains(t, lines, `"level":"ERROR","msg":"job given up: its last attempt failed"`)
		for _, want := range []string{`"job":` + itoa(failing.Job.ID), `"kind":"test_chore"`, `"ticket":31`, `"attempt":1`, `"cards":[7,8]`, `"error":"installation 42 not found"`} {
			require.Contains(t, lines, want)
		}

		retried, err := q.Insert(ctx, chore{TicketID: 32, Fail: true}, nil)
		require.NoError(t, err)
		waitState(t, d, retried.Job.ID, "discarded")
		var warned, gaveUp int
		for line := range strings.Lines(log.String()) {
			if strings.Contains(line, `"ticket":32`) && strings.Contains(line, `"level":"WARN","msg":"job attempt failed; it is tried again later"`) {
				require.Contains(t, line, `"attempt":1`)
				warned++
			}
			if strings.Contains(line, `"ticket":32`) && strings.Contains(line, `"level":"ERROR"`) {
				require.Contains(t, line, `"attempt":2`)
				gaveUp++
			}
		}
		require.Equal(t, 1, warned, "one WARN for the failed first attempt")
		require.Equal(t, 1, gaveUp, "one ERROR for the last")

		// A job waiting to try again when the process stops is put back at
		// once, its attempt not counted as failed.
		backoff, err := q.Insert(ctx, chore{TicketID: 33, Backoff: true}, nil)
		require.NoError(t, err)
		<-started
		stopCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		require.NoError(t, q.Stop(stopCtx))
		// Had the stop waited for its deadline, River would have cancelled
		// the job, and the attempt would count as failed.
		state, _ := jobState(t, d, backoff.Job.ID)
		require.Equal(t, "available", state, "the interrupted job runs again")
		require.Contains(t, log.String(), "job interrupted by the shutdown")
		for line := range strings.Lines(log.String()) {
			if strings.Contains(line, `"ticket":33`) {
				require.Contains(t, line, `"level":"INFO"`, "no failure line for it")
			}
		}

		state, _ = jobState(t, d, unworked.Job.ID)
		require.Equal(t, "available", state, "the routing job waits for a process that works it")
		require.NotContains(t, log.String(), "Unhandled job kind")
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
