package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Concurrent Tickets of one repository run its setup once: the others
// wait for the lock and get the same cache, complete.
func TestSetupConcurrentTicketsBuildOnce(t *testing.T) {
	ctx, e, m := sandboxManager(t)
	script := []byte("#!/bin/sh\nmkdir -p \"$SUPERAGENT_CACHE/bin\"\nsleep 1\necho built > \"$SUPERAGENT_CACHE/bin/marker\"\n")
	var wg sync.WaitGroup
	results := make([]SetupResult, 3)
	errs := make([]error, 3)
	for i := range results {
		w, err := m.Prepare(ctx, int64(i+1), e.remote, "superagent/t")
		require.NoError(t, err)
		wg.Go(func() { results[i], errs[i] = w.Setup(ctx, "o/r", script, nil) })
	}
	wg.Wait()
	ran := 0
	for i, r := range results {
		require.NoError(t, errs[i])
		require.True(t, r.OK, "%+v", r)
		if !r.Cached {
			ran++
		}
		require.Equal(t, results[0].CacheDir, r.CacheDir)
	}
	require.Equal(t, 1, ran, "setup ran once")
	b, err := os.ReadFile(filepath.Join(results[0].CacheDir, "bin", "marker"))
	require.NoError(t, err)
	require.Equal(t, "built\n", string(b))
	w1, err := m.Open(1)
	require.NoError(t, err)
	require.Equal(t, results[0].CacheDir, w1.SetupCache("o/r"))

	// Commands see it read-only, with its bin on PATH.
	w, err := m.Open(1)
	require.NoError(t, err)
	res, err := w.With(results[0].CacheDir, []string{"EXTRA=yes"}).Run(ctx, "cat /cache/bin/marker; echo extra=$EXTRA; touch /cache/x || echo read-only", ".", 0)
	require.NoError(t, err)
	require.Contains(t, res.Output, "built\nextra=yes\n")
	require.Contains(t, res.Output, "read-only")
}

// A setup that passes its cache quota or its timeout fails, and keeps no
// cache; the next run of the same script runs again.
func TestSetupLimitsFailAndKeepNothing(t *testing.T) {
	requireBwrap(t)
	ctx := context.Background()
	e := setup(t)
	m := e.manager(t, Config{Sandbox: SandboxBwrap, SetupMaxBytes: 1 << 20, SetupTimeout: 2 * time.Second})
	w, err := m.Prepare(ctx, 1, e.remote, "superagent/t")
	require.NoError(t, err)

	big := []byte("head -c 4000000 /dev/zero > $SUPERAGENT_CACHE/big; sleep 5; echo wrote\n")
	r, err := w.Setup(ctx, "o/r", big, nil)
	require.NoError(t, err)
	require.False(t, r.OK)
	require.True(t, r.OverQuota, "%+v", r)
	require.Contains(t, r.Tail, "setup cache passed its disk quota of 1 MiB")
	require.Empty(t, w.SetupCache("o/r"))

	slow := []byte("echo starting\nsleep 30\n")
	r, err = w.Setup(ctx, "o/r", slow, nil)
	require.NoError(t, err)
	require.True(t, r.TimedOut, "%+v", r)
	require.Contains(t, r.Tail, "starting")
	r, err = w.Setup(ctx, "o/r", slow, nil)
	require.NoError(t, err)
	require.False(t, r.Cached, "a failure is not cached")
	entries, err := os.ReadDir(filepath.Join(e.root, ".setup", "o~r"))
	require.NoError(t, err)
	require.Empty(t, entries, "no cache and no build left")
}

// TestSetupRunsOnACleanCheckout: setup sees the default branch at the
// commit origin/HEAD names, never the Ticket's modified or untracked
// files, and no .git.
func TestSetupRunsOnACleanCheckout(t *testing.T) {
	ctx, e, m := sandboxManager(t)
	w, err := m.Prepare(ctx, 1, e.remote, "superagent/t")
	require.NoError(t, err)
	writeFile(t, w, "README.md", "changed by the ticket\n")
	writeFile(t, w, "tools/git", "#!/bin/sh\necho PLANTED\n")
	script := []byte("cat /workspace/README.md > $SUPERAGENT_CACHE/readme; ls -A /workspace > $SUPERAGENT_CACHE/ls\n")
	r, err := w.Setup(ctx, "o/r", script, nil)
	require.NoError(t, err)
	require.True(t, r.OK, "%+v", r)
	require.Equal(t, hostGit(t, e.bare, "rev-parse", "main"), r.BaseCommit)
	b, err := os.ReadFile(filepath.Join(r.CacheDir, "readme"))
	require.NoError(t, err)
	require.Equal(t, "hello\n", string(b))
	b, err = os.ReadFile(filepath.Join(r.CacheDir, "ls"))
	require.NoError(t, err)
	require.NotContains(t, string(b), "tools")
	require.NotContains(t, string(b), ".git")
	require.Contains(t, string(b), "README.md")
	// The Ticket's own files are as it left them.
	b, err = os.ReadFile(filepath.Join(w.Dir(), "README.md"))
	require.NoError(t, err)
	require.Equal(t, "changed by the ticket\n", string(b))
	require.Contains(t, hostGit(t, w.Dir(), "status", "--short"), "M README.md")
}

// TestSetupCacheCannotPoisonTheNextTicket: the attack of hostile round
// three. A setup script that installs the repository's tools into
// /cache/bin, a Ticket that plants a git among them in its work tree and
// tries /cache/bin/git itself: the next Ticket's git, in the sandbox and
// on the host, is the real one.
func TestSetupCacheCannotPoisonTheNextTicket(t *testing.T) {
	ctx, e, m := sandboxManager(t)
	script := []byte("mkdir -p $SUPERAGENT_CACHE/bin && cp -r /workspace/tools/. $SUPERAGENT_CACHE/bin/ 2>/dev/null; true\n")

	w1, err := m.Prepare(ctx, 1, e.remote, "superagent/t-1")
	require.NoError(t, err)
	writeFile(t, w1, "tools/git", "#!/bin/sh\necho PLANTED >&2; touch /workspace/pwned\n")
	require.NoError(t, os.Chmod(filepath.Join(w1.Dir(), "tools", "git"), 0o755))
	r, err := w1.Setup(ctx, "o/r", script, nil)
	require.NoError(t, err)
	require.True(t, r.OK, "%+v", r)
	require.NoFileExists(t, filepath.Join(r.CacheDir, "bin", "git"), "setup ran on the default branch, not the Ticket's files")
	res := run(t, w1.With(r.CacheDir, nil), "printf '#!/bin/sh\\necho PLANTED\\n' > /cache/bin/git && chmod +x /cache/bin/git && echo WROTE")
	require.NotContains(t, res.Output, "WROTE")

	// Even a git that setup itself left in /cache/bin comes after the
	// system's on PATH.
	planted := filepath.Join(r.CacheDir, "bin", "git")
	require.NoError(t, os.WriteFile(planted, []byte("#!/bin/sh\necho PLANTED\n"), 0o755))
	w2, err := m.Prepare(ctx, 2, e.remote, "superagent/t-2")
	require.NoError(t, err)
	r2, err := w2.Setup(ctx, "o/r", script, nil)
	require.NoError(t, err)
	require.True(t, r2.Cached)
	res = run(t, w2.With(r2.CacheDir, nil), "command -v git; git status --short; echo PATH=$PATH")
	require.Equal(t, 0, res.ExitCode, res.Output)
	require.NotContains(t, res.Output, "PLANTED")
	require.True(t, strings.HasPrefix(res.Output, "/usr/bin/git\n"), res.Output)
	require.Contains(t, res.Output, "PATH=/usr/local/bin:/usr/bin:/bin")
	st, err := w2.Status(ctx)
	require.NoError(t, err)
	require.NotContains(t, st, "PLANTED")
	require.NoFileExists(t, filepath.Join(w2.Dir(), "pwned"))
}

// TestSetupKeyFollowsTheLockFiles: the cache is keyed by the script and
// the default branch's lock files; another repository finds none of it.
func TestSetupKeyFollowsTheLockFiles(t *testing.T) {
	ctx, e, m := sandboxManager(t)
	script := []byte("echo built > $SUPERAGENT_CACHE/marker\n")
	w, err := m.Prepare(ctx, 1, e.remote, "superagent/t-1")
	require.NoError(t, err)
	r1, err := w.Setup(ctx, "o/r", script, nil)
	require.NoError(t, err)
	require.False(t, r1.Cached)
	require.Empty(t, r1.LockFiles)

	// The default branch gains a go.sum: a new key, setup runs again.
	seed := t.TempDir()
	hostGit(t, seed, "clone", "--quiet", e.bare, ".")
	require.NoError(t, os.WriteFile(filepath.Join(seed, "go.sum"), []byte("example.com/x v1.0.0 h1:abc=\n"), 0o644))
	hostGit(t, seed, "add", "go.sum")
	hostGit(t, seed, "commit", "--quiet", "-m", "deps")
	hostGit(t, seed, "push", "--quiet", "origin", "main")
	w2, err := m.Prepare(ctx, 2, e.remote, "superagent/t-2")
	require.NoError(t, err)
	r2, err := w2.Setup(ctx, "o/r", script, nil)
	require.NoError(t, err)
	require.False(t, r2.Cached, "a new lock file, a new cache")
	require.NotEqual(t, r1.Key, r2.Key)
	require.Equal(t, []string{"go.sum"}, r2.LockFiles)
	w3, err := m.Prepare(ctx, 3, e.remote, "superagent/t-3")
	require.NoError(t, err)
	r3, err := w3.Setup(ctx, "o/r", script, nil)
	require.NoError(t, err)
	require.True(t, r3.Cached)
	require.Equal(t, r2.Key, r3.Key)

	require.Equal(t, r3.CacheDir, w3.SetupCache("o/r"))
	require.Empty(t, w3.SetupCache("o/other"), "one repository never sees another's cache")
}

// sandboxManager is a test repository and a Manager with bubblewrap.
func sandboxManager(t *testing.T) (context.Context, *testEnv, *Manager) {
	t.Helper()
	requireBwrap(t)
	e := setup(t)
	return context.Background(), e, e.manager(t, Config{Sandbox: SandboxBwrap})
}
