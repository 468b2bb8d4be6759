package githubapp_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

// TestProcessesShareTheWriteBudget: two clients, as two processes on one
// database, draw one installation's writes from the same budget; kept in
// memory, each would have a budget of its own.
func TestProcessesShareTheWriteBudget(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		fake := fakegithub.New(t)
		fake.ServeConversations()
		clock := &fakeClock{now: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
		client := func(shared *db.DB) *githubapp.Client {
			c, err := githubapp.New(githubapp.Config{AppID: fake.AppID, PrivateKey: fake.PrivateKey(), BaseURL: fake.URL,
				Now: clock.Now, Wait: clock.Wait, WritesPerMinute: 4, WritesPerHour: -1, SharedPacing: shared})
			require.NoError(t, err)
			return c
		}
		ctx := context.Background()
		n := 0
		comment := func(ctx context.Context, c *githubapp.Client, inst int64) error {
			n++
			_, _, err := c.Installation(inst).Issues.CreateComment(ctx, "octo", "repo", 1, &github.IssueComment{Body: github.String("c" + strconv.Itoa(n))})
			return err
		}

		// In memory, each process has the whole budget.
		a, b := client(nil), client(nil)
		for range 4 {
			require.NoError(t, comment(ctx, a, 7))
			require.NoError(t, comment(ctx, b, 7))
		}
		require.Empty(t, clock.Waits(), "8 writes a minute where 4 were meant")

		// Shared, the two together keep to it: the burst of 4, then one
		// write every 15 s whichever process makes it.
		a, b = client(d), client(d)
		for range 3 {
			require.NoError(t, comment(ctx, a, 7))
			require.NoError(t, comment(ctx, b, 7))
		}
		require.Equal(t, []time.Duration{15 * time.Second, 15 * time.Second}, clock.Waits())

		// Another installation has a budget of its own.
		require.NoError(t, comment(ctx, b, 8))
		require.Len(t, clock.Waits(), 2)

		// A write given up while it waits gives its turn back.
		cut, cancel := context.WithCancel(ctx)
		clock.interrupt = cancel
		require.ErrorIs(t, comment(cut, a, 7), context.Canceled)
		require.NoError(t, comment(ctx, b, 7))
		require.Equal(t, []time.Duration{15 * time.Second, 15 * time.Second, 15 * time.Second}, clock.Waits(),
			"the next write waits one interval, not two")
		require.Len(t, fake.Comments(), 8+6+1+1)
	})
}
