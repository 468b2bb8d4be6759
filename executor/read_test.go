package executor_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// github_read of an issue and of a conversation reads GitHub's answers as
// the fake gives them, held to GitHub's description.
func TestReadIssueAndThread(t *testing.T) {
	t.Parallel()
	e := setup(t, dbtest.SQLite(t), afterPR(func(tn turn) fakeopenai.Reply {
		switch tn.count("github_read") {
		case 0:
			return call("github_read", `{"what":"issue","number":7}`)
		case 1:
			return call("github_read", `{"what":"thread","number":7}`)
		}
		return fakeopenai.Text("Read them.")
	}))
	e.gh.AddIssue(repo, 7, "Widgets break", "They break on Mondays.", "alice")
	e.gh.AddComment(repo, 7, "alice", "Still broken")
	tk, pr := e.openPR(t)
	e.admit(t, pr, "carol", "See #"+strconv.Itoa(7)+".")
	e.run(t, tk.ID)

	read := e.modelCalls("github_read")
	require.Len(t, read, 2)
	require.Contains(t, read[0].result, `"title": "Widgets break"`)
	require.Contains(t, read[1].result, `"Still broken"`)
	require.Empty(t, e.gh.Violations())
}

// count is how many times the turn called the tool name.
func (tn turn) count(name string) int {
	n := 0
	for _, s := range tn.steps {
		if s.name == name {
			n++
		}
	}
	return n
}
