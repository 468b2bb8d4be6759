package modelhealth_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/modelhealth"
	"github.com/superagent-dev/superagent/internal/secret"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/internal/testkit/logbuf"
)

// TestMain fails the package when a test leaves goroutines behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// A failing model is recorded from its first failure on, scrubbed, and
// logged once; an answer ends it.
func TestWatchRecordsFailuresAndRecovery(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		var log logbuf.Buffer
		w := modelhealth.NewWatch(d, modelhealth.Main, "router-model", secret.New("sk-live-0123456789"),
			slog.New(slog.NewJSONHandler(&log, nil)), func() time.Time { return now })

		st, err := modelhealth.Read(ctx, d, modelhealth.Main)
		require.NoError(t, err)
		require.False(t, st.Failing(), "nothing seen is no failure")

		w.Observe(ctx, nil)
		first := now.Add(time.Minute)
		now = first
		w.Observe(ctx, errors.New("503 from the gateway (key sk-live-0123456789)"))
		now = now.Add(2 * time.Second)
		w.Observe(ctx, errors.New("connection refused"))

		st, err = modelhealth.Read(ctx, d, modelhealth.Main)
		require.NoError(t, err)
		require.True(t, st.Failing())
		require.Equal(t, "router-model", st.Model)
		require.True(t, st.FailingSince.Equal(first), "since the first failure: %v", st.FailingSince)
		require.True(t, st.LastFailure.Equal(now))
		require.Equal(t, "connection refused", st.Error, "the latest failure")
		require.Equal(t, 1, len(log.Lines(`"msg":"model request failed"`)), "one line while it keeps failing")
		require.Equal(t, 0, len(log.Lines("sk-live-0123456789")), "the key is scrubbed")

		now = now.Add(time.Second)
		w.Observe(ctx, nil)
		st, err = modelhealth.Read(ctx, d, modelhealth.Main)
		require.NoError(t, err)
		require.False(t, st.Failing())
		require.True(t, st.FailingSince.IsZero())
		require.Equal(t, 1, len(log.Lines(`"msg":"model answering again"`)))

		// A new failure starts a new stretch.
		now = now.Add(time.Minute)
		w.Observe(ctx, errors.New("429 too many requests"))
		st, err = modelhealth.Read(ctx, d, modelhealth.Main)
		require.NoError(t, err)
		require.True(t, st.FailingSince.Equal(now))
		require.Equal(t, 2, len(log.Lines(`"msg":"model request failed"`)))
	})
}
