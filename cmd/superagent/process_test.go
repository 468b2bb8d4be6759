package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/probe"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

// binPath is the superagent binary built once for the process tests.
var binPath string

// The process tests call t.Parallel: each has its own processes, fakes,
// free ports, directories and database (a SQLite file or a PostgreSQL
// schema), and spends most of its time waiting for the service (debounces,
// polls, River's rescues), not computing. go test runs as many parallel
// tests at once as there are cores, which leaves the machine mostly idle
// here, so unless -parallel is given this package runs twice as many.
// Tests that change the process itself (t.Chdir, t.Setenv) stay
// sequential, and so run before any parallel one starts.
func TestMain(m *testing.M) {
	flag.Parse()
	if !flagGiven("test.parallel") {
		if err := flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0))); err != nil {
			fmt.Fprintln(os.Stderr, "setting -test.parallel:", err)
			os.Exit(1)
		}
	}
	dir, err := os.MkdirTemp("", "superagent-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "superagent")
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building superagent:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// needSandbox skips a test whose Executor runs commands when bubblewrap is
// not installed; under CI the test runs, and fails without it.
func needSandbox(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("bwrap is not installed")
	}
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// proc is a running superagent process.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	addr   string
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// start runs `superagent <command>` with env added to a minimal environment.
func start(t *testing.T, name string, env map[string]string, command string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(binPath, append([]string{command}, args...)...)
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
		if k == "SUPERAGENT_ADDR" {
			p.addr = v
		}
	}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s stderr (access logs left out):\n%s", p.name, tail(withoutAccessLogs(p.stderr.String()), 60))
		}
	})
	return p
}

func withoutAccessLogs(s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.Contains(line, `"msg":"http request"`) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitHTTP polls path until it answers 200.
func (p *proc) waitHTTP(path string, within time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get("http://" + p.addr + path)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.done:
			p.t.Fatalf("%s exited before %s answered: %v", p.name, path, p.err)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: %s did not answer 200 within %s (last error %v)", p.name, path, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitLog waits until the process logged a line containing needle.
func (p *proc) waitLog(needle string, within time.Duration) {
	p.t.Helper()
	waitFor(p.t, within, p.name+" to log "+needle, func() bool { return strings.Contains(p.stderr.String(), needle) })
}

// stop sends SIGTERM and returns the exit code and how long the exit took.
// A process that was running work lets its jobs finish first, which on a busy
// machine may take a good part of its shutdown deadline (30 s): such tests
// give it shutdownWithin.
func (p *proc) stop(within time.Duration) (int, time.Duration) {
	p.t.Helper()
	begin := time.Now()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
	case <-time.After(within):
		// Ask the Go runtime where it is stuck: SIGQUIT prints every
		// goroutine's stack on stderr before the process exits.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
		p.t.Fatalf("%s did not exit within %s of SIGTERM; its own goroutines:\n%s", p.name, within, ownGoroutines(p.stderr.String()))
	}
	// A job that outlived the shutdown deadline was cancelled, not let finish.
	require.NotContains(p.t, p.stderr.String(), "jobs still running at shutdown deadline", p.name)
	return p.cmd.ProcessState.ExitCode(), time.Since(begin)
}

// ownGoroutines picks, from a Go runtime's stack dump, the goroutines that
// run the project's code.
func ownGoroutines(stderr string) string {
	_, dump, ok := strings.Cut(stderr, "SIGQUIT: quit")
	if !ok {
		return "(no stack dump)"
	}
	var keep []string
	for _, g := range strings.Split(dump, "\n\n") {
		if strings.Contains(g, "superagent-dev/superagent/") {
			keep = append(keep, g)
		}
	}
	return strings.Join(keep, "\n\n")
}

// shutdownWithin is the service's own shutdown deadline and a margin.
const shutdownWithin = 35 * time.Second

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// databases yields a fresh database URL per dialect: a SQLite file, and a
// PostgreSQL schema (its URL carrying the search_path). The two halves run
// side by side: each has its own processes, fakes, ports and directories,
// and most of a process test is waiting for the service, not computing.
func databases(t *testing.T, fn func(t *testing.T, url string)) {
	t.Helper()
	eachDatabase(t, true, fn)
}

// databasesInTurn is databases with one half after the other, for a test
// whose logged figures would be skewed by its other half sharing the
// machine (`make bench` runs such a test alone).
func databasesInTurn(t *testing.T, fn func(t *testing.T, url string)) {
	t.Helper()
	eachDatabase(t, false, fn)
}

func eachDatabase(t *testing.T, parallel bool, fn func(t *testing.T, url string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		if parallel {
			t.Parallel()
		}
		fn(t, "sqlite://"+filepath.Join(t.TempDir(), "superagent.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		if parallel {
			t.Parallel()
		}
		fn(t, postgresURL(t))
	})
}

// postgresSlots bounds the tests that use PostgreSQL at once: their
// processes' pools, with the other packages' tests beside them, must stay
// within the server's connections (100 by default), and a test that
// cannot connect fails.
var postgresSlots = make(chan struct{}, 2)

// postgresURL gives the test a schema of its own, once a PostgreSQL slot
// is free; each process the test starts on it keeps at most 6
// connections.
func postgresURL(t *testing.T) string {
	t.Helper()
	postgresSlots <- struct{}{}
	t.Cleanup(func() { <-postgresSlots })
	return dbtest.SchemaURL(dbtest.PostgresURL(t), dbtest.NewSchema(t)) + "&pool_max_conns=6"
}

func TestServeStartsAnswersAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	databases(t, func(t *testing.T, url string) {
		dataDir := t.TempDir()
		env := map[string]string{
			"SUPERAGENT_ADDR":         freeAddr(t),
			"SUPERAGENT_DATA_DIR":     dataDir,
			"SUPERAGENT_DATABASE_URL": url,
		}
		p := start(t, "serve", env, "serve")
		p.waitHTTP("/healthz", 30*time.Second)
		p.waitHTTP("/readyz", 10*time.Second)

		token, err := os.ReadFile(filepath.Join(dataDir, "admin-token"))
		require.NoError(t, err)
		info, err := os.Stat(filepath.Join(dataDir, "admin-token"))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		require.Contains(t, p.stdout.String(), strings.TrimSpace(string(token)), "a generated token is printed")

		code, took := p.stop(10 * time.Second)
		require.Equal(t, 0, code, "exit code after SIGTERM")
		t.Logf("exited %d in %s", code, took)

		// A second start keeps the stored token and does not print it again.
		env["SUPERAGENT_ADDR"] = freeAddr(t)
		again := start(t, "serve-again", env, "serve")
		again.waitHTTP("/readyz", 30*time.Second)
		require.NotContains(t, again.stdout.String(), strings.TrimSpace(string(token)))
		code, _ = again.stop(10 * time.Second)
		require.Equal(t, 0, code)
	})
}

func TestBadConfigurationExitsWithOneLine(t *testing.T) {
	t.Parallel()
	p := start(t, "bad", map[string]string{"SUPERAGENT_GITHUB_APP_ID": "twelve"}, "serve")
	<-p.done
	require.Equal(t, 2, p.cmd.ProcessState.ExitCode())
	out := strings.TrimSpace(p.stderr.String())
	require.Equal(t, `superagent: configuration: SUPERAGENT_GITHUB_APP_ID: must be a positive integer, got "twelve"`, out)
}

func TestSIGTERMLetsRunningJobFinish(t *testing.T) {
	t.Parallel()
	databases(t, func(t *testing.T, url string) {
		env := map[string]string{
			"SUPERAGENT_ADDR":         freeAddr(t),
			"SUPERAGENT_DATA_DIR":     t.TempDir(),
			"SUPERAGENT_DATABASE_URL": url,
		}
		p := start(t, "serve", env, "serve")
		p.waitHTTP("/readyz", 30*time.Second)

		d, q := openQueue(t, url)
		res, err := q.Insert(context.Background(), probe.Args{Sleep: 1500 * time.Millisecond}, nil)
		require.NoError(t, err)
		waitFor(t, 20*time.Second, "the probe to start", func() bool { return probeCount(t, d, res.Job.ID, "started") == 1 })

		code, _ := p.stop(10 * time.Second)
		require.Equal(t, 0, code)
		require.Equal(t, 1, probeCount(t, d, res.Job.ID, "completed"), "the running job finished before exit")
	})
}

// openQueue opens url with an insert-only River client for the test.
func openQueue(t *testing.T, url string) (*db.DB, *queue.Queue) {
	t.Helper()
	d, err := db.Open(context.Background(), url, db.Options{MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	q := queue.New(d, queue.Config{InsertOnly: true, ID: "test-inserter"})
	require.NoError(t, q.Init())
	return d, q
}

func probeCount(t *testing.T, d *db.DB, jobID int64, event string) int {
	t.Helper()
	var n int
	require.NoError(t, d.QueryRow(context.Background(), "SELECT count(*) FROM probes WHERE job_id = $1 AND event = $2", jobID, event).Scan(&n))
	return n
}

func TestWorkersOnOnePostgresWorkEachJobOnce(t *testing.T) {
	t.Parallel()
	url := postgresURL(t)
	base := map[string]string{"SUPERAGENT_DATABASE_URL": url, "SUPERAGENT_DATA_DIR": t.TempDir()}
	with := func(extra map[string]string) map[string]string {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}
	serve := start(t, "serve", with(map[string]string{"SUPERAGENT_ADDR": freeAddr(t)}), "serve")
	serve.waitHTTP("/readyz", 30*time.Second)
	w1 := start(t, "worker-1", with(nil), "worker")
	w2 := start(t, "worker-2", with(nil), "worker")
	w1.waitLog(`"msg":"working"`, 30*time.Second)
	w2.waitLog(`"msg":"working"`, 30*time.Second)

	d, q := openQueue(t, url)
	ctx := context.Background()
	const jobs = 1000
	params := make([]river.InsertManyParams, jobs)
	for i := range params {
		params[i] = river.InsertManyParams{Args: probe.Args{}}
	}
	for i := 0; i < jobs; i += 100 {
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			for _, p := range params[i : i+100] {
				if _, err := q.InsertTx(ctx, tx, p.Args, nil); err != nil {
					return err
				}
			}
			return nil
		}))
	}

	waitFor(t, 2*time.Minute, "1,000 probes to complete", func() bool {
		var n int
		require.NoError(t, d.QueryRow(ctx, "SELECT count(*) FROM probes WHERE event = 'completed'").Scan(&n))
		return n == jobs
	})
	waitFor(t, time.Minute, "River to record every job completed", func() bool {
		var n int
		require.NoError(t, d.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'probe' AND state = 'completed'").Scan(&n))
		return n == jobs
	})
	var started, distinctJobs, workers, rerun int
	require.NoError(t, d.QueryRow(ctx, "SELECT count(*), count(DISTINCT job_id) FROM probes WHERE event = 'started'").Scan(&started, &distinctJobs))
	require.Equal(t, jobs, started, "every job started exactly once")
	require.Equal(t, jobs, distinctJobs)
	require.NoError(t, d.QueryRow(ctx, "SELECT count(DISTINCT worker) FROM probes").Scan(&workers))
	require.NoError(t, d.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'probe' AND attempt <> 1").Scan(&rerun))
	require.Zero(t, rerun, "no job was attempted twice")
	require.GreaterOrEqual(t, workers, 2, "the work was shared between processes")
	t.Logf("1,000 jobs worked once each by %d processes", workers)

	for _, p := range []*proc{w1, w2, serve} {
		code, _ := p.stop(10 * time.Second)
		require.Equal(t, 0, code, p.name)
	}
}

func TestKilledWorkerJobIsRescuedAndCompletesOnce(t *testing.T) {
	t.Parallel()
	url := postgresURL(t)
	env := func(extra ...string) map[string]string {
		m := map[string]string{
			"SUPERAGENT_DATABASE_URL":     url,
			"SUPERAGENT_DATA_DIR":         t.TempDir(),
			"SUPERAGENT_JOB_RESCUE_AFTER": "4s",
		}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	serve := start(t, "serve", env("SUPERAGENT_ADDR", freeAddr(t)), "serve")
	serve.waitHTTP("/readyz", 30*time.Second)
	worker := start(t, "worker", env(), "worker")
	worker.waitLog(`"msg":"working"`, 30*time.Second)

	d, q := openQueue(t, url)
	ctx := context.Background()
	res, err := q.Insert(ctx, probe.Args{Sleep: 2 * time.Second}, nil)
	require.NoError(t, err)
	waitFor(t, 20*time.Second, "the probe to start", func() bool { return probeCount(t, d, res.Job.ID, "started") == 1 })

	var holder string
	require.NoError(t, d.QueryRow(ctx, "SELECT worker FROM probes WHERE job_id = $1 AND event = 'started'", res.Job.ID).Scan(&holder))
	victim, survivor := serve, worker
	if strings.HasSuffix(holder, fmt.Sprintf("-%d", worker.cmd.Process.Pid)) {
		victim, survivor = worker, serve
	}
	require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
	<-victim.done

	waitFor(t, 2*time.Minute, "the rescued probe to complete", func() bool { return probeCount(t, d, res.Job.ID, "completed") == 1 })
	require.Equal(t, 2, probeCount(t, d, res.Job.ID, "started"), "started once in each process")
	var completer string
	require.NoError(t, d.QueryRow(ctx, "SELECT worker FROM probes WHERE job_id = $1 AND event = 'completed'", res.Job.ID).Scan(&completer))
	require.True(t, strings.HasSuffix(completer, fmt.Sprintf("-%d", survivor.cmd.Process.Pid)), "completed by the survivor, got %s", completer)

	waitFor(t, 30*time.Second, "River to record the job completed", func() bool {
		job, err := q.JobGet(ctx, res.Job.ID)
		require.NoError(t, err)
		return job.State == "completed"
	})
	job, err := q.JobGet(ctx, res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, 2, job.Attempt, "attempted once by the victim, once by the survivor")

	code, _ := survivor.stop(10 * time.Second)
	require.Equal(t, 0, code)
}

func TestPromptsCommandsRoundTrip(t *testing.T) {
	t.Parallel()
	databases(t, func(t *testing.T, url string) {
		env := map[string]string{"SUPERAGENT_DATABASE_URL": url, "SUPERAGENT_DATA_DIR": t.TempDir()}
		runCmd := commandRunner(env)
		dir := filepath.Join(t.TempDir(), "prompts")
		code, out, stderr := runCmd("prompts", "export", dir)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, out, "exported revision 0")

		code, out, _ = runCmd("prompts", "diff", dir)
		require.Equal(t, 0, code, "no difference: exit 0")
		require.Empty(t, out)

		require.NoError(t, os.WriteFile(filepath.Join(dir, "sections", "communication.md"), []byte("Answer in one sentence.\n"), 0o644))
		code, out, _ = runCmd("prompts", "diff", dir)
		require.Equal(t, 1, code, "differences: exit 1")
		require.Contains(t, out, "--- a/sections/communication\trevision 0\n+++ b/sections/communication\t"+dir+"\n@@ -1,3 +1,4 @@\n+Answer in one sentence.\n \n <!-- settings -->\n")

		code, out, stderr = runCmd("prompts", "import", dir)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, out, "saved revision 1")

		code, out, stderr = runCmd("prompts", "import", dir)
		require.Equal(t, 0, code, "importing the same directory again is no error: %s", stderr)
		require.Contains(t, out, "nothing changed; the latest revision is still 1")

		code, out, _ = runCmd("prompts", "diff", "-from", "0", "-to", "1")
		require.Equal(t, 1, code)
		require.Contains(t, out, "+Answer in one sentence.")
		code, _, _ = runCmd("prompts", "diff", "-from", "1", "-to", "1")
		require.Equal(t, 0, code)
		code, _, stderr = runCmd("prompts", "diff", filepath.Join(t.TempDir(), "missing"))
		require.Equal(t, 2, code, "an error: exit 2")
		require.Contains(t, stderr, "manifest.json")
		code, _, _ = runCmd("prompts", "diff", "-from", "0", "-to", "9")
		require.Equal(t, 2, code)

		// Someone else saved meanwhile: an import with other changes on the
		// now stale base is refused.
		code, _, stderr = runCmd("prompts", "export", dir)
		require.Equal(t, 1, code)
		require.Contains(t, stderr, "not empty")
		other := filepath.Join(t.TempDir(), "other")
		code, _, stderr = runCmd("prompts", "export", other)
		require.Equal(t, 0, code, stderr)
		require.NoError(t, os.WriteFile(filepath.Join(other, "sections", "ticket_scope.md"), []byte("Small.\n"), 0o644))
		code, _, stderr = runCmd("prompts", "import", other)
		require.Equal(t, 0, code, stderr)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "sections", "communication.md"), []byte("Answer briefly.\n"), 0o644))
		code, _, stderr = runCmd("prompts", "import", dir)
		require.Equal(t, 1, code, "importing on the now stale base is refused")
		require.Contains(t, stderr, "latest revision is 2")
		code, out, stderr = runCmd("prompts", "export", "-force", dir)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, out, "exported revision 2")
		code, _, _ = runCmd("prompts", "diff", dir)
		require.Equal(t, 0, code, "the forced export is the latest revision")

		require.NoError(t, os.WriteFile(filepath.Join(dir, "policy.json"), []byte(`{"mode":"sometimes","rules":[{"id":"","name":""}]}`), 0o644))
		code, _, stderr = runCmd("prompts", "import", "-base", "2", dir)
		require.Equal(t, 1, code)
		require.Contains(t, stderr, "the configuration is invalid")
	})
}
