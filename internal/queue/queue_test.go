package queue_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/probe"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

func TestInsertTxFollowsTheTransaction(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		q := queue.New(d, queue.Config{ID: "test"})
		queue.AddWorker(q, probe.NewWorker(d, "test", time.Now))
		require.NoError(t, q.Init())

		rolledBack := errors.New("roll back")
		err := d.InTx(ctx, func(tx *db.Tx) error {
			_, err := q.InsertTx(ctx, tx, probe.Args{}, nil)
			require.NoError(t, err)
			return rolledBack
		})
		require.ErrorIs(t, err, rolledBack)

		var committed int64
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			res, err := q.InsertTx(ctx, tx, probe.Args{}, nil)
			if err == nil {
				committed = res.Job.ID
			}
			return err
		}))

		var jobs int
		require.NoError(t, d.QueryRow(ctx, "SELECT count(*) FROM river_job").Scan(&jobs))
		require.Equal(t, 1, jobs, "the rolled-back insert left no job")

		require.NoError(t, q.Start(ctx))
		t.Cleanup(func() { _ = q.Stop(context.Background()) })
		deadline := time.Now().Add(20 * time.Second)
		for {
			var n int
			require.NoError(t, d.QueryRow(ctx, "SELECT count(*) FROM probes WHERE job_id = $1 AND event = 'completed'", committed).Scan(&n))
			if n == 1 {
				break
			}
			require.True(t, time.Now().Before(deadline), "the committed job was not worked")
			time.Sleep(20 * time.Millisecond)
		}
		stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, q.Stop(stopCtx))
	})
}

func TestInsertBeforeInit(t *testing.T) {
	t.Parallel()
	q := queue.New(dbtest.SQLite(t), queue.Config{})
	_, err := q.Insert(context.Background(), probe.Args{}, nil)
	require.ErrorIs(t, err, queue.ErrNotInitialized)
}

func TestUIHandlerServesJobs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		q := queue.New(d, queue.Config{InsertOnly: true})
		require.NoError(t, q.Init())
		_, err := q.Insert(ctx, probe.Args{}, nil)
		require.NoError(t, err)
		h, err := q.UIHandler(ctx, "/admin/jobs", slog.New(slog.DiscardHandler))
		require.NoError(t, err)

		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/admin/jobs/api/jobs?state=available&limit=10", nil))
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		require.Contains(t, rec.Body.String(), `"kind":"probe"`)

		// The page itself carries the policy admin.TestBrowserJobs checks
		// River UI works under.
		rec = httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/admin/jobs/jobs", nil)
		req.Header.Set("Accept", "text/html")
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code)
		require.Equal(t, queue.UIContentSecurityPolicy, rec.Header().Get("Content-Security-Policy"))
	})
}

// River's own INFO lines (client started, leadership, producers) are
// written at DEBUG: a service log at INFO carries none of them.
func TestRiverChatterIsBelowInfo(t *testing.T) {
	t.Parallel()
	var infoLog, debugLog syncBuffer
	for _, c := range []struct {
		level slog.Level
		out   *syncBuffer
	}{{slog.LevelInfo, &infoLog}, {slog.LevelDebug, &debugLog}} {
		d := dbtest.SQLite(t)
		logger := slog.New(slog.NewJSONHandler(c.out, &slog.HandlerOptions{Level: c.level}))
		q := queue.New(d, queue.Config{ID: "quiet", Logger: logger})
		queue.AddWorker(q, probe.NewWorker(d, "quiet", time.Now))
		require.NoError(t, q.Init())
		ctx := context.Background()
		require.NoError(t, q.Start(ctx))
		stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		require.NoError(t, q.Stop(stopCtx))
		cancel()
	}
	require.Contains(t, debugLog.String(), `"level":"DEBUG"`, "River did log: at DEBUG")
	require.NotContains(t, debugLog.String(), `"level":"INFO"`)
	require.Empty(t, infoLog.String(), "nothing from River at INFO")
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
