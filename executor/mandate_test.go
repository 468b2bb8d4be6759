package executor_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/tickets"
)

// A Thread in a repository the Mandate does not name is refused even when
// the Ticket follows it, and only the Ticket's own cards can be read whole.
func TestMandateBoundsRepliesAndCardReads(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		var otherCard string
		e := setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
			switch len(steps(req)) {
			case 0:
				return call("reply", `{"thread":"github:other/repo#4","purpose":"answer","text":"This is about the typo."}`)
			case 1:
				return call("github_read", `{"what":"card","id":`+otherCard+`}`)
			case 2:
				return call("github_read", `{"what":"card","id":`+firstCard(req)+`}`)
			}
			return fakeopenai.Text("stopping")
		})
		ctx := context.Background()
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		// The Ticket follows an issue of another repository (attached by
		// mistake), and another Ticket's card exists.
		foreign := e.admitCard(t, tickets.NewCard{Source: tickets.SourceGitHub, Kind: "comment",
			Thread: tickets.Thread{Source: tickets.SourceGitHub, Key: "github:other/repo#4", Repo: "other/repo", Number: 4},
			Author: tickets.Author{ID: "erin", Login: "erin", Type: tickets.AuthorUser}, Text: "SOMEONE ELSE'S REQUEST"})
		require.NoError(t, e.store.Subscribe(ctx, d, tk.ID, foreign.Thread.ID))
		stranger := e.admit(t, 9, "erin", "A PRIVATE NOTE FOR ANOTHER TICKET")
		otherCard = strconv.FormatInt(stranger.ID, 10)
		e.run(t, tk.ID)

		ss := steps(e.model.Last())
		require.Len(t, ss, 3)
		require.Contains(t, ss[0].result, "refused: the Mandate does not name other/repo")
		require.Contains(t, ss[1].result, "is not one this Ticket received")
		require.Contains(t, ss[2].result, "please fix the typo")
		require.NotContains(t, e.model.Last().Text(), "A PRIVATE NOTE FOR ANOTHER TICKET")
		require.Zero(t, e.gh.Count("POST", "/repos/other/repo/issues/4/comments"))
	})
}

// The workspaces of Tickets that ended while no Executor ran on this
// machine are removed by the sweep.
func TestSweepRemovesWorkspacesOfEndedTickets(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(fakeopenai.Request) fakeopenai.Reply { return fakeopenai.Text("nothing to do") })
		ctx := context.Background()
		live, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, live.ID)
		root := filepath.Join(e.dataDir, "workspaces")
		dir := func(id int64) string { return filepath.Join(root, "ticket-"+strconv.FormatInt(id, 10)) }
		_, err := os.Stat(dir(live.ID))
		require.NoError(t, err, "the running Ticket has its clone")

		require.NoError(t, e.store.Cancel(ctx, d, live.ID))
		require.NoError(t, os.MkdirAll(filepath.Join(dir(live.ID+1000), ".git"), 0o755), "a workspace of a Ticket that no longer exists")
		n, err := e.x.SweepWorkspaces(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		entries, err := os.ReadDir(root)
		require.NoError(t, err)
		for _, en := range entries {
			require.False(t, strings.HasPrefix(en.Name(), "ticket-"), "left behind: %s", en.Name())
		}
	})
}
