package executor_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/tickets"
)

// bareGit runs git on the fake's bare repository.
func bareGit(t *testing.T, bare string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("git", append([]string{"--git-dir", bare}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// A Ticket's next job on another machine finds its work as it was: the
// commit that was never pushed (same sha), a tracked file changed and not
// committed, and an untracked file. The checkpoint's ref is deleted when
// the Ticket ends, and the sweep deletes one a crash left behind.
func TestWorkMovesToAnotherMachineThroughItsCheckpoint(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
			ss := steps(req)
			switch {
			case !done(ss, "edit_file"):
				return call("edit_file", `{"path":"README.md","old_text":"projetc","new_text":"project"}`)
			case !done(ss, "git_commit"):
				return call("git_commit", `{"message":"Fix a typo in the README"}`)
			case !done(ss, "write_file"):
				return call("write_file", `{"path":"notes/plan.md","content":"next: docs\n"}`)
			case countDone(ss, "edit_file") < 2:
				return call("edit_file", `{"path":"AGENTS.md","old_text":"before committing","new_text":"before every commit"}`)
			case strings.Contains(req.Text(), "any news?") && !done(ss, "git_status"):
				return call("git_status", `{}`)
			}
			return fakeopenai.Text("waiting")
		})
		ctx := context.Background()
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)
		ref := workspace.WIPRef(tk.ID)
		branch := "superagent/ticket-" + strconv.FormatInt(tk.ID, 10)
		_, pushed := e.gh.Branch(t, repo, branch)
		require.False(t, pushed, "nothing was pushed to the branch")
		first := filepath.Join(e.dataDir, "workspaces", "ticket-"+strconv.FormatInt(tk.ID, 10))
		commit, err := exec.Command("git", "-c", "safe.directory=*", "-C", first, "rev-parse", "HEAD").Output()
		require.NoError(t, err)
		parent, err := bareGit(t, e.bare, "rev-parse", ref+"^")
		require.NoError(t, err, "the checkpoint is on GitHub")
		require.Equal(t, strings.TrimSpace(string(commit)), parent)
		require.Equal(t, 4, strings.Count(e.logs.String(), `msg="work checkpointed"`), "one per step that changed files")

		// Another machine: a new data directory, a new Executor.
		e.dataDir = t.TempDir()
		e.x = e.executor(t)
		e.admit(t, 1, "alice", "any news?")
		e.run(t, tk.ID)
		second := filepath.Join(e.dataDir, "workspaces", "ticket-"+strconv.FormatInt(tk.ID, 10))
		moved, err := exec.Command("git", "-c", "safe.directory=*", "-C", second, "rev-parse", "HEAD").Output()
		require.NoError(t, err)
		require.Equal(t, string(commit), string(moved), "the unpushed commit came along")
		for _, f := range []string{"README.md", "AGENTS.md", "notes/plan.md"} {
			want, err := os.ReadFile(filepath.Join(first, f))
			require.NoError(t, err)
			got, err := os.ReadFile(filepath.Join(second, f))
			require.NoError(t, err, f)
			require.Equal(t, string(want), string(got), f)
		}
		ss := steps(e.model.Last())
		require.Equal(t, "git_status", ss[len(ss)-1].name)
		require.Contains(t, ss[len(ss)-1].result, " M AGENTS.md")
		require.Contains(t, ss[len(ss)-1].result, "?? notes/plan.md")
		require.NotContains(t, e.transcript(t), "cloned again", "the Session goes on where it was")
		require.Contains(t, e.logs.String(), `msg="work restored" ticket=`+strconv.FormatInt(tk.ID, 10))

		// The Ticket ends: its next job deletes the ref.
		require.NoError(t, e.store.SetTicketState(ctx, d, tk.ID, tickets.TicketDone))
		e.run(t, tk.ID)
		_, err = bareGit(t, e.bare, "rev-parse", "--verify", "--quiet", ref)
		require.Error(t, err, "the checkpoint is gone")
		require.Contains(t, e.logs.String(), `msg="work checkpoint deleted"`)

		// A ref a crash left behind (recorded, never deleted) is swept.
		_, err = bareGit(t, e.bare, "update-ref", ref, parent)
		require.NoError(t, err)
		_, err = d.Exec(ctx, `UPDATE executions SET wip_repo = $2 WHERE ticket_id = $1`, tk.ID, repo)
		require.NoError(t, err)
		n, err := e.x.SweepCheckpoints(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		_, err = bareGit(t, e.bare, "rev-parse", "--verify", "--quiet", ref)
		require.Error(t, err, "swept")
		n, err = e.x.SweepCheckpoints(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
	})
}
