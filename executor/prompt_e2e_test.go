package executor_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/promptparts"
)

// Once the Executor works in a directory, the AGENTS.md files from the
// root down to it are in its prompt, root first.
func TestAgentsMDChainFollowsTheDirectoriesWorkedIn(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, callsInOrder(
			[2]string{"read_file", `{"path":"services/api/handler.go"}`},
		))
		const nested = "In services/api, run go test ./... and keep handlers thin.\n"
		e.gh.PushAs(t, repo, "main", map[string]string{
			"services/api/AGENTS.md":  nested,
			"services/api/handler.go": "package api\n",
			"services/web/AGENTS.md":  "Never touch the web service.\n",
		}, "Add the API service")
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)

		reqs := e.model.Requests()
		require.GreaterOrEqual(t, len(reqs), 2, "the read and the answer to it (then the reminder's report)")
		const root = "Run ./test.sh before committing."
		require.Contains(t, reqs[0].System(), root)
		require.NotContains(t, reqs[0].System(), strings.TrimSpace(nested), "the nested file joins only once the Executor works there")

		require.Contains(t, steps(reqs[1])[0].result, "package api", "the file was read")
		system := reqs[1].System()
		r, n := strings.Index(system, root), strings.Index(system, strings.TrimSpace(nested))
		require.GreaterOrEqual(t, r, 0, "the root AGENTS.md")
		require.Greater(t, n, r, "the nested AGENTS.md, after the root's")
		require.NotContains(t, system, "Never touch the web service.", "a sibling directory's AGENTS.md stays out")

		// A restarted process keeps the chain: a follow-up's request has it.
		e.x = e.executor(t)
		before := len(e.model.Requests())
		e.admit(t, 1, "alice", "also check the API docs")
		e.run(t, tk.ID)
		reqs = e.model.Requests()
		require.Greater(t, len(reqs), before)
		require.Equal(t, system, reqs[before].System(), "the same prompt, so the provider's cache still applies")
	})
}

// prompts_read shows a revision this Ticket's Sessions worked under and
// refuses one they never used.
func TestPromptsReadOnlyShowsRevisionsTheTicketUsed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		const scope = "Ticket scope: a newer revision, saved while the Executor worked."
		var (
			e               *env
			first, newer    int64
			saveErr         error
			savedDuringStep = 1
		)
		e = setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
			n := len(steps(req))
			if n == savedDuringStep && newer == 0 {
				var res promptparts.SaveResult
				res, saveErr = e.prompts.Save(ctx, promptparts.Patch{BaseRevision: first, Note: "test",
					Sections: promptparts.SectionsPatch{TicketScope: &promptparts.TicketScopePatch{Text: new(scope)}}},
					promptparts.SaveMeta{Origin: promptparts.OriginPanel, Actor: "alice"})
				newer = res.Revision
			}
			switch n {
			case 0:
				return call("prompts_read", fmt.Sprintf(`{"revision":%d}`, first))
			case 1, 2:
				return call("prompts_read", fmt.Sprintf(`{"revision":%d}`, newer))
			}
			return fakeopenai.Text("Done.")
		})
		var err error
		first, err = e.prompts.Head(ctx)
		require.NoError(t, err)
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)
		require.NoError(t, saveErr)
		require.Greater(t, newer, first)

		ss := steps(e.model.Last())
		require.Len(t, ss, 3)
		// The revision of the first requests is readable, as it was.
		require.Contains(t, ss[0].result, "Run ./test.sh before committing.")
		require.NotContains(t, ss[0].result, scope)
		// The newer one, before any request used it, is refused.
		require.Equal(t, fmt.Sprintf("refused: this Ticket's Sessions never worked under revision %d", newer), ss[1].result)
		// Once a request worked under it, it is readable.
		require.Contains(t, ss[2].result, scope)
		require.Contains(t, e.model.Last().System(), scope, "later requests use the newer revision")
	})
}

// A repository may commit a symlink that leads out of the workspace. The
// file tools refuse a path through it, and it never joins the AGENTS.md
// chain, so the Ticket goes on working, a follow-up included; an entry
// already stored that no longer resolves is left out of the prompt, not a
// reason to fail it.
func TestAgentsMDChainSurvivesASymlinkLeavingTheWorkspace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, callsInOrder(
			[2]string{"read_file", `{"path":"link/superagent.db"}`},
			[2]string{"read_file", `{"path":"link/workspaces/AGENTS.md"}`},
			[2]string{"read_file", `{"path":"README.md"}`},
		))
		// The workspace is <data>/workspaces/ticket-<id>: two levels up is
		// the service's data directory.
		commitSymlink(t, e.bare, "main", "link", "../../")
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)

		reqs := e.model.Requests()
		require.GreaterOrEqual(t, len(reqs), 4, "every call was answered and the model asked again")
		ss := steps(reqs[3])
		require.Len(t, ss, 3)
		for _, s := range ss[:2] {
			require.True(t, strings.HasPrefix(s.result, "error") || strings.HasPrefix(s.result, "refused"), "refused: %q", s.result)
			require.Contains(t, s.result, "escapes")
			require.NotContains(t, s.result, "DATABASE-FILE-SECRET")
		}
		require.Contains(t, ss[2].result, "projetc", "the README was read after the refusals")
		require.Equal(t, "[]", workDirs(t, e, tk.ID), "a refused path is not a directory worked in")
		require.Contains(t, reqs[3].System(), "Run ./test.sh before committing.", "the root AGENTS.md is still there")

		// An entry stored before the tools checked it, which the chain
		// cannot read, costs only itself.
		_, err := d.Exec(context.Background(), `UPDATE executions SET work_dirs = $2 WHERE ticket_id = $1`, tk.ID, `["link","link/workspaces"]`)
		require.NoError(t, err)
		before := len(e.model.Requests())
		e.admit(t, 1, "alice", "also check the docs")
		e.run(t, tk.ID)
		reqs = e.model.Requests()
		require.Greater(t, len(reqs), before, "the follow-up reached the model")
		require.Equal(t, reqs[3].System(), reqs[before].System(), "the same prompt as without the entry")
		require.Contains(t, e.logs.String(), "leaving AGENTS.md files out of the prompt")
	})
}

// commitSymlink commits a symlink name -> target on branch of the bare
// repository, as a person pushing it would.
func commitSymlink(t *testing.T, bare, branch, name, target string) {
	t.Helper()
	index := filepath.Join(t.TempDir(), "index")
	git := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"--git-dir", bare}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+index, "GIT_AUTHOR_NAME=Person", "GIT_AUTHOR_EMAIL=person@example.com",
			"GIT_COMMITTER_NAME=Person", "GIT_COMMITTER_EMAIL=person@example.com")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		require.NoError(t, err)
		return strings.TrimSpace(string(out))
	}
	blob := git(target, "hash-object", "-w", "--stdin")
	git("", "read-tree", branch)
	git("", "update-index", "--add", "--cacheinfo", "120000,"+blob+","+name)
	tree := git("", "write-tree")
	commit := git("Add "+name, "commit-tree", tree, "-p", branch)
	git("", "update-ref", "refs/heads/"+branch, commit)
}

// workDirs is the list of directories stored for the Ticket's execution.
func workDirs(t *testing.T, e *env, ticketID int64) string {
	t.Helper()
	var raw string
	require.NoError(t, e.d.QueryRow(context.Background(), `SELECT work_dirs FROM executions WHERE ticket_id = $1`, ticketID).Scan(&raw))
	return raw
}
