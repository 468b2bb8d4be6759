package githubapp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

// TestPermissionRememberedWhileFresh: a level is asked of GitHub once,
// then read from the table, then from memory with no statement at all,
// and nothing is believed past its TTL from GitHub's answer: not the
// table's row, and not the memory of it, in this process or another.
func TestPermissionRememberedWhileFresh(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		fake := fakegithub.New(t)
		fake.SetPermission("octo/repo", "alice", "write")
		var waits []time.Duration
		c := newClient(t, fake, &waits)
		now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		const path = "/repos/octo/repo/collaborators/alice/permission"
		fresh := func() *githubapp.PermissionCache {
			return &githubapp.PermissionCache{DB: d, Client: c, TTL: time.Minute, Now: clock}
		}

		first := fresh()
		level, err := first.Level(ctx, 42, "octo", "repo", "alice")
		require.NoError(t, err)
		require.Equal(t, "write", level)
		require.Equal(t, 1, fake.Count(http.MethodGet, path))

		// Another process reads the table once, then remembers it.
		other := fresh()
		before := d.Statements()
		level, ok, err := other.Cached(ctx, d, 42, "Octo", "Repo", "Alice")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "write", level)
		require.Equal(t, int64(1), d.Statements()-before)
		before = d.Statements()
		for _, p := range []*githubapp.PermissionCache{first, other} {
			level, err = p.Level(ctx, 42, "octo", "repo", "alice")
			require.NoError(t, err)
			require.Equal(t, "write", level)
		}
		require.Zero(t, d.Statements()-before, "both remember it")
		require.Equal(t, 1, fake.Count(http.MethodGet, path))

		// A minute after GitHub's answer neither memory nor table is
		// believed: GitHub is asked again, and says something new.
		fake.SetPermission("octo/repo", "alice", "read")
		now = now.Add(time.Minute)
		_, ok, err = other.Cached(ctx, d, 42, "octo", "repo", "alice")
		require.NoError(t, err)
		require.False(t, ok)
		level, err = other.Level(ctx, 42, "octo", "repo", "alice")
		require.NoError(t, err)
		require.Equal(t, "read", level)
		require.Equal(t, 2, fake.Count(http.MethodGet, path))
	})
}
