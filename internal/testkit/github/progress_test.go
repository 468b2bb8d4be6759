package github_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"
)

// raw makes one request with the installation's token and returns the
// status and body.
func (e *env) raw(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, e.fake.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "token "+e.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, b
}

func TestCreateAndUpdateCheckRun(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	sha := e.pushBranch(t, "superagent/ticket-3", map[string]string{"fix.go": "package widgets\n"})

	run, resp, err := e.gh.Checks.CreateCheckRun(ctx, "octo", "widgets", github.CreateCheckRunOptions{
		Name: "superagent", HeadSHA: sha, Status: github.String("in_progress"), ExternalID: github.String("ticket:3"),
		DetailsURL: github.String("https://agent.example.com/admin/tickets/3"),
		Output:     &github.CheckRunOutput{Title: github.String("Working"), Summary: github.String("Ticket 3 is working.")},
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, "in_progress", run.GetStatus())
	require.Nil(t, run.Conclusion)
	require.Nil(t, run.CompletedAt)
	require.Equal(t, "https://agent.example.com/admin/tickets/3", run.GetDetailsURL())
	require.Equal(t, "superagent", run.GetApp().GetSlug(), "a run the App creates is the App's")

	done, resp, err := e.gh.Checks.UpdateCheckRun(ctx, "octo", "widgets", run.GetID(), github.UpdateCheckRunOptions{
		Name: "superagent", Conclusion: github.String("neutral"),
		Output: &github.CheckRunOutput{Title: github.String("Stopped"), Summary: github.String("Stopped by carol.")},
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "completed", done.GetStatus(), "a conclusion completes the run")
	require.Equal(t, "neutral", done.GetConclusion())
	require.NotNil(t, done.CompletedAt)
	require.Equal(t, "Stopped by carol.", done.GetOutput().GetSummary())
	require.Equal(t, "https://agent.example.com/admin/tickets/3", done.GetDetailsURL(), "an update keeps what it leaves out")

	runs, _, err := e.gh.Checks.ListCheckRunsForRef(ctx, "octo", "widgets", sha, &github.ListCheckRunsOptions{CheckName: github.String("superagent")})
	require.NoError(t, err)
	require.Equal(t, 1, runs.GetTotal())
	require.Equal(t, "ticket:3", runs.CheckRuns[0].GetExternalID())
	require.Len(t, e.fake.CheckRuns(repoName), 1)

	t.Run("wire format", func(t *testing.T) {
		// The fake checks every answer against GitHub's check-run schema.
		status, body := e.raw(t, http.MethodPost, "/repos/octo/widgets/check-runs", `{"name":"superagent","head_sha":"`+sha+`"}`)
		require.Equal(t, http.StatusCreated, status)
		status, _ = e.raw(t, http.MethodPatch, "/repos/octo/widgets/check-runs/"+jsonID(t, body), `{"status":"completed","conclusion":"success"}`)
		require.Equal(t, http.StatusOK, status)
		require.Empty(t, e.fake.Violations())
	})
	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			method, path, body string
			status             int
			// violation is what the contract says of the request, "" when
			// it is well formed and only GitHub's state refuses it.
			violation string
		}{
			{http.MethodPost, "/repos/octo/widgets/check-runs", `{"name":"superagent"}`, http.StatusUnprocessableEntity, "request body: missing property 'head_sha'"},
			{http.MethodPost, "/repos/octo/widgets/check-runs", `{"name":"superagent","head_sha":"0000000000000000000000000000000000000000"}`, http.StatusUnprocessableEntity, ""},
			{http.MethodPost, "/repos/octo/widgets/check-runs", `{"name":"x","head_sha":"` + sha + `","status":"completed"}`, http.StatusUnprocessableEntity, ""},
			{http.MethodPatch, "/repos/octo/widgets/check-runs/999999", `{"status":"in_progress"}`, http.StatusNotFound, ""},
			{http.MethodPatch, "/repos/octo/widgets/check-runs/" + jsonIDOf(run.GetID()), `{"conclusion":"maybe"}`, http.StatusUnprocessableEntity, "request body at /conclusion: value must be one of"},
		} {
			var status int
			v := e.fake.Expect(func() { status, _ = e.raw(t, tc.method, tc.path, tc.body) })
			require.Equal(t, tc.status, status, "%s %s %s", tc.method, tc.path, tc.body)
			if tc.violation == "" {
				require.Empty(t, v)
			} else {
				require.Len(t, v, 1)
				require.Contains(t, v[0].String(), tc.violation)
			}
		}
	})
}

func TestEditIssueComment(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.fake.ServeConversations()
	e.fake.AddIssue(repoName, 1, "Widgets break", "They break.", "alice")
	c, resp, err := e.gh.Issues.CreateComment(ctx, "octo", "widgets", 1, &github.IssueComment{Body: github.String("State: working")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	edited, resp, err := e.gh.Issues.EditComment(ctx, "octo", "widgets", c.GetID(), &github.IssueComment{Body: github.String("State: done")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, c.GetID(), edited.GetID())
	require.Equal(t, "State: done", edited.GetBody())
	comments := e.fake.Comments()
	require.Len(t, comments, 1, "an edit changes the comment in place")
	require.Equal(t, "State: done", comments[0].Body)
	require.Equal(t, 1, comments[0].Edits)

	status, _ := e.raw(t, http.MethodPatch, "/repos/octo/widgets/issues/comments/"+jsonIDOf(c.GetID()), `{"body":"State: paused"}`)
	require.Equal(t, http.StatusOK, status)
	v := e.fake.Expect(func() {
		status, _ = e.raw(t, http.MethodPatch, "/repos/octo/widgets/issues/comments/"+jsonIDOf(c.GetID()), `{}`)
	})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Len(t, v, 1)
	require.Equal(t, "request body: missing property 'body'", v[0].Problem.String())
	status, _ = e.raw(t, http.MethodPatch, "/repos/octo/widgets/issues/comments/424242", `{"body":"x"}`)
	require.Equal(t, http.StatusNotFound, status)
}

func jsonID(t *testing.T, body []byte) string {
	t.Helper()
	var v struct {
		ID json.Number `json:"id"`
	}
	require.NoError(t, json.Unmarshal(body, &v))
	return v.ID.String()
}

func jsonIDOf(id int64) string { b, _ := json.Marshal(id); return string(b) }
