package db_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
)

// Writes land in the WAL; the background checkpointer, not the writer,
// copies them into the database file.
func TestSQLiteCheckpointsInTheBackground(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cp.db")
	d, err := db.Open(ctx, "sqlite://"+path, db.Options{})
	require.NoError(t, err)
	defer d.Close()

	var auto int
	require.NoError(t, d.QueryRow(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto))
	require.Zero(t, auto, "the service's connection never checkpoints on commit")

	_, err = d.Exec(ctx, "CREATE TABLE blobs (b TEXT)")
	require.NoError(t, err)
	before := fileSize(t, path)
	for range 200 {
		_, err := d.Exec(ctx, "INSERT INTO blobs (b) VALUES ($1)", strings.Repeat("x", 4000))
		require.NoError(t, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for fileSize(t, path) < before+200*4000 {
		require.True(t, time.Now().Before(deadline), "the WAL was not checkpointed into the database file")
		time.Sleep(20 * time.Millisecond)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return info.Size()
}

func TestClosingTwiceIsHarmless(t *testing.T) {
	d, err := db.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "twice.db"), db.Options{})
	require.NoError(t, err)
	require.NoError(t, d.Close())
	require.NotPanics(t, func() { _ = d.Close() })
}
