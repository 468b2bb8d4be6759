package github_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

func TestGetRepository(t *testing.T) {
	e := setup(t)
	r, _, err := e.gh.Repositories.Get(context.Background(), "octo", "widgets")
	require.NoError(t, err)
	require.Equal(t, "widgets", r.GetName())
	require.Equal(t, repoName, r.GetFullName())
	require.Equal(t, "main", r.GetDefaultBranch())
	require.True(t, r.GetPrivate())
	require.NotZero(t, r.GetID())
	require.Equal(t, e.fake.URL+"/git/octo/widgets.git", r.GetCloneURL())
	require.Equal(t, "https://github.com/octo/widgets", r.GetHTMLURL())

	_, resp, err := e.gh.Repositories.Get(context.Background(), "octo", "nope")
	require.Error(t, err)
	require.Equal(t, 404, resp.StatusCode)
}

func TestGitOverHTTP(t *testing.T) {
	e := setup(t)
	url := e.fake.URL + "/git/" + repoName + ".git"

	t.Run("clone needs a token", func(t *testing.T) {
		out, err := git(t, "", "clone", "--quiet", url, filepath.Join(t.TempDir(), "c"))
		require.Error(t, err)
		require.Contains(t, out, "could not read Username", "a 401 asking for Basic credentials")
		bad := "http.extraHeader=Authorization: " + fakegithub.BasicAuth("ghs_forged")
		_, err = git(t, "", "-c", bad, "clone", "--quiet", url, filepath.Join(t.TempDir(), "c"))
		require.Error(t, err)
		require.NotZero(t, e.fake.Count("GET", "/git/octo/widgets.git/info/refs"))
	})

	t.Run("clone and push with a token", func(t *testing.T) {
		sha := e.pushBranch(t, "superagent/fix", map[string]string{"fix.go": "package widgets\n"})
		got, ok := e.fake.Branch(t, repoName, "superagent/fix")
		require.True(t, ok)
		require.Equal(t, sha, got)
		require.Equal(t, "package widgets\n", mustGit(t, "", "--git-dir", e.bare, "show", "superagent/fix:fix.go")+"\n")
		require.Equal(t, 1, e.fake.Count("POST", "/git/octo/widgets.git/git-receive-pack"))
	})

	t.Run("credentials in the URL", func(t *testing.T) {
		withCreds := strings.Replace(url, "http://", "http://x-access-token:"+e.token+"@", 1)
		dir := filepath.Join(t.TempDir(), "c")
		mustGit(t, "", "clone", "--quiet", withCreds, dir)
		require.FileExists(t, filepath.Join(dir, "README.md"))
	})

	t.Run("push without a token fails", func(t *testing.T) {
		dir := t.TempDir()
		mustGit(t, "", "-c", e.authHeader(), "clone", "--quiet", url, dir)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "x"), []byte("x"), 0o600))
		mustGit(t, dir, "add", "x")
		mustGit(t, dir, "commit", "--quiet", "-m", "x")
		_, err := git(t, dir, "push", "--quiet", "origin", "HEAD:sneaky")
		require.Error(t, err)
		_, ok := e.fake.Branch(t, repoName, "sneaky")
		require.False(t, ok)
	})
}

func TestSeedAndPushAs(t *testing.T) {
	e := setup(t)
	main, ok := e.fake.Branch(t, repoName, "main")
	require.True(t, ok)
	require.Equal(t, "Seed <seed@example.com>", mustGit(t, "", "--git-dir", e.bare, "log", "-1", "--format=%an <%ae>", "main"))
	require.Equal(t, "README.md\ngo.mod", mustGit(t, "", "--git-dir", e.bare, "ls-tree", "--name-only", "main"))

	sha := e.fake.PushAs(t, repoName, "person/fix", map[string]string{"docs/fix.md": "fixed\n"}, "Fix it")
	require.Equal(t, main, mustGit(t, "", "--git-dir", e.bare, "rev-parse", sha+"^"))
	require.Equal(t, "Fix it", mustGit(t, "", "--git-dir", e.bare, "log", "-1", "--format=%s", "person/fix"))
	require.Equal(t, "README.md\ndocs\ngo.mod", mustGit(t, "", "--git-dir", e.bare, "ls-tree", "--name-only", "person/fix"))

	again := e.fake.PushAs(t, repoName, "person/fix", map[string]string{"README.md": "# better\n"}, "Again")
	require.Equal(t, sha, mustGit(t, "", "--git-dir", e.bare, "rev-parse", again+"^"))
	got, _ := e.fake.Branch(t, repoName, "person/fix")
	require.Equal(t, again, got)
	_, ok = e.fake.Branch(t, repoName, "absent")
	require.False(t, ok)
}

// GitHub keeps custom refs outside refs/heads and refs/tags (a hidden
// refs/superagent/wip/N) for a token with contents: write, serves them
// to a fetch that names them, and refuses pushes to refs/pull/ and
// pushes by a token that may only read.
func TestGitCustomRefs(t *testing.T) {
	e := setup(t)
	url := e.fake.URL + "/git/" + repoName + ".git"
	dir := t.TempDir()
	mustGit(t, "", "-c", e.authHeader(), "clone", "--quiet", url, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "wip.txt"), []byte("half done\n"), 0o600))
	mustGit(t, dir, "add", "wip.txt")
	mustGit(t, dir, "commit", "--quiet", "-m", "wip")
	sha := mustGit(t, dir, "rev-parse", "HEAD")

	mustGit(t, dir, "-c", e.authHeader(), "push", "--quiet", "origin", "HEAD:refs/superagent/wip/7")
	require.Equal(t, sha, mustGit(t, "", "--git-dir", e.bare, "rev-parse", "refs/superagent/wip/7"))

	other := t.TempDir()
	mustGit(t, "", "-c", e.authHeader(), "clone", "--quiet", url, other)
	require.Empty(t, mustGit(t, other, "for-each-ref", "refs/superagent/"), "a clone does not bring custom refs")
	mustGit(t, other, "-c", e.authHeader(), "fetch", "--quiet", "origin", "+refs/superagent/wip/7:refs/superagent/wip/7")
	require.Equal(t, sha, mustGit(t, other, "rev-parse", "refs/superagent/wip/7"))

	out, err := git(t, dir, "-c", e.authHeader(), "push", "--quiet", "origin", "HEAD:refs/pull/1/head")
	require.Error(t, err)
	require.Contains(t, out, "deny updating a hidden ref")

	require.Equal(t, 1, e.fake.Pushes(repoName, "refs/superagent/wip/7"))
	require.Equal(t, 1, e.fake.Pushes(repoName, "refs/pull/1/head"), "counted though refused")
	require.Zero(t, e.fake.Pushes(repoName, "refs/heads/main"))
	mustGit(t, dir, "-c", e.authHeader(), "push", "--quiet", "origin", ":refs/superagent/wip/7")
	_, err = git(t, "", "--git-dir", e.bare, "rev-parse", "--verify", "--quiet", "refs/superagent/wip/7")
	require.Error(t, err, "deleted")

	fake := fakegithub.New(t)
	fake.SetGranted(map[string]string{"contents": "read", "metadata": "read"})
	ro := setupWith(t, fake)
	roDir := t.TempDir()
	mustGit(t, "", "-c", ro.authHeader(), "clone", "--quiet", fake.URL+"/git/"+repoName+".git", roDir)
	out, err = git(t, roDir, "-c", ro.authHeader(), "push", "--quiet", "origin", "HEAD:refs/superagent/wip/7")
	require.Error(t, err)
	require.Contains(t, out, "403")
}
