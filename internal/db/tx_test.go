package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

func TestAfterCommitRunsOnlyOnCommit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		var ran []string
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			tx.AfterCommit(func() { ran = append(ran, "committed") })
			require.Empty(t, ran, "not before the commit")
			return nil
		}))
		rolledBack := errors.New("roll back")
		require.ErrorIs(t, d.InTx(ctx, func(tx *db.Tx) error {
			tx.AfterCommit(func() { ran = append(ran, "rolled back") })
			return rolledBack
		}), rolledBack)
		require.Equal(t, []string{"committed"}, ran)
	})
}

// TestRememberedForTheTransactionOnly: what a transaction remembers is
// recalled in it, forgotten on demand and gone with it; Once runs its
// function once unless that failed.
func TestRememberedForTheTransactionOnly(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		type key struct{ name string }
		runs := 0
		run := func() error { runs++; return nil }
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			_, ok := tx.Recall(key{"thread"})
			require.False(t, ok)
			tx.Remember(key{"thread"}, 7)
			v, ok := tx.Recall(key{"thread"})
			require.True(t, ok)
			require.Equal(t, 7, v)
			tx.Forget(key{"thread"})
			_, ok = tx.Recall(key{"thread"})
			require.False(t, ok)

			failed := errors.New("no")
			require.ErrorIs(t, tx.Once(key{"turn"}, func() error { return failed }), failed)
			require.NoError(t, tx.Once(key{"turn"}, run))
			require.NoError(t, tx.Once(key{"turn"}, run))
			require.Equal(t, 1, runs)
			return nil
		}))
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			require.NoError(t, tx.Once(key{"turn"}, run))
			return nil
		}))
		require.Equal(t, 2, runs, "a new transaction starts with nothing remembered")
	})
}

// TestStatementsAreCounted: each query or command sent counts once,
// whichever way it is sent; BEGIN and COMMIT do not.
func TestStatementsAreCounted(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		before := d.Statements()
		_, err := d.Exec(ctx, "CREATE TABLE counted (n INTEGER)")
		require.NoError(t, err)
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO counted (n) VALUES (1)"); err != nil {
				return err
			}
			var n int
			return tx.QueryRow(ctx, "SELECT COUNT(*) FROM counted").Scan(&n)
		}))
		rows, err := d.Query(ctx, "SELECT n FROM counted")
		require.NoError(t, err)
		rows.Close()
		_, err = d.SQL.ExecContext(ctx, "DELETE FROM counted")
		require.NoError(t, err)
		require.Equal(t, int64(5), d.Statements()-before)
	})
}

// TestPoolSizeFromTheURL: pgx's pool_max_conns in the database URL caps a
// process's connections; without it the default is 10, and a caller's
// MaxConns wins over both.
func TestPoolSizeFromTheURL(t *testing.T) {
	t.Parallel()
	base := dbtest.PostgresURL(t)
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	ctx := context.Background()
	for _, c := range []struct {
		url  string
		opts db.Options
		want int32
	}{
		{url: base, want: 10},
		{url: base + sep + "pool_max_conns=3", want: 3},
		{url: base + sep + "pool_max_conns=3", opts: db.Options{MaxConns: 5}, want: 5},
	} {
		d, err := db.Open(ctx, c.url, c.opts)
		require.NoError(t, err)
		require.Equal(t, c.want, d.Pool().Config().MaxConns, c.url)
		require.NoError(t, d.Close())
	}
}
