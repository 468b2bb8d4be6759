package github_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

// jobRequired are the fields GitHub's REST description (components/schemas/
// job) requires of a job.
var jobRequired = []string{"id", "node_id", "run_id", "run_url", "head_sha", "workflow_name", "head_branch", "name", "url", "html_url",
	"status", "conclusion", "started_at", "completed_at", "check_run_url", "labels", "runner_id", "runner_name", "runner_group_id",
	"runner_group_name", "created_at"}

func TestWorkflowRunJobsAndTheirLogs(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	sha := e.pushBranch(t, "feature", map[string]string{"fix.go": "package widgets\n"})
	run := e.fake.AddWorkflowRun(repoName, sha, fakegithub.WorkflowRunSpec{Name: "CI", HeadBranch: "feature", Jobs: []fakegithub.JobSpec{
		{Name: "lint", Conclusion: "success", Steps: []fakegithub.StepSpec{{Name: "Set up job", Conclusion: "success"}}, Log: "lint ok\n"},
		{Name: "test", Conclusion: "failure", Steps: []fakegithub.StepSpec{{Name: "Set up job", Conclusion: "success"},
			{Name: "Run go test ./...", Conclusion: "failure"}}, Log: "--- FAIL: TestFix\nFAIL\n"},
	}})
	require.Equal(t, "failure", run.Conclusion)
	require.Len(t, run.JobIDs, 2)
	require.NotContains(t, run.JobIDs, run.ID, "a run's id is not its jobs'")
	require.Equal(t, "https://github.com/"+repoName+"/actions/runs/"+strconv.FormatInt(run.ID, 10), run.HTMLURL)

	jobs, _, err := e.gh.Actions.ListWorkflowJobs(ctx, "octo", "widgets", run.ID, &github.ListWorkflowJobsOptions{Filter: "latest"})
	require.NoError(t, err)
	require.Equal(t, 2, jobs.GetTotalCount())
	failed := jobs.Jobs[1]
	require.Equal(t, run.JobIDs[1], failed.GetID())
	require.Equal(t, run.ID, failed.GetRunID())
	require.Equal(t, "failure", failed.GetConclusion())
	require.Equal(t, sha, failed.GetHeadSHA())
	require.Equal(t, "Run go test ./...", failed.Steps[1].GetName())
	require.Equal(t, "failure", failed.Steps[1].GetConclusion())
	require.Equal(t, int64(2), failed.Steps[1].GetNumber())

	// Every field the schema requires is there (null where it may be).
	req, err := e.gh.NewRequest(http.MethodGet, "repos/"+repoName+"/actions/runs/"+strconv.FormatInt(run.ID, 10)+"/jobs", nil)
	require.NoError(t, err)
	var raw struct {
		Jobs []map[string]json.RawMessage `json:"jobs"`
	}
	_, err = e.gh.Do(ctx, req, &raw)
	require.NoError(t, err)
	for _, f := range jobRequired {
		require.Contains(t, raw.Jobs[0], f)
	}

	// The job's check run is the job, under the run.
	runs, _, err := e.gh.Checks.ListCheckRunsForRef(ctx, "octo", "widgets", sha, nil)
	require.NoError(t, err)
	require.Equal(t, 2, runs.GetTotal())
	require.Equal(t, failed.GetID(), runs.CheckRuns[1].GetID())
	require.True(t, strings.HasSuffix(runs.CheckRuns[1].GetDetailsURL(), "/actions/runs/"+strconv.FormatInt(run.ID, 10)+"/job/"+strconv.FormatInt(failed.GetID(), 10)))

	// Logs are per job; the run's id is no job.
	u, _, err := e.gh.Actions.GetWorkflowJobLogs(ctx, "octo", "widgets", failed.GetID(), 1)
	require.NoError(t, err)
	resp, err := http.Get(u.String())
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Regexp(t, `(?m)^\S+Z --- FAIL: TestFix$`, string(body))
	_, resp2, err := e.gh.Actions.GetWorkflowJobLogs(ctx, "octo", "widgets", run.ID, 1)
	require.Error(t, err)
	require.Equal(t, http.StatusNotFound, resp2.StatusCode)
	_, resp2, err = e.gh.Actions.ListWorkflowJobs(ctx, "octo", "widgets", failed.GetID(), nil)
	require.Error(t, err)
	require.Equal(t, http.StatusNotFound, resp2.StatusCode, "a job's id is no run")
}
