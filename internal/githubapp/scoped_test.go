package githubapp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
)

// A scoped client's token reaches its repository and nothing else of the
// installation, asks only for granted permissions, and is reused.
func TestScopedTokensReachOnlyTheirRepository(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		fake := fakegithub.New(t)
		fake.AddRepo(t, "octo/repo", "main", map[string]string{"README.md": "hi\n"})
		fake.AddRepo(t, "octo/other", "main", map[string]string{"README.md": "hi\n"})
		fake.SetGranted(map[string]string{"contents": "read", "issues": "write", "metadata": "read"})
		seed.Installation(t, d, 42, "octo/repo", "octo/other")
		c := newClient(t, fake, nil)

		s, err := c.ForRepoScoped(ctx, d, "octo/repo", map[string]string{"contents": "write", "issues": "write", "checks": "write"})
		require.NoError(t, err)
		require.Equal(t, int64(42), s.Installation)
		r, err := s.Repository(ctx)
		require.NoError(t, err)
		require.Equal(t, "octo/repo", r.GetFullName())
		_, resp, err := githubapp.ScopedClient(s).Repositories.Get(ctx, "octo", "other")
		require.Error(t, err)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "the installation's other repository is out of reach")
		_, err = s.Token(ctx)
		require.NoError(t, err)

		again, err := c.ForRepoScoped(ctx, d, "octo/repo", map[string]string{"contents": "write", "issues": "write", "checks": "write"})
		require.NoError(t, err)
		require.Same(t, s, again)
		require.Equal(t, [][]string{{"repo"}}, fake.TokenScopes(), "one token, named for its repository")
		var asked *github.InstallationTokenOptions
		for _, r := range fake.Requests() {
			if r.Method == http.MethodPost && r.Path == "/app/installations/42/access_tokens" {
				asked = &github.InstallationTokenOptions{}
				require.NoError(t, json.Unmarshal(r.Body, asked))
			}
		}
		require.NotNil(t, asked)
		require.Equal(t, "read", asked.Permissions.GetContents(), "write asked, read granted: read")
		require.Equal(t, "write", asked.Permissions.GetIssues())
		require.Empty(t, asked.Permissions.GetChecks(), "not granted: not asked")
	})
}
