package executor_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// When a Ticket's next job finds no workspace (it ran elsewhere, or the
// clone was removed) and a person has pushed to its branch since the
// checkpoint, the pushed branch wins: the clone holds only what was
// pushed, and the Session hears so before its next step.
func TestARecloneIsToldToTheSession(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
			ss := steps(req)
			switch {
			case !done(ss, "edit_file"):
				return call("edit_file", `{"path":"README.md","old_text":"projetc","new_text":"project"}`)
			case !done(ss, "git_commit"):
				return call("git_commit", `{"message":"Fix a typo in the README"}`)
			case strings.Contains(req.Text(), "cloned again") && !done(ss, "git_status"):
				return call("git_status", `{}`)
			}
			return fakeopenai.Text("waiting")
		})
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)
		require.NoError(t, os.RemoveAll(filepath.Join(e.dataDir, "workspaces", "ticket-"+strconv.FormatInt(tk.ID, 10))))
		e.gh.PushAs(t, repo, "superagent/ticket-"+strconv.FormatInt(tk.ID, 10), map[string]string{"CHANGELOG.md": "a person's note\n"}, "A person's commit")

		e.admit(t, 1, "alice", "any news?")
		e.run(t, tk.ID)
		var told bool
		for _, r := range e.model.Requests() {
			for _, m := range r.Messages {
				told = told || (m.Role == "user" && strings.Contains(m.Content, "your workspace was cloned again from octo/hello"))
			}
		}
		require.True(t, told, "the Session was told its local commit is gone")
		ss := steps(e.model.Last())
		require.Equal(t, "git_status", ss[len(ss)-1].name)
		require.NotContains(t, ss[len(ss)-1].result, "ahead", "the unpushed commit did not come back")
		require.Contains(t, e.logs.String(), `msg="work checkpoint set aside for the pushed branch"`)
	})
}
