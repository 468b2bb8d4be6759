package webhooks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
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
