package workspace

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chiModule is a real Go module's source: the router library
// github.com/go-chi/chi/v5 (MIT licence), which this module depends on,
// read from the Go module cache, so no network is needed. Its tests run
// offline.
func chiModule(t testing.TB) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/go-chi/chi/v5")
	out, err := cmd.Output()
	require.NoError(t, err, "finding chi in the module cache")
	dir := strings.TrimSpace(string(out))
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(raw)
		return nil
	}))
	return files
}

// goRoot is the Go toolchain, bound read-only into the sandbox.
func goRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// goTestCycle is one Ticket's view of a real module: a Manager whose
// sandbox has Go, the module in a remote, and the setup script that warms
// the repository's build caches.
type goTestCycle struct {
	m      *Manager
	remote Remote
}

const goSetup = "#!/bin/sh\nset -e\ncd /workspace\ngo test ./... >/dev/null\necho warmed\n"

// goTest is the command a Ticket runs: the module's tests.
const goTest = "go test ./..."

func newGoTestCycle(t testing.TB) *goTestCycle {
	t.Helper()
	srv := newGitServer(t, testToken)
	url, _ := srv.newRepo("acme", "router", chiModule(t))
	m, err := NewManager(Config{Root: filepath.Join(tempDir(t), "workspaces"), ExtraReadOnly: []string{goRoot(t)}})
	require.NoError(t, err)
	return &goTestCycle{m: m, remote: Remote{URL: url, Token: testToken, BaseBranch: "main"}}
}

func tempDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "buildcache-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = removeAll(d) })
	return d
}

// ticket prepares Ticket id with the repository's setup cache, setup
// running when it has not yet.
func (c *goTestCycle) ticket(t testing.TB, id int64) (*Workspace, SetupResult) {
	t.Helper()
	ctx := context.Background()
	ws, err := c.m.Prepare(ctx, id, c.remote, fmt.Sprintf("superagent/ticket-%d", id))
	require.NoError(t, err)
	res, err := ws.Setup(ctx, "acme/router", []byte(goSetup), nil)
	require.NoError(t, err)
	require.True(t, res.OK, "%+v", res)
	return ws.With(res.CacheDir, nil), res
}

// timed runs command in ws and returns its result and wall time.
func timed(t testing.TB, ws *Workspace, command string) (Result, time.Duration) {
	t.Helper()
	start := time.Now()
	res, err := ws.Run(context.Background(), command, "", 10*time.Minute)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Output)
	return res, time.Since(start)
}

// outside runs the module's tests on the host, outside any sandbox, with
// a build cache of its own warmed by a first run, and returns the second
// run's time: the laptop's figure.
func outsideWarm(t testing.TB, files map[string]string) time.Duration {
	t.Helper()
	dir, cache := tempDir(t), tempDir(t)
	for p, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(text), 0o644))
	}
	var took time.Duration
	for range 2 {
		cmd := exec.Command("go", "test", "./...")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOCACHE="+cache, "GOFLAGS=", "GOTOOLCHAIN=local")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took = time.Since(start)
		require.NoError(t, err, "%s", out)
	}
	return took
}

// TestBuildCachesOfARealModule: a Ticket's build caches survive between
// its commands, setup's warmed caches start every later Ticket of the
// repository, and a Ticket's writes never reach them. The figures are
// printed, not asserted; the mechanism is: Go reports the tests (cached).
func TestBuildCachesOfARealModule(t *testing.T) {
	requireBwrap(t)
	if testing.Short() {
		t.Skip("compiles and tests a real module")
	}
	c := newGoTestCycle(t)
	laptop := outsideWarm(t, chiModule(t))

	w1, setup1 := c.ticket(t, 1)
	require.False(t, setup1.Cached)
	require.Contains(t, setup1.LockFiles, "go.mod")
	first, firstTook := timed(t, w1, goTest)
	second, secondTook := timed(t, w1, goTest)
	requireAllCached(t, second.Output, "the second run of a Ticket reruns and recompiles nothing")

	w2, setup2 := c.ticket(t, 2)
	require.True(t, setup2.Cached)
	t2first, t2Took := timed(t, w2, goTest)
	requireAllCached(t, t2first.Output, "the next Ticket starts from setup's warmed caches")

	t.Logf("go test ./... of github.com/go-chi/chi/v5: outside the sandbox, warm: %s; setup (once per repository): %s; "+
		"ticket 1 first run: %s (%.2f× outside), second run: %s (%.2f× outside); ticket 2 first run: %s (%.2f× outside)",
		laptop.Round(time.Millisecond), setup1.Duration.Round(time.Millisecond),
		firstTook.Round(time.Millisecond), ratio(firstTook, laptop), secondTook.Round(time.Millisecond), ratio(secondTook, laptop),
		t2Took.Round(time.Millisecond), ratio(t2Took, laptop))
	_ = first

	t.Run("TicketWritesNeverReachTheSharedLayer", func(t *testing.T) {
		lower := filepath.Join(filepath.Dir(setup1.CacheDir), "build")
		before := treeListing(t, lower)
		res := run(t, w2, "echo planted > /build-cache/planted && rm -rf /build-cache/go-build/* && go clean -cache && ls -A /build-cache")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.Equal(t, before, treeListing(t, lower), "setup's layer is unchanged")
		// Another Ticket of the repository still starts warm, and sees
		// nothing of ticket 2's.
		w3, _ := c.ticket(t, 3)
		res, _ = timed(t, w3, "test ! -e /build-cache/planted && "+goTest)
		requireAllCached(t, res.Output, "ticket 3 starts from setup's layer, untouched by ticket 2")
		// And /cache stays read-only to a Ticket.
		res = run(t, w3, "mkdir -p /cache/bin && echo x > /cache/bin/git")
		require.NotEqual(t, 0, res.ExitCode, res.Output)
	})

	t.Run("AnotherRepositorySeesNone", func(t *testing.T) {
		require.Empty(t, w2.SetupCache("acme/other"))
		srv := newGitServer(t, testToken)
		url, _ := srv.newRepo("acme", "other", map[string]string{"README.md": "other\n"})
		wo, err := c.m.Prepare(context.Background(), 9, Remote{URL: url, Token: testToken, BaseBranch: "main"}, "superagent/ticket-9")
		require.NoError(t, err)
		res := run(t, wo, "ls -A /build-cache; ls /cache 2>&1 | head -1")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.NotContains(t, res.Output, "go-build")
		require.Contains(t, res.Output, "No such file")
	})
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// requireAllCached checks that go test took every package's result from
// the cache: each "ok" line says (cached), and there is at least one.
func requireAllCached(t *testing.T, output, why string) {
	t.Helper()
	n := 0
	for line := range strings.SplitSeq(output, "\n") {
		if strings.HasPrefix(line, "ok ") {
			n++
			require.True(t, strings.HasSuffix(strings.TrimSpace(line), "(cached)"), "%s: %s\n%s", why, line, output)
		}
	}
	require.Positive(t, n, output)
}

// treeListing lists dir's entries with their sizes and times.
func treeListing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		return nil
	}))
	return b.String()
}

// BenchmarkGoTestCycle states what a sandboxed test cycle of a real Go
// module (github.com/go-chi/chi/v5) costs, beside the same `go test
// ./...` outside the sandbox with a warm build cache, measured in the same
// run: the repository's setup (once per repository and lock files, which
// warms the build caches), a Ticket's first and second test runs, and the
// next Ticket's first. Run it once: -benchtime 1x.
func BenchmarkGoTestCycle(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bwrap is not installed")
	}
	for b.Loop() {
		c := newGoTestCycle(b)
		laptop := outsideWarm(b, chiModule(b))
		w1, setup := c.ticket(b, 1)
		_, first := timed(b, w1, goTest)
		_, second := timed(b, w1, goTest)
		w2, _ := c.ticket(b, 2)
		_, next := timed(b, w2, goTest)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(laptop), "outside-warm-ms")
		b.ReportMetric(ms(setup.Duration), "setup-ms")
		b.ReportMetric(ms(first), "first-ms")
		b.ReportMetric(ms(second), "second-ms")
		b.ReportMetric(ms(next), "next-ticket-first-ms")
		b.ReportMetric(ratio(second, laptop), "second/outside")
		b.ReportMetric(ratio(next, laptop), "next-first/outside")
	}
}
