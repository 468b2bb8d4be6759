package github

import (
	"strings"
	"testing"
)

// headJSON is a pull request's head as the REST API answers it: a fork's
// repository and owner for a pull request from a fork; st.mu must be held.
func (s *Server) headJSON(rp *repo, p *pull) map[string]any {
	head := rp
	if p.headRepo != "" {
		if fork := s.st.repos[strings.ToLower(p.headRepo)]; fork != nil {
			head = fork
		}
	}
	owner, _, _ := strings.Cut(head.fullName, "/")
	return map[string]any{"ref": p.Head, "sha": p.HeadSHA, "label": owner + ":" + p.Head, "repo": s.repoJSON(head),
		"user": s.userJSON(owner)}
}

// ReadyForReview marks a draft pull request ready, as its author does in
// the web UI.
func (s *Server) ReadyForReview(t testing.TB, fullName string, number int) {
	t.Helper()
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.pullOf(t, fullName, number).Draft = false
}

// MergeAs merges a pull request for real, as a person does in the web UI
// (merge commit), and returns the merge commit. A draft cannot be merged.
func (s *Server) MergeAs(t testing.TB, fullName string, number int) string {
	t.Helper()
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	p := s.pullOf(t, fullName, number)
	rp := s.st.repos[strings.ToLower(fullName)]
	s.refresh(rp, p)
	if p.Draft || p.State != "open" {
		t.Fatalf("fake GitHub: %s#%d cannot be merged (draft %v, state %s)", fullName, number, p.Draft, p.State)
	}
	sha, status, msg := s.merge(rp, p, "merge", "", "")
	if sha == "" {
		t.Fatalf("fake GitHub: merging %s#%d: %d %s", fullName, number, status, msg)
	}
	return sha
}

// pullOf finds a pull request or fails the test; st.mu must be held.
func (s *Server) pullOf(t testing.TB, fullName string, number int) *pull {
	t.Helper()
	rp := s.st.repos[strings.ToLower(fullName)]
	if rp == nil || rp.pulls[number] == nil {
		t.Fatalf("fake GitHub: no pull request %s#%d", fullName, number)
	}
	return rp.pulls[number]
}
