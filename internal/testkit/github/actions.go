package github

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// WorkflowRunSpec describes a completed GitHub Actions workflow run
// (AddWorkflowRun).
type WorkflowRunSpec struct {
	// Name is the workflow's name ("CI").
	Name string
	// HeadBranch is the branch the run ran on.
	HeadBranch string
	Jobs       []JobSpec
}

// JobSpec describes one job of a workflow run.
type JobSpec struct {
	Name string
	// Conclusion is success, failure, cancelled, skipped or timed_out.
	Conclusion string
	// Steps are the job's steps in order; a failed job has the step that
	// failed (Conclusion "failure").
	Steps []StepSpec
	// Log is the job's log, served per job by GET
	// .../actions/jobs/{job_id}/logs with a timestamp on each line, as
	// GitHub writes it.
	Log string
}

// StepSpec is one step of a job.
type StepSpec struct {
	Name, Conclusion string
}

// WorkflowRun is a workflow run the fake holds: its id and its jobs' ids,
// which are the ids of their check runs (as on GitHub) and differ from
// the run's.
type WorkflowRun struct {
	ID         int64
	Name       string
	HeadSHA    string
	HeadBranch string
	Conclusion string
	// HTMLURL is the run's page, the html_url of the workflow_run event.
	HTMLURL string
	JobIDs  []int64
}

type workflowRun struct {
	WorkflowRun
	repo  string
	jobs  []JobSpec
	start time.Time
}

// AddWorkflowRun adds a completed workflow run on commit headSHA of
// fullName, with a check run per job, and returns it. The run concludes
// failure when any job failed.
func (s *Server) AddWorkflowRun(fullName, headSHA string, spec WorkflowRunSpec) WorkflowRun {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.runs == nil {
		s.st.runs = map[int64]*workflowRun{}
	}
	full := s.st.repo(fullName).fullName
	now := time.Now().UTC().Truncate(time.Second)
	r := &workflowRun{WorkflowRun: WorkflowRun{ID: s.st.id(), Name: spec.Name, HeadSHA: headSHA, HeadBranch: spec.HeadBranch,
		Conclusion: "success"}, repo: full, jobs: spec.Jobs, start: now}
	r.HTMLURL = "https://github.com/" + full + "/actions/runs/" + strconv.FormatInt(r.ID, 10)
	for _, j := range spec.Jobs {
		id := s.st.id()
		s.st.checks[id] = &checkRun{CheckRunSpec: CheckRunSpec{Name: j.Name, Status: "completed", Conclusion: j.Conclusion, Log: j.Log},
			id: id, repo: full, headSHA: headSHA, started: now, finished: now, runID: r.ID}
		r.JobIDs = append(r.JobIDs, id)
		if failedConclusion(j.Conclusion) {
			r.Conclusion = "failure"
		}
	}
	s.st.runs[r.ID] = r
	return r.WorkflowRun
}

func failedConclusion(c string) bool { return c == "failure" || c == "timed_out" || c == "cancelled" }

func (s *Server) serveActions() {
	s.mux.HandleFunc("GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs", s.listJobs)
}

// listJobs answers GET .../actions/runs/{run_id}/jobs: the run's jobs,
// paginated, in the order they were defined.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.Authorize(w, r); !ok {
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("run_id"), 10, 64)
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	run := s.st.runs[id]
	if run == nil || !strings.EqualFold(run.repo, r.PathValue("owner")+"/"+r.PathValue("repo")) {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	jobs := make([]map[string]any, 0, len(run.jobs))
	for i, j := range run.jobs {
		jobs = append(jobs, s.jobJSON(run, run.JobIDs[i], j))
	}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a]["id"].(int64) < jobs[b]["id"].(int64) })
	total := len(jobs)
	WriteJSON(w, http.StatusOK, map[string]any{"total_count": total, "jobs": paginate(w, r, jobs)})
}

// jobJSON is a job as the REST API answers it (the job schema, every
// required field); st.mu must be held.
func (s *Server) jobJSON(run *workflowRun, id int64, j JobSpec) map[string]any {
	ts := run.start.Format(time.RFC3339)
	sid := strconv.FormatInt(id, 10)
	rid := strconv.FormatInt(run.ID, 10)
	steps := make([]map[string]any, 0, len(j.Steps))
	for i, st := range j.Steps {
		steps = append(steps, map[string]any{"name": st.Name, "status": "completed", "conclusion": st.Conclusion, "number": i + 1,
			"started_at": ts, "completed_at": ts})
	}
	return map[string]any{
		"id": id, "node_id": "J_" + sid, "run_id": run.ID, "run_attempt": 1,
		"run_url":  s.URL + "/repos/" + run.repo + "/actions/runs/" + rid,
		"url":      s.URL + "/repos/" + run.repo + "/actions/jobs/" + sid,
		"html_url": "https://github.com/" + run.repo + "/actions/runs/" + rid + "/job/" + sid,
		"head_sha": run.HeadSHA, "head_branch": run.HeadBranch, "workflow_name": run.Name, "name": j.Name,
		"status": "completed", "conclusion": j.Conclusion, "created_at": ts, "started_at": ts, "completed_at": ts,
		"check_run_url": s.URL + "/repos/" + run.repo + "/check-runs/" + sid,
		"steps":         steps, "labels": []string{"ubuntu-latest"},
		"runner_id": 1, "runner_name": "GitHub Actions 1", "runner_group_id": 2, "runner_group_name": "GitHub Actions",
	}
}

// timestamped prefixes each line of a job's log with the time, as GitHub
// writes job logs.
func timestamped(log string, at time.Time) string {
	if log == "" {
		return ""
	}
	stamp := at.UTC().Format("2006-01-02T15:04:05.0000000Z") + " "
	lines := strings.SplitAfter(log, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(stamp + l)
		}
	}
	return b.String()
}
