package workspace

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// outside is the module's tests on the host, outside any sandbox, with a
// build cache of its own: the laptop's figure.
type outside struct {
	t          testing.TB
	dir, cache string
}

// newOutside writes the module to a directory of its own and warms its
// build cache with a first run.
func newOutside(t testing.TB, files map[string]string) *outside {
	t.Helper()
	o := &outside{t: t, dir: tempDir(t), cache: tempDir(t)}
	for p, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(o.dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(o.dir, p), []byte(text), 0o644))
	}
	o.warm()
	return o
}

// warm runs the module's tests once more, warm, and returns the time.
// Each sandboxed run is measured right after one of these, so the pair
// sees the same load on a shared machine.
func (o *outside) warm() time.Duration {
	o.t.Helper()
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir = o.dir
	cmd.Env = append(os.Environ(), "GOCACHE="+o.cache, "GOFLAGS=", "GOTOOLCHAIN=local")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	require.NoError(o.t, err, "%s", out)
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
	laptop := newOutside(t, chiModule(t))

	w1, setup1 := c.ticket(t, 1)
	require.False(t, setup1.Cached)
	require.Contains(t, setup1.LockFiles, "go.mod")
	firstOut, first := laptop.warm(), timedTook(t, w1, goTest)
	secondOut := laptop.warm()
	second, secondTook := timed(t, w1, goTest)
	requireAllCached(t, second.Output, "the second run of a Ticket reruns and recompiles nothing")

	w2, setup2 := c.ticket(t, 2)
	require.True(t, setup2.Cached)
	t2Out := laptop.warm()
	t2first, t2Took := timed(t, w2, goTest)
	requireAllCached(t, t2first.Output, "the next Ticket starts from setup's warmed caches")

	t.Logf("go test ./... of github.com/go-chi/chi/v5, each sandboxed run right after the same command outside the sandbox, warm: "+
		"setup (once per repository): %s; ticket 1 first run: %s (%.2f× %s outside), second run: %s (%.2f× %s); ticket 2 first run: %s (%.2f× %s)",
		setup1.Duration.Round(time.Millisecond),
		first.Round(time.Millisecond), ratio(first, firstOut), firstOut.Round(time.Millisecond),
		secondTook.Round(time.Millisecond), ratio(secondTook, secondOut), secondOut.Round(time.Millisecond),
		t2Took.Round(time.Millisecond), ratio(t2Took, t2Out), t2Out.Round(time.Millisecond))

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

// timedTook is timed's wall time alone.
func timedTook(t testing.TB, ws *Workspace, command string) time.Duration {
	t.Helper()
	_, took := timed(t, ws, command)
	return took
}

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
// ./...` outside the sandbox with a warm build cache: the repository's
// setup (once per repository and lock files, which warms the build
// caches), a Ticket's first test run, its later runs, and later Tickets'
// first runs. Each sandboxed run comes right after an outside run and is
// divided by it, so a shared machine's load moves both alike; the later
// runs and the later Tickets are measured goTestRounds times each, and
// the lowest, median and highest ratios reported. Run it once:
// -benchtime 1x.
func BenchmarkGoTestCycle(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bwrap is not installed")
	}
	for b.Loop() {
		c := newGoTestCycle(b)
		laptop := newOutside(b, chiModule(b))
		w1, setup := c.ticket(b, 1)
		firstOut, first := laptop.warm(), timedTook(b, w1, goTest)
		var outs, later, next []time.Duration
		var laterRatio, nextRatio []float64
		for i := range goTestRounds {
			out := laptop.warm()
			took := timedTook(b, w1, goTest)
			outs, later, laterRatio = append(outs, out), append(later, took), append(laterRatio, ratio(took, out))
			w, _ := c.ticket(b, int64(2+i))
			out = laptop.warm()
			took = timedTook(b, w, goTest)
			outs, next, nextRatio = append(outs, out), append(next, took), append(nextRatio, ratio(took, out))
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(median(outs)), "outside-warm-ms")
		b.ReportMetric(ms(setup.Duration), "setup-ms")
		b.ReportMetric(ms(first), "first-ms")
		b.ReportMetric(ratio(first, firstOut), "first/outside")
		b.ReportMetric(ms(median(later)), "later-ms")
		b.ReportMetric(ms(median(next)), "next-ticket-first-ms")
		for _, r := range []struct {
			name string
			v    []float64
		}{{"later/outside", laterRatio}, {"next-first/outside", nextRatio}} {
			slices.Sort(r.v)
			b.ReportMetric(r.v[0], r.name+"-min")
			b.ReportMetric(r.v[len(r.v)/2], r.name+"-median")
			b.ReportMetric(r.v[len(r.v)-1], r.name+"-max")
		}
	}
}

// goTestRounds is how many paired runs BenchmarkGoTestCycle takes of a
// Ticket's later runs and of later Tickets' first runs.
const goTestRounds = 5

// median returns the middle of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestBuildCacheLayers: a Ticket starts from the build caches setup
// warmed, keeps its own writes between its commands, and never writes
// setup's layer; another Ticket of the repository sees none of the
// first one's writes; and the layers are mounted only for the command
// (the service's own mount table never shows them). Fast: no compiler.
func TestBuildCacheLayers(t *testing.T) {
	ctx, e, m := sandboxManager(t)
	script := []byte("echo warm > /build-cache/warm\n")
	ticket := func(id int64) (*Workspace, SetupResult) {
		w, err := m.Prepare(ctx, id, e.remote, fmt.Sprintf("superagent/t-%d", id))
		require.NoError(t, err)
		r, err := w.Setup(ctx, "o/r", script, nil)
		require.NoError(t, err)
		require.True(t, r.OK, "%+v", r)
		return w.With(r.CacheDir, nil), r
	}
	w1, r1 := ticket(1)
	lower := filepath.Join(filepath.Dir(r1.CacheDir), "build")
	before := treeListing(t, lower)

	res := run(t, w1, "cat /build-cache/warm && echo mine > /build-cache/mine && rm -f /build-cache/warm")
	require.Equal(t, 0, res.ExitCode, res.Output)
	require.Equal(t, "warm\n", res.Output)
	res = run(t, w1, "cat /build-cache/mine; test ! -e /build-cache/warm && echo gone")
	require.Equal(t, "mine\ngone\n", res.Output, "a Ticket's build caches survive between its commands")
	require.Equal(t, before, treeListing(t, lower), "setup's layer is unchanged")

	w2, _ := ticket(2)
	res = run(t, w2, "cat /build-cache/warm; test ! -e /build-cache/mine && echo clean")
	require.Equal(t, "warm\nclean\n", res.Output, "the next Ticket starts from setup's layer alone")

	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	require.NotContains(t, string(mounts), "superagent-build", "the overlay stays in the command's mount namespace")
}
