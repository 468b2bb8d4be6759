package github_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/githubapp"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

const repoName = "octo/widgets"

type env struct {
	fake  *fakegithub.Server
	gh    *github.Client // the installation's client, as the Executor gets it
	token string
	bare  string
}

// setup starts a fake with octo/widgets (main: README.md, go.mod) and an
// installation client for installation 7.
func setup(t *testing.T) *env {
	t.Helper()
	return setupWith(t, fakegithub.New(t))
}

// setupWith is setup with a fake of the test's making.
func setupWith(t *testing.T, fake *fakegithub.Server) *env {
	t.Helper()
	bare := fake.AddRepo(t, repoName, "main", map[string]string{"README.md": "# widgets\n", "go.mod": "module widgets\n"})
	c, err := githubapp.New(githubapp.Config{AppID: fake.AppID, PrivateKey: fake.PrivateKey(), BaseURL: fake.URL})
	require.NoError(t, err)
	tok, err := c.InstallationToken(context.Background(), 7)
	require.NoError(t, err)
	return &env{fake: fake, gh: c.Installation(7), token: tok, bare: bare}
}

// git runs git isolated from the machine's configuration.
func git(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.com", "GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.com")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(t, dir, args...)
	require.NoError(t, err, out)
	return out
}

// authHeader is the -c option that authenticates git with the token.
func (e *env) authHeader() string {
	return "http.extraHeader=Authorization: " + fakegithub.BasicAuth(e.token)
}

// pushBranch clones the repository, commits files on branch and pushes it
// over HTTP, returning the commit.
func (e *env) pushBranch(t *testing.T, branch string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	mustGit(t, "", "-c", e.authHeader(), "clone", "--quiet", e.fake.URL+"/git/"+repoName+".git", dir)
	mustGit(t, dir, "checkout", "--quiet", "-b", branch)
	for p, body := range files {
		require.NoError(t, os.WriteFile(dir+"/"+p, []byte(body), 0o600))
	}
	mustGit(t, dir, "add", "-A")
	mustGit(t, dir, "commit", "--quiet", "-m", "change "+branch)
	mustGit(t, dir, "-c", e.authHeader(), "push", "--quiet", "origin", branch)
	return mustGit(t, dir, "rev-parse", "HEAD")
}

// graphql posts query with the installation's client and returns data,
// failing on GraphQL errors.
func graphql(t *testing.T, e *env, query string, vars map[string]any) map[string]any {
	t.Helper()
	data, errs := graphqlRaw(t, e, query, vars)
	require.Empty(t, errs)
	return data
}

func graphqlRaw(t *testing.T, e *env, query string, vars map[string]any) (map[string]any, []map[string]any) {
	t.Helper()
	req, err := e.gh.NewRequest("POST", e.fake.URL+"/graphql", map[string]any{"query": query, "variables": vars})
	require.NoError(t, err)
	var out struct {
		Data   map[string]any   `json:"data"`
		Errors []map[string]any `json:"errors"`
	}
	_, err = e.gh.Do(context.Background(), req, &out)
	require.NoError(t, err)
	return out.Data, out.Errors
}

// dig walks nested JSON objects.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
