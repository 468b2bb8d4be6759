package workspace

import (
	"context"
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var author = Author{Name: "Super Agent", Email: "agent@example.com"}

func TestPrepare(t *testing.T) {
	ctx := context.Background()

	t.Run("ClonesAndCreatesBranchFromBase", func(t *testing.T) {
		e := setup(t)
		m := e.manager(t, Config{})
		w, err := m.Prepare(ctx, 1, e.remote, "superagent/t-1")
		require.NoError(t, err)
		require.Equal(t, filepath.Join(e.root, "ticket-1"), w.Dir())
		require.EqualValues(t, 1, w.TicketID())
		require.FileExists(t, filepath.Join(w.Dir(), "README.md"))
		require.Equal(t, "superagent/t-1", hostGit(t, w.Dir(), "branch", "--show-current"))
		require.Equal(t, hostGit(t, e.bare, "rev-parse", "main"), mustHead(t, w))
		for _, u := range e.server.requestURLs() {
			require.NotContains(t, u, testToken)
		}
	})

	t.Run("AgainKeepsUnpushedAndUncommittedWork", func(t *testing.T) {
		e := setup(t)
		m := e.manager(t, Config{})
		w, err := m.Prepare(ctx, 1, e.remote, "superagent/t-1")
		require.NoError(t, err)
		require.NoError(t, w.WriteFile("new.txt", "local work\n"))
		sha, err := w.Commit(ctx, "local commit", nil, author)
		require.NoError(t, err)
		require.NoError(t, w.WriteFile("dirty.txt", "uncommitted\n"))

		w2, err := m.Prepare(ctx, 1, e.remote, "superagent/t-1")
		require.NoError(t, err)
		require.Equal(t, sha, mustHead(t, w2))
		require.FileExists(t, filepath.Join(w2.Dir(), "dirty.txt"))
		require.Equal(t, "superagent/t-1", hostGit(t, w2.Dir(), "branch", "--show-current"))
	})

	t.Run("TracksBranchOriginHasAndFastForwards", func(t *testing.T) {
		e := setup(t)
		m := e.manager(t, Config{})
		other := pushBranch(t, e, "feature", "f.txt", "one\n")
		w, err := m.Prepare(ctx, 1, e.remote, "feature")
		require.NoError(t, err)
		require.Equal(t, other, mustHead(t, w))
		require.Equal(t, "origin/feature", hostGit(t, w.Dir(), "rev-parse", "--abbrev-ref", "feature@{upstream}"))

		// Someone pushes on top: the next Prepare fast-forwards.
		next := pushBranch(t, e, "feature", "g.txt", "two\n")
		w, err = m.Prepare(ctx, 1, e.remote, "feature")
		require.NoError(t, err)
		require.Equal(t, next, mustHead(t, w))

		// A local commit and a diverged origin: local work stays.
		require.NoError(t, w.WriteFile("h.txt", "mine\n"))
		mine, err := w.Commit(ctx, "mine", nil, author)
		require.NoError(t, err)
		pushBranch(t, e, "feature", "i.txt", "theirs\n")
		w, err = m.Prepare(ctx, 1, e.remote, "feature")
		require.NoError(t, err)
		require.Equal(t, mine, mustHead(t, w))
	})

	t.Run("RecoversInterruptedClone", func(t *testing.T) {
		e := setup(t)
		m := e.manager(t, Config{})
		// A crash mid-clone: a leftover temporary clone and a workspace
		// directory that is no repository.
		leftover := filepath.Join(e.root, ".clone-ticket-7-123")
		require.NoError(t, os.MkdirAll(filepath.Join(leftover, ".git"), 0o755))
		broken := filepath.Join(e.root, "ticket-7")
		require.NoError(t, os.MkdirAll(filepath.Join(broken, ".git", "objects"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(broken, "partial"), []byte("x"), 0o644))

		w, err := m.Prepare(ctx, 7, e.remote, "superagent/t-7")
		require.NoError(t, err)
		require.NoFileExists(t, filepath.Join(w.Dir(), "partial"))
		require.FileExists(t, filepath.Join(w.Dir(), "README.md"))
		require.NoDirExists(t, leftover)

		// A stale index.lock from a killed git does not wedge it either.
		require.NoError(t, os.WriteFile(filepath.Join(w.Dir(), ".git", "index.lock"), nil, 0o644))
		_, err = m.Prepare(ctx, 7, e.remote, "superagent/t-7")
		require.NoError(t, err)
	})

	t.Run("BadTokenFailsWithoutLeakingIt", func(t *testing.T) {
		e := setup(t)
		m := e.manager(t, Config{})
		remote := e.remote
		remote.Token = "ghs_WRONGtoken_DO_NOT_LEAK"
		_, err := m.Prepare(ctx, 1, remote, "b")
		require.Error(t, err)
		require.NotContains(t, err.Error(), remote.Token)
		require.NoDirExists(t, filepath.Join(e.root, "ticket-1"))
	})

	t.Run("RefusesBadInput", func(t *testing.T) {
		e := setup(t)
		m := e.manager(t, Config{})
		for _, tc := range []struct {
			name   string
			remote Remote
			branch string
		}{
			{"CredentialsInURL", Remote{URL: "https://x-access-token:abc@example.com/o/r.git", BaseBranch: "main"}, "b"},
			{"SSHURL", Remote{URL: "ext::sh -c touch% /tmp/pwned", BaseBranch: "main"}, "b"},
			{"OptionBranch", e.remote, "--upload-pack=touch /tmp/pwned"},
			{"DotDotBranch", e.remote, "a/../b"},
			{"NoBase", Remote{URL: e.remote.URL}, "b"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := m.Prepare(ctx, 1, tc.remote, tc.branch)
				require.Error(t, err)
				require.NotContains(t, err.Error(), "abc@")
			})
		}
	})
}

// pushBranch commits file to branch in the bare remote (creating the branch
// from main if needed) and returns the new sha.
func pushBranch(t *testing.T, e *testEnv, branch, file, text string) string {
	t.Helper()
	dir := t.TempDir()
	hostGit(t, dir, "clone", "--quiet", e.bare, ".")
	if hostGit(t, dir, "ls-remote", "origin", "refs/heads/"+branch) != "" {
		hostGit(t, dir, "checkout", "--quiet", branch)
	} else {
		hostGit(t, dir, "checkout", "--quiet", "-b", branch)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644))
	hostGit(t, dir, "add", "-A")
	hostGit(t, dir, "commit", "--quiet", "-m", "push "+file)
	hostGit(t, dir, "push", "--quiet", "origin", branch)
	return hostGit(t, dir, "rev-parse", "HEAD")
}

func mustHead(t *testing.T, w *Workspace) string {
	t.Helper()
	sha, err := w.Head(context.Background())
	require.NoError(t, err)
	return sha
}

func TestCommitAndPush(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	m := e.manager(t, Config{})
	w, err := m.Prepare(ctx, 3, e.remote, "superagent/t-3")
	require.NoError(t, err)

	_, err = w.Commit(ctx, "empty", nil, author)
	require.ErrorIs(t, err, ErrNothingToCommit)

	require.NoError(t, w.WriteFile("a.txt", "a\n"))
	require.NoError(t, w.WriteFile("b.txt", "b\n"))
	status, err := w.Status(ctx)
	require.NoError(t, err)
	require.Contains(t, status, "## superagent/t-3")
	require.Contains(t, status, "?? a.txt")

	// Only the given paths.
	sha, err := w.Commit(ctx, "add a\n\nbody", []string{"a.txt"}, author)
	require.NoError(t, err)
	require.Equal(t, "Super Agent|agent@example.com|Super Agent|agent@example.com|add a",
		hostGit(t, w.Dir(), "log", "-1", "--format=%an|%ae|%cn|%ce|%s", sha))
	require.Equal(t, "a.txt", hostGit(t, w.Dir(), "show", "--name-only", "--format=", sha))

	_, err = w.EditFile("README.md", "hello", "hello there", false)
	require.NoError(t, err)
	diff, err := w.Diff(ctx, false)
	require.NoError(t, err)
	require.Contains(t, diff, "+hello there")
	sha, err = w.Commit(ctx, "the rest", nil, author)
	require.NoError(t, err)

	files, err := w.ChangedFiles(ctx, "main")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"README.md", "a.txt", "b.txt"}, files)

	require.NoError(t, w.Push(ctx, e.remote, "superagent/t-3", nil))
	require.Equal(t, sha, hostGit(t, "", "--git-dir="+e.bare, "log", "-1", "--format=%H", "refs/heads/superagent/t-3"))
	require.Equal(t, hostGit(t, "", "--git-dir="+e.bare, "rev-parse", "main"),
		hostGit(t, "", "--git-dir="+e.bare, "rev-parse", "main"), "main untouched")

	t.Run("TokenInNoFile", func(t *testing.T) {
		encoded := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + testToken))
		for _, dir := range []string{e.root, e.data} {
			err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				require.NoError(t, err)
				if !d.Type().IsRegular() {
					return nil
				}
				data, err := os.ReadFile(p)
				require.NoError(t, err)
				require.NotContains(t, string(data), testToken, p)
				require.NotContains(t, string(data), encoded, p)
				return nil
			})
			require.NoError(t, err)
		}
		for _, u := range e.server.requestURLs() {
			require.NotContains(t, u, testToken)
		}
	})

	t.Run("PushNeverForces", func(t *testing.T) {
		pushBranch(t, e, "superagent/t-3", "theirs.txt", "x\n")
		require.NoError(t, w.WriteFile("c.txt", "c\n"))
		_, err := w.Commit(ctx, "diverge", nil, author)
		require.NoError(t, err)
		err = w.Push(ctx, e.remote, "superagent/t-3", nil)
		require.Error(t, err)
		require.NotContains(t, err.Error(), testToken)
	})

	t.Run("PushErrorHasNoToken", func(t *testing.T) {
		remote := e.remote
		remote.Token = "ghs_WRONGtoken_DO_NOT_LEAK"
		err := w.Push(ctx, remote, "other", nil)
		require.Error(t, err)
		require.NotContains(t, err.Error(), remote.Token)
		require.NotContains(t, err.Error(), base64.StdEncoding.EncodeToString([]byte("x-access-token:"+remote.Token)))
	})

	t.Run("RefusesNestedRepository", func(t *testing.T) {
		require.NoError(t, os.MkdirAll(filepath.Join(w.Dir(), "vendor", "x", ".git"), 0o755))
		_, err := w.Commit(ctx, "nested", nil, author)
		require.ErrorContains(t, err, "nested git repository")
		require.NoError(t, os.RemoveAll(filepath.Join(w.Dir(), "vendor")))
	})

	t.Run("RefusesOverSizeLimit", func(t *testing.T) {
		small := e.manager(t, Config{MaxBytes: 1000})
		w, err := small.Open(3)
		require.NoError(t, err)
		require.NoError(t, w.WriteFile("big.txt", strings.Repeat("x", 2000)))
		_, err = w.Commit(ctx, "big", nil, author)
		require.ErrorContains(t, err, "over its disk quota")
	})
}

func TestOpenRemoveSweep(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	m := e.manager(t, Config{})
	_, err := m.Open(1)
	require.ErrorIs(t, err, fs.ErrNotExist)
	for _, id := range []int64{1, 2, 3} {
		_, err := m.Prepare(ctx, id, e.remote, "b")
		require.NoError(t, err)
	}
	w, err := m.Open(2)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(e.root, "ticket-2"), w.Dir())

	// A read-only directory, as Go's module cache leaves, does not stop removal.
	ro := filepath.Join(w.Dir(), "cache", "ro")
	require.NoError(t, os.MkdirAll(ro, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ro, "f"), nil, 0o444))
	require.NoError(t, os.Chmod(ro, 0o555))

	removed, err := m.Sweep(func(id int64) bool { return id == 1 })
	require.NoError(t, err)
	require.Equal(t, 2, removed)
	_, err = m.Open(2)
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = m.Open(1)
	require.NoError(t, err)

	require.NoError(t, m.Remove(1))
	require.NoError(t, m.Remove(1))
	_, err = m.Open(1)
	require.ErrorIs(t, err, fs.ErrNotExist)
}
