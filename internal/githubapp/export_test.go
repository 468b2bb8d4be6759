package githubapp

import "github.com/google/go-github/v66/github"

// ScopedClient is s's REST client, for a test to ask what its Repo's
// methods never would (another repository).
func ScopedClient(s *Scoped) *github.Client { return s.gh }
