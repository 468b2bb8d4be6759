package dbtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

func TestEachIsolatesDatabases(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		for range 2 {
			other := d
			if d.Dialect() == db.SQLite {
				other = dbtest.SQLite(t)
			} else {
				other = dbtest.Postgres(t)
			}
			_, err := other.Exec(ctx, "INSERT INTO probes (job_id, event, worker, created_at) VALUES ($1, 'started', 'w', $2)", 1, time.Now().UTC())
			require.NoError(t, err)
		}
		var n int
		require.NoError(t, d.QueryRow(ctx, "SELECT count(*) FROM probes").Scan(&n))
		require.Zero(t, n, "rows written to other test databases leaked into this one")
	})
}

func TestTransactionsAndErrors(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Millisecond)

		err := d.InTx(ctx, func(tx *db.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO probes (job_id, event, worker, created_at) VALUES ($1, 'completed', $2, $3)", 7, "a", now)
			require.NoError(t, err)
			return context.Canceled
		})
		require.ErrorIs(t, err, context.Canceled)
		var n int
		require.NoError(t, d.QueryRow(ctx, "SELECT count(*) FROM probes").Scan(&n))
		require.Zero(t, n, "a failed InTx must roll back")

		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO probes (job_id, event, worker, created_at) VALUES ($1, 'completed', $2, $3)", 7, "a", now)
			return err
		}))
		_, err = d.Exec(ctx, "INSERT INTO probes (job_id, event, worker, created_at) VALUES ($1, 'completed', $2, $3)", 7, "b", now)
		require.True(t, db.IsUniqueViolation(err), "want a unique violation, got %v", err)

		var worker string
		var at time.Time
		require.NoError(t, d.QueryRow(ctx, "SELECT worker, created_at FROM probes WHERE job_id = $1", 7).Scan(&worker, &at))
		require.Equal(t, "a", worker)
		require.True(t, now.Equal(at), "time round trip: wrote %v, read %v", now, at)

		err = d.QueryRow(ctx, "SELECT worker FROM probes WHERE job_id = $1", 8).Scan(&worker)
		require.ErrorIs(t, err, db.ErrNoRows)
	})
}
