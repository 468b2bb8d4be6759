package seed_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
)

func TestInstallationCoversItsRepositories(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		seed.Installation(t, d, 7, "octo/repo", "octo/other")
		seed.Installation(t, d, 8, "acme/web")
		for repo, want := range map[string]int64{"octo/repo": 7, "octo/other": 7, "acme/web": 8, "acme/api": 0} {
			got, err := githubapp.InstallationFor(ctx, d, repo)
			require.NoError(t, err)
			require.Equal(t, want, got, repo)
		}
	})
}

func TestDeliveriesAreDistinctRows(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		a := seed.Delivery(t, d, "a")
		b := seed.Delivery(t, d, "b")
		f := seed.FeishuDelivery(t, d, "a", []byte(`{"event": {}}`))
		require.NotEqual(t, a, b)
		require.NotEqual(t, a, f, "dedupe keys are per source")
	})
}
