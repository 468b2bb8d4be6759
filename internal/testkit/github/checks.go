package github

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// CheckRunSpec describes a check run (AddCheckRun).
type CheckRunSpec struct {
	Name string
	// Status defaults to "completed".
	Status string
	// Conclusion is success, failure, neutral, cancelled, skipped,
	// timed_out or action_required; empty while not completed.
	Conclusion string
	Title      string
	Summary    string
	Text       string
	// Log is the job's log, served by GET .../actions/jobs/{id}/logs
	// (the check run id doubles as the job id).
	Log string
}

type checkRun struct {
	CheckRunSpec
	id         int64
	repo       string
	headSHA    string
	started    time.Time
	finished   time.Time
	detailsURL string
	externalID string
	// byApp: created through the API by the App, not by Actions.
	byApp bool
	// runID is the workflow run of an Actions job (AddWorkflowRun).
	runID int64
}

// AddCheckRun adds a check run on commit headSHA of fullName and returns
// its id, which is also its Actions job id.
func (s *Server) AddCheckRun(fullName, headSHA string, c CheckRunSpec) int64 {
	if c.Status == "" {
		c.Status = "completed"
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	now := time.Now().UTC().Truncate(time.Second)
	cr := &checkRun{CheckRunSpec: c, id: s.st.id(), repo: s.st.repo(fullName).fullName, headSHA: headSHA, started: now}
	if c.Status == "completed" {
		cr.finished = now
	}
	s.st.checks[cr.id] = cr
	return cr.id
}

func (s *Server) serveChecks() {
	// Refs are branch names that may hold slashes, which go-github does
	// not escape, so one route takes the rest of the path.
	s.mux.HandleFunc("GET /repos/{owner}/{repo}/commits/{rest...}", func(w http.ResponseWriter, r *http.Request) {
		rest := r.PathValue("rest")
		if ref, ok := strings.CutSuffix(rest, "/check-runs"); ok {
			s.listCheckRuns(w, r, ref)
		} else if ref, ok := strings.CutSuffix(rest, "/status"); ok {
			s.combinedStatus(w, r, ref)
		} else {
			WriteError(w, http.StatusNotFound, "Not Found")
		}
	})
	s.mux.HandleFunc("POST /repos/{owner}/{repo}/check-runs", s.createCheckRun)
	s.mux.HandleFunc("PATCH /repos/{owner}/{repo}/check-runs/{id}", s.updateCheckRun)
	s.mux.HandleFunc("GET /repos/{owner}/{repo}/actions/jobs/{id}/logs", s.jobLogs)
	s.mux.HandleFunc("GET /_fake/job-logs/{id}", s.downloadLog)
}

// refSHA resolves a commit sha or a branch of rp; st.mu must be held.
func refSHA(rp *repo, ref string) string {
	if rp.dir != "" {
		if sha, err := resolve(rp.dir, ref); err == nil {
			return sha
		}
	}
	return ref
}

func (s *Server) listCheckRuns(w http.ResponseWriter, r *http.Request, ref string) {
	if _, ok := s.Authorize(w, r); !ok {
		return
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rp := s.st.lookup(r)
	if rp == nil {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	sha := refSHA(rp, ref)
	q := r.URL.Query()
	var runs []*checkRun
	for _, c := range s.st.checks {
		if strings.EqualFold(c.repo, rp.fullName) && c.headSHA == sha &&
			(q.Get("check_name") == "" || q.Get("check_name") == c.Name) && (q.Get("status") == "" || q.Get("status") == c.Status) {
			runs = append(runs, c)
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].id < runs[j].id })
	out := []map[string]any{}
	for _, c := range runs {
		out = append(out, s.checkRunJSON(c))
	}
	out = paginate(w, r, out)
	WriteJSON(w, http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": out})
}

// combinedStatus answers success with no statuses: the fake keeps CI in
// check runs.
func (s *Server) combinedStatus(w http.ResponseWriter, r *http.Request, ref string) {
	if _, ok := s.Authorize(w, r); !ok {
		return
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rp := s.st.lookup(r)
	if rp == nil {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	sha := refSHA(rp, ref)
	WriteJSON(w, http.StatusOK, overlay(s.canned("combined-commit-status"), map[string]any{
		"state": "success", "sha": sha, "total_count": 0, "statuses": []any{},
		"repository": s.repoJSON(rp),
		"commit_url": s.URL + "/repos/" + rp.fullName + "/commits/" + sha,
		"url":        s.URL + "/repos/" + rp.fullName + "/commits/" + sha + "/status",
	}))
}

// jobLogs redirects, as GitHub does, to a download URL that needs no
// token; go-github's GetWorkflowJobLogs returns that URL for the caller to
// fetch.
func (s *Server) jobLogs(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.Authorize(w, r); !ok {
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.st.mu.Lock()
	c := s.st.checks[id]
	s.st.mu.Unlock()
	if c == nil || !strings.EqualFold(c.repo, r.PathValue("owner")+"/"+r.PathValue("repo")) {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	w.Header().Set("Location", s.URL+"/_fake/job-logs/"+strconv.FormatInt(id, 10))
	w.WriteHeader(http.StatusFound)
}

func (s *Server) downloadLog(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.st.mu.Lock()
	c := s.st.checks[id]
	s.st.mu.Unlock()
	if c == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, timestamped(c.Log, c.finished))
}

// checkRunJSON is a check run as GitHub's REST API answers it: the
// published example with the run's state, null where it is unset. st.mu
// must be held.
func (s *Server) checkRunJSON(c *checkRun) map[string]any {
	id := strconv.FormatInt(c.id, 10)
	null := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	m := s.canned("check-run")
	m = overlay(m, map[string]any{
		"id": c.id, "node_id": "CR_" + id, "name": c.Name, "head_sha": c.headSHA, "status": c.Status,
		"conclusion": null(c.Conclusion), "external_id": c.externalID,
		"url":        s.URL + "/repos/" + c.repo + "/check-runs/" + id,
		"html_url":   "https://github.com/" + c.repo + "/runs/" + id,
		"started_at": c.started.Format(time.RFC3339), "completed_at": nil,
		"output": map[string]any{"title": null(c.Title), "summary": null(c.Summary), "text": null(c.Text), "annotations_count": 0,
			"annotations_url": s.URL + "/repos/" + c.repo + "/check-runs/" + id + "/annotations"},
		"check_suite":   map[string]any{"id": c.id},
		"pull_requests": []any{},
		"details_url":   null(c.detailsURL),
		"app":           s.actionsAppJSON(),
	})
	if !c.byApp {
		// GitHub Actions points details at the job of its workflow run.
		run := id
		if c.runID != 0 {
			run = strconv.FormatInt(c.runID, 10)
		}
		m["details_url"] = "https://github.com/" + c.repo + "/actions/runs/" + run + "/job/" + id
	} else {
		m["app"] = s.appJSON()
	}
	if !c.finished.IsZero() {
		m["completed_at"] = c.finished.Format(time.RFC3339)
	}
	return m
}

// actionsAppJSON is the GitHub Actions App, which owns the check runs of
// workflow jobs.
func (s *Server) actionsAppJSON() map[string]any {
	m := s.canned("integration")
	delete(m, "client_id")
	return overlay(m, map[string]any{
		"id": 15368, "slug": "github-actions", "name": "GitHub Actions", "node_id": "MDM6QXBwMTUzNjg=",
		"owner":        s.orgJSON("github", 9919),
		"html_url":     "https://github.com/apps/github-actions",
		"external_url": "https://help.github.com/en/actions",
		"description":  "Automate your workflow from idea to production",
		"permissions":  map[string]any{"actions": "write", "checks": "write", "contents": "write", "metadata": "read", "pull_requests": "write", "statuses": "write"},
		"events":       []any{"check_run", "check_suite", "pull_request", "push", "workflow_dispatch"},
	})
}

// checkRunBody is the body of POST and PATCH .../check-runs; a pointer is
// nil for a field the request left out.
type checkRunBody struct {
	Name       *string `json:"name"`
	HeadSHA    *string `json:"head_sha"`
	DetailsURL *string `json:"details_url"`
	ExternalID *string `json:"external_id"`
	Status     *string `json:"status"`
	Conclusion *string `json:"conclusion"`
	Output     *struct {
		Title   *string `json:"title"`
		Summary *string `json:"summary"`
		Text    *string `json:"text"`
	} `json:"output"`
}

var (
	checkStatuses    = map[string]bool{"queued": true, "in_progress": true, "completed": true}
	checkConclusions = map[string]bool{"success": true, "failure": true, "neutral": true, "cancelled": true,
		"skipped": true, "timed_out": true, "action_required": true}
)

// apply sets what b carries on c, as GitHub does: a conclusion completes
// the run, and a completed run needs a conclusion. It returns a validation
// message, or "".
func (b checkRunBody) apply(c *checkRun, now time.Time) string {
	if b.Name != nil {
		c.Name = *b.Name
	}
	if b.DetailsURL != nil {
		c.detailsURL = *b.DetailsURL
	}
	if b.ExternalID != nil {
		c.externalID = *b.ExternalID
	}
	if b.Status != nil {
		if !checkStatuses[*b.Status] {
			return "status is not one of queued, in_progress, completed"
		}
		c.Status = *b.Status
	}
	if b.Conclusion != nil {
		if !checkConclusions[*b.Conclusion] {
			return "conclusion is not a valid conclusion"
		}
		c.Conclusion, c.Status = *b.Conclusion, "completed"
	}
	if c.Status == "completed" && c.Conclusion == "" {
		return "conclusion is required when status is completed"
	}
	if o := b.Output; o != nil {
		if o.Title == nil || o.Summary == nil {
			return "output needs a title and a summary"
		}
		c.Title, c.Summary = *o.Title, *o.Summary
		if o.Text != nil {
			c.Text = *o.Text
		}
	}
	if c.Status == "completed" && c.finished.IsZero() {
		c.finished = now
	}
	return ""
}

// checkRunRequest authorizes a check run write and decodes its body,
// answering the error itself when it reports false.
func (s *Server) checkRunRequest(w http.ResponseWriter, r *http.Request) (checkRunBody, bool) {
	var b checkRunBody
	if _, ok := s.Authorize(w, r); !ok {
		return b, false
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		WriteError(w, http.StatusBadRequest, "Problems parsing JSON")
		return b, false
	}
	return b, true
}

// createCheckRun answers POST /repos/{owner}/{repo}/check-runs: 201 with
// the run; name and head_sha are required, and the sha must be a commit of
// the repository.
func (s *Server) createCheckRun(w http.ResponseWriter, r *http.Request) {
	b, ok := s.checkRunRequest(w, r)
	if !ok {
		return
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rp := s.st.lookup(r)
	if rp == nil {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	if b.Name == nil || *b.Name == "" || b.HeadSHA == nil || *b.HeadSHA == "" {
		WriteError(w, http.StatusUnprocessableEntity, "Validation Failed")
		return
	}
	if rp.dir != "" {
		if sha, err := resolve(rp.dir, *b.HeadSHA); err != nil || sha != *b.HeadSHA {
			WriteError(w, http.StatusUnprocessableEntity, "No commit found for SHA: "+*b.HeadSHA)
			return
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	c := &checkRun{id: s.st.id(), repo: rp.fullName, headSHA: *b.HeadSHA, started: now, byApp: true}
	c.Status = "queued"
	if msg := b.apply(c, now); msg != "" {
		WriteError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	s.st.checks[c.id] = c
	WriteJSON(w, http.StatusCreated, s.checkRunJSON(c))
}

// updateCheckRun answers PATCH /repos/{owner}/{repo}/check-runs/{id}: 200
// with the run.
func (s *Server) updateCheckRun(w http.ResponseWriter, r *http.Request) {
	b, ok := s.checkRunRequest(w, r)
	if !ok {
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	c := s.st.checks[id]
	if c == nil || !strings.EqualFold(c.repo, r.PathValue("owner")+"/"+r.PathValue("repo")) {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	next := *c
	if msg := b.apply(&next, time.Now().UTC().Truncate(time.Second)); msg != "" {
		WriteError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	*c = next
	WriteJSON(w, http.StatusOK, s.checkRunJSON(c))
}

// CheckRun is a check run the fake holds, as a test reads it.
type CheckRun struct {
	ID                                int64
	Name, HeadSHA, Status, Conclusion string
	Title, Summary, DetailsURL, ExtID string
}

// CheckRuns returns the check runs on fullName created through the API,
// oldest first.
func (s *Server) CheckRuns(fullName string) []CheckRun {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	var out []CheckRun
	for _, c := range s.st.checks {
		if c.byApp && strings.EqualFold(c.repo, fullName) {
			out = append(out, CheckRun{ID: c.id, Name: c.Name, HeadSHA: c.headSHA, Status: c.Status, Conclusion: c.Conclusion,
				Title: c.Title, Summary: c.Summary, DetailsURL: c.detailsURL, ExtID: c.externalID})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
