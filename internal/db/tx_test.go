package db_test

import (
	"context"
	"errors"
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
