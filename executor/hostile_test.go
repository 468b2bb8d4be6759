package executor_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

// A command writes the repository's secret into a file: the checkpoint
// after it is refused, the model is told which file, and nothing reaches
// the remote until the file is gone.
func TestSecretWrittenToAFileNeverReachesTheRemote(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, callsInOrder(
			runCall(`mkdir -p config && printf 'token=%s\n' "$API_TOKEN" > config/token.txt && echo written`),
			runCall(`rm config/token.txt && echo clean > notes.txt`),
		))
		e.repoEnv = repoenv.New(d, testBox(t), nil)
		e.x = e.executor(t)
		require.NoError(t, e.repoEnv.SetSecret(context.Background(), d, repo, "API_TOKEN", apiToken, "admin", nil))
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)

		out := lastResults(e)
		require.Len(t, out, 2)
		require.Contains(t, out[0], "host: the checkpoint was not pushed: config/token.txt holds the value of a configured secret")
		require.NotContains(t, out[1], "was not pushed")
		require.Contains(t, e.logs.String(), `msg="checkpoint refused: a secret in what it would push"`)
		ref := workspace.WIPRef(tk.ID)
		files, err := bareGit(t, e.bare, "ls-tree", "-r", "--name-only", ref)
		require.NoError(t, err, "the second step's checkpoint is on the remote")
		require.Contains(t, files, "notes.txt")
		require.NotContains(t, files, "token.txt")
		// No object on the remote holds the value.
		objects, err := bareGit(t, e.bare, "rev-list", "--objects", "--all")
		require.NoError(t, err)
		for line := range strings.SplitSeq(objects, "\n") {
			sha, _, _ := strings.Cut(line, " ")
			content, err := bareGit(t, e.bare, "cat-file", "-p", sha)
			require.NoError(t, err)
			require.NotContains(t, content, apiToken)
		}
		requireNowhere(t, e, apiToken)
	})
}

// A Ticket that only reads and answers pushes no ref.
func TestReadingTicketPushesNoRef(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, callsInOrder(runCall(`cat README.md; ls -la`), [2]string{"git_status", `{}`}))
		tk, _ := e.request(t, "@superagent what does the README say?")
		e.run(t, tk.ID)
		require.Len(t, lastResults(e), 1)
		refs, err := bareGit(t, e.bare, "for-each-ref", "refs/superagent/")
		require.NoError(t, err)
		require.Empty(t, refs, "no checkpoint")
		require.NotContains(t, e.logs.String(), "work checkpointed")
	})
}
