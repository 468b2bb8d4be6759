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
