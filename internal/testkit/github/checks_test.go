package github_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

func TestChecksAndLogs(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	sha := e.pushBranch(t, "superagent/fix", map[string]string{"fix.go": "package widgets\n"})
	ok := e.fake.AddCheckRun(repoName, sha, fakegithub.CheckRunSpec{Name: "lint", Conclusion: "success"})
	bad := e.fake.AddCheckRun(repoName, sha, fakegithub.CheckRunSpec{Name: "test", Conclusion: "failure",
		Title: "1 test failed", Summary: "TestFix failed", Text: "details", Log: "--- FAIL: TestFix\n"})
	main, _ := e.fake.Branch(t, repoName, "main")
	e.fake.AddCheckRun(repoName, main, fakegithub.CheckRunSpec{Name: "test", Status: "in_progress"})

	for _, ref := range []string{sha, "superagent/fix"} {
		runs, _, err := e.gh.Checks.ListCheckRunsForRef(ctx, "octo", "widgets", ref, nil)
		require.NoError(t, err)
		require.Equal(t, 2, runs.GetTotal())
		require.Equal(t, ok, runs.CheckRuns[0].GetID())
		got := runs.CheckRuns[1]
		require.Equal(t, bad, got.GetID())
		require.Equal(t, "test", got.GetName())
		require.Equal(t, sha, got.GetHeadSHA())
		require.Equal(t, "completed", got.GetStatus())
		require.Equal(t, "failure", got.GetConclusion())
		require.Equal(t, "1 test failed", got.GetOutput().GetTitle())
		require.Equal(t, "TestFix failed", got.GetOutput().GetSummary())
		require.Equal(t, "details", got.GetOutput().GetText())
		require.NotEmpty(t, got.GetHTMLURL())
		require.NotEmpty(t, got.GetDetailsURL())
	}
	runs, _, err := e.gh.Checks.ListCheckRunsForRef(ctx, "octo", "widgets", "main", nil)
	require.NoError(t, err)
	require.Equal(t, 1, runs.GetTotal())
	require.Equal(t, "in_progress", runs.CheckRuns[0].GetStatus())
	require.Nil(t, runs.CheckRuns[0].Conclusion)

	st, _, err := e.gh.Repositories.GetCombinedStatus(ctx, "octo", "widgets", "superagent/fix", nil)
	require.NoError(t, err)
	require.Equal(t, "success", st.GetState())
	require.Equal(t, sha, st.GetSHA())

	u, resp, err := e.gh.Actions.GetWorkflowJobLogs(ctx, "octo", "widgets", bad, 1)
	require.NoError(t, err)
	require.Equal(t, http.StatusFound, resp.StatusCode)
	logResp, err := http.Get(u.String()) // a pre-signed download: no token
	require.NoError(t, err)
	defer logResp.Body.Close()
	body, err := io.ReadAll(logResp.Body)
	require.NoError(t, err)
	require.Regexp(t, `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{7}Z --- FAIL: TestFix\n$`, string(body), "each line timestamped, as GitHub writes job logs")
	require.Equal(t, "text/plain; charset=utf-8", logResp.Header.Get("Content-Type"))

	_, resp, err = e.gh.Actions.GetWorkflowJobLogs(ctx, "octo", "widgets", 999999, 1)
	require.Error(t, err)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestUsers(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	bot, _, err := e.gh.Users.Get(ctx, "superagent[bot]")
	require.NoError(t, err)
	require.Equal(t, int64(fakegithub.BotUserID), bot.GetID())
	require.Equal(t, "Bot", bot.GetType())
	alice, _, err := e.gh.Users.Get(ctx, "alice")
	require.NoError(t, err)
	require.Equal(t, "User", alice.GetType())
	again, _, err := e.gh.Users.Get(ctx, "Alice")
	require.NoError(t, err)
	require.Equal(t, alice.GetID(), again.GetID())
	bob, _, err := e.gh.Users.Get(ctx, "bob")
	require.NoError(t, err)
	require.NotEqual(t, alice.GetID(), bob.GetID())

	plain := github.NewClient(nil)
	plain.BaseURL = e.gh.BaseURL
	_, resp, err := plain.Users.Get(ctx, "alice")
	require.Error(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}
