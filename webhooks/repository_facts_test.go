package webhooks_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/webhooks"
)

// An event about an installed repository records its default branch and
// description, which the installation events do not carry, for the main
// Session's environment.
func TestEventRecordsRepositoryFacts(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d)
		seed.Installation(t, d, 186853, "Codertocat/Hello-World")
		body := patch(t, fixture(t, "issues/opened.payload.json"), func(m map[string]any) {
			obj(m, "repository")["id"] = 186853001
			obj(m, "repository")["description"] = "Says hello"
		})
		e.deliver(t, "issues", body)
		repos, more, err := githubapp.Repositories(context.Background(), d, "hello", 10)
		require.NoError(t, err)
		require.False(t, more)
		require.Equal(t, []githubapp.Repository{{FullName: "Codertocat/Hello-World", DefaultBranch: "master", Description: "Says hello"}}, repos)
	})
}

// A process trusts, for a minute, the facts it committed: a busy
// repository's deliveries do not write its row again, new facts are
// written at once, and past the minute (or after an installation change
// this process applied) the row is brought back to what the events say.
func TestRepositoryFactsRememberedForAWhile(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		var clock atomic.Int64
		start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
		at := func(offset time.Duration) { clock.Store(int64(offset)) }
		e := setup(t, d, func(c *webhooks.Config) {
			c.Now = func() time.Time { return start.Add(time.Duration(clock.Load())) }
		})
		seed.Installation(t, d, 186853, "Codertocat/Hello-World")
		deliver := func(description string) {
			e.deliver(t, "issues", patch(t, fixture(t, "issues/opened.payload.json"), func(m map[string]any) {
				obj(m, "repository")["id"] = 186853001
				obj(m, "repository")["description"] = description
			}))
		}
		description := func() string {
			var s string
			require.NoError(t, d.QueryRow(ctx, "SELECT description FROM github_repositories WHERE id = 186853001").Scan(&s))
			return s
		}
		elsewhere := func() {
			_, err := d.Exec(ctx, "UPDATE github_repositories SET description = 'set elsewhere' WHERE id = 186853001")
			require.NoError(t, err)
		}

		deliver("Says hello")
		require.Equal(t, "Says hello", description())
		elsewhere()
		at(30 * time.Second)
		deliver("Says hello")
		require.Equal(t, "set elsewhere", description(), "within the minute, the same facts are not written again")
		deliver("Says hello again")
		require.Equal(t, "Says hello again", description(), "new facts are written at once")

		elsewhere()
		at(30*time.Second + time.Minute)
		deliver("Says hello again")
		require.Equal(t, "Says hello again", description(), "past the minute, the facts are written again")

		elsewhere()
		e.deliver(t, "installation_repositories", fixture(t, "installation_repositories/added.payload.json"))
		deliver("Says hello again")
		require.Equal(t, "Says hello again", description(), "an installation change forgets what was recorded")
	})
}
