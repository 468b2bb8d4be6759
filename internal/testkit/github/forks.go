package github

import (
	"strings"
)

// forkPulls are the open pull requests whose head is in the fork
// fullName, with the repository each one is onto; st.mu must be held.
func (st *store) forkPulls(fullName string) []forkPull {
	var out []forkPull
	for _, rp := range st.repos {
		for _, p := range rp.pulls {
			if p.headRepo != "" && strings.EqualFold(p.headRepo, fullName) && p.State == "open" {
				out = append(out, forkPull{base: rp, pull: p})
			}
		}
	}
	return out
}

type forkPull struct {
	base *repo
	pull *pull
}

// forkPush decides a push to fullName by a token whose repositories are
// scope (nil: all of the installation's). A repository that is the head
// of open pull requests (a person's fork) takes a push from the App, as
// on GitHub, only to the head branch of a pull request whose author allows
// edits by maintainers, onto a repository the token covers. It reports
// whether fullName is such a fork and, if so, whether every ref pushed is
// allowed.
func (s *Server) forkPush(fullName string, scope map[string]bool, refs []string) (isFork, allowed bool) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	pulls := s.st.forkPulls(fullName)
	if len(pulls) == 0 {
		return false, false
	}
	heads := map[string]bool{}
	for _, fp := range pulls {
		_, baseName, _ := strings.Cut(fp.base.fullName, "/")
		if fp.pull.maintainerCanModify && (scope == nil || scope[strings.ToLower(baseName)]) {
			heads["refs/heads/"+fp.pull.Head] = true
		}
	}
	if len(heads) == 0 {
		return true, false
	}
	for _, ref := range refs {
		if !heads[ref] {
			return true, false
		}
	}
	return true, true
}

// mirrorFork copies the head branches pushed to a fork into the
// repositories their pull requests are onto, where the fake reads a pull
// request's commits (GitHub keeps them as refs/pull/N/head).
func (s *Server) mirrorFork(fullName string) {
	s.st.mu.Lock()
	pulls := s.st.forkPulls(fullName)
	fork := s.st.repos[strings.ToLower(fullName)]
	s.st.mu.Unlock()
	if fork == nil || fork.dir == "" {
		return
	}
	for _, fp := range pulls {
		if fp.base.dir == "" {
			continue
		}
		ref := "refs/heads/" + fp.pull.Head
		_, _ = runGit("", nil, "--git-dir", fp.base.dir, "fetch", "--quiet", fork.dir, "+"+ref+":"+ref)
	}
}
