package dbtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A binary sweeps the databases of binaries that are gone, and leaves alone
// those of binaries still running.
func TestSweepDropsOnlyDeadOwnersDatabases(t *testing.T) {
	t.Parallel()
	ours := postgresServer(t)
	ctx := context.Background()

	other, err := startServer(ctx, PostgresURL(t))
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range other.idle {
			_ = c.Close(context.Background())
		}
	})
	alive := databasePrefix + other.owner + "_1"
	require.NoError(t, other.exec(ctx, "CREATE DATABASE "+alive+" TEMPLATE "+other.template))
	t.Cleanup(func() { _ = ours.drop(context.Background(), alive) })

	dead := databasePrefix + randomHex(6) + "_1"
	require.NoError(t, ours.exec(ctx, "CREATE DATABASE "+dead+" TEMPLATE "+ours.template))
	t.Cleanup(func() { _ = ours.drop(context.Background(), dead) })

	// The server lets go of a closed connection's locks a moment after the
	// client has gone, so each attempt sweeps again, as the next binary would.
	sweptAway := func(name string) func() bool {
		return func() bool { ours.sweep(ctx); return !exists(t, ours, name) }
	}
	require.Eventually(t, sweptAway(dead), 30*time.Second, 50*time.Millisecond,
		"the database of an owner that holds no lock is dropped")
	require.True(t, exists(t, ours, alive), "the database of a running binary is kept")

	require.NoError(t, other.life.Close(ctx))
	require.Eventually(t, sweptAway(alive), 30*time.Second, 50*time.Millisecond,
		"once its binary is gone, its database is dropped too")
}

func exists(t *testing.T, s *server, name string) bool {
	t.Helper()
	var n int
	require.NoError(t, s.life.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n))
	return n == 1
}
