package executor_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// A Ticket without a repository is given one by repository_set, once:
// the gate refuses octo/other for its requester (the model reads why,
// nothing is set), lets octo/hello through, and the workspace is then a
// clone the next tools work in; naming another repository afterwards is
// refused.
func TestRepositorySetAppliesTheGateOnceThenPreparesTheWorkspace(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		var (
			mu        sync.Mutex
			asked     []string
			repoAfter []string // the Ticket's repository as each model request found it
			tk        tickets.Ticket
			e         *env
		)
		e = setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
			got, err := e.store.Ticket(context.Background(), e.d, tk.ID)
			if err == nil {
				mu.Lock()
				repoAfter = append(repoAfter, got.Repo)
				mu.Unlock()
			}
			card := firstCard(req)
			switch len(steps(req)) {
			case 0:
				return call("repository_set", `{"repo":"octo/other","message":`+card+`}`)
			case 1:
				return call("repository_set", `{"repo":"OCTO/Hello","message":`+card+`}`)
			case 2:
				return call("read_file", `{"path":"README.md"}`)
			case 3:
				return call("repository_set", `{"repo":"octo/other","message":`+card+`}`)
			}
			return fakeopenai.Text("stopping here")
		})
		seed.Installation(t, d, installation+1, "octo/other")
		e.mayWorkIn = func(_ context.Context, t tickets.Ticket, repo string) error {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, repo)
			if repo != "octo/hello" {
				return session.Refuse("alice's permission on %s is read; write or higher is needed to open work there", repo)
			}
			return nil
		}
		e.x = e.executor(t)

		c := e.admit(t, 1, "alice", "@superagent please fix the typo in the README")
		tk = e.ticketIn(t, c, "Fix the README typo", "")
		e.run(t, tk.ID)

		reqs := e.model.Requests()
		require.GreaterOrEqual(t, len(reqs), 5)
		first := reqs[0].System()
		require.Contains(t, first, "none yet", "a Ticket without a repository is told so")
		require.Contains(t, first, "- Installed repositories: octo/hello\n  octo/other\n", "and shown the installed repositories")
		ss := steps(reqs[len(reqs)-1])
		require.Len(t, ss, 4)
		require.Equal(t, "refused: alice's permission on octo/other is read; write or higher is needed to open work there", ss[0].result)
		require.Contains(t, ss[1].result, "the Ticket now works in octo/hello")
		require.Contains(t, ss[1].result, "branch superagent/ticket-")
		require.Contains(t, ss[2].result, "This projetc says hello.", "the workspace is a clone of it")
		require.Equal(t, "refused: this Ticket already works in octo/hello; a Ticket's repository is set once and never changed", ss[3].result)
		require.Equal(t, []string{"octo/other", "octo/hello"}, asked, "the gate is asked each time a repository would be set")
		require.Equal(t, []string{"", "", "octo/hello", "octo/hello", "octo/hello"}, repoAfter[:5], "the refusal set nothing")
		require.NotContains(t, reqs[len(reqs)-1].System(), "none yet")

		got, err := e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, "octo/hello", got.Repo, "named as the installation spells it")
		require.Equal(t, []string{"octo/hello"}, got.Mandate.Repos)
		require.Equal(t, fmt.Sprintf("superagent/ticket-%d", tk.ID), got.Branch)
		logs := e.logs.String()
		require.Contains(t, logs, `msg="ticket repository refused"`)
		require.Contains(t, logs, `msg="ticket repository set"`)
	})
}
