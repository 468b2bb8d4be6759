package github

import (
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
	id       int64
	repo     string
	headSHA  string
	started  time.Time
	finished time.Time
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
		id := strconv.FormatInt(c.id, 10)
		m := map[string]any{
			"id": c.id, "node_id": "CR_" + id, "name": c.Name, "head_sha": c.headSHA, "status": c.Status,
			"started_at": c.started.Format(time.RFC3339),
			"output":     map[string]any{"title": c.Title, "summary": c.Summary, "text": c.Text, "annotations_count": 0},
			"html_url":   "https://github.com/" + rp.fullName + "/runs/" + id,
			// GitHub Actions points details at the job, whose id the run shares here.
			"details_url": "https://github.com/" + rp.fullName + "/actions/runs/" + id + "/job/" + id,
			"app":         map[string]any{"id": 15368, "slug": "github-actions", "name": "GitHub Actions"},
		}
		if c.Conclusion != "" {
			m["conclusion"] = c.Conclusion
		}
		if !c.finished.IsZero() {
			m["completed_at"] = c.finished.Format(time.RFC3339)
		}
		out = append(out, m)
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
	WriteJSON(w, http.StatusOK, map[string]any{
		"state": "success", "sha": refSHA(rp, ref), "total_count": 0, "statuses": []any{},
		"repository": s.repoJSON(rp),
	})
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
	_, _ = io.WriteString(w, c.Log)
}
