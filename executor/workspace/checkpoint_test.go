package workspace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// machine is one host's Manager for the same remote, as another process
// on another machine would have.
func (e *testEnv) machine(t *testing.T) *Manager {
	t.Helper()
	m, err := NewManager(Config{Root: filepath.Join(t.TempDir(), "workspaces"), Sandbox: SandboxNone})
	require.NoError(t, err)
	return m
}

// files lists the workspace's files outside .git with their content.
func files(t *testing.T, ws *Workspace) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(ws.Dir(), func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			raw, err := os.ReadFile(p)
			require.NoError(t, err)
			rel, _ := filepath.Rel(ws.Dir(), p)
			out[rel] = string(raw)
		}
		return nil
	}))
	return out
}

func TestCheckpointAndRestore(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	const branch = "superagent/ticket-5"
	remote := func(context.Context) (Remote, error) { return e.remote, nil }
	a := e.manager(t, Config{})
	wa, err := a.Prepare(ctx, 5, e.remote, branch)
	require.NoError(t, err)

	// A commit that is not pushed, then uncommitted work: a tracked change,
	// a deletion, an untracked file, and an ignored file that stays local.
	write := func(ws *Workspace, rel, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws.Dir(), rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws.Dir(), rel), []byte(text), 0o644))
	}
	write(wa, ".gitignore", "build/\n")
	write(wa, "README.md", "hello, committed\n")
	committed, err := wa.Commit(ctx, "Change the README", nil, Author{Name: "Bot", Email: "bot@example.com"})
	require.NoError(t, err)
	write(wa, "README.md", "hello, committed and then edited\n")
	require.NoError(t, os.Remove(filepath.Join(wa.Dir(), "docs", "guide.md")))
	write(wa, "notes/todo.txt", "untracked\n")
	write(wa, "build/out.bin", "ignored\n")
	statusBefore, err := wa.Status(ctx)
	require.NoError(t, err)

	cp, taken, err := wa.Checkpoint(ctx, remote, nil)
	require.NoError(t, err)
	require.True(t, taken)
	require.Equal(t, committed, cp.Head)
	require.Equal(t, cp.Commit, hostGit(t, e.bare, "rev-parse", WIPRef(5)))
	require.Equal(t, committed, hostGit(t, e.bare, "rev-parse", WIPRef(5)+"^"))
	require.Equal(t, "notes/todo.txt", hostGit(t, e.bare, "ls-tree", "-r", "--name-only", WIPRef(5), "notes"))
	statusAfter, err := wa.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, statusBefore, statusAfter, "the index and HEAD are as they were")
	head, err := wa.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, committed, head)
	_, taken, err = wa.Checkpoint(ctx, remote, nil)
	require.NoError(t, err)
	require.False(t, taken, "nothing changed since the last checkpoint")
	for _, u := range e.server.requestURLs() {
		require.NotContains(t, u, testToken)
	}
	raw, err := os.ReadFile(filepath.Join(wa.Dir(), ".git", "config"))
	require.NoError(t, err)
	require.NotContains(t, string(raw), testToken)

	// Another machine: a fresh clone is brought to the checkpoint.
	b := e.machine(t)
	wb, err := b.Prepare(ctx, 5, e.remote, branch)
	require.NoError(t, err)
	res, err := wb.Restore(ctx, e.remote, branch)
	require.NoError(t, err)
	require.True(t, res.Applied)
	require.Equal(t, cp, res.Checkpoint)
	head, err = wb.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, committed, head, "the unpushed commit, same sha")
	want := files(t, wa)
	delete(want, "build/out.bin")
	require.Equal(t, want, files(t, wb))
	statusB, err := wb.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, strings.Split(statusBefore, "\n")[1:], strings.Split(statusB, "\n")[1:], "the same changes, staged as before")
	_, taken, err = wb.Checkpoint(ctx, remote, nil)
	require.NoError(t, err)
	require.False(t, taken, "a restored workspace has nothing new")

	// b goes on; a, now older, is brought forward: its stray file goes,
	// its ignored file stays.
	write(wb, "notes/todo.txt", "untracked, edited on b\n")
	cp2, taken, err := wb.Checkpoint(ctx, remote, nil)
	require.NoError(t, err)
	require.True(t, taken)
	write(wa, "stray.txt", "made on a after its last checkpoint\n")
	_, _, err = wa.Checkpoint(ctx, remote, nil)
	require.Error(t, err, "a stale workspace cannot overwrite the newer checkpoint")
	require.Equal(t, cp2.Commit, hostGit(t, e.bare, "rev-parse", WIPRef(5)))
	wa, err = a.Prepare(ctx, 5, e.remote, branch)
	require.NoError(t, err)
	res, err = wa.Restore(ctx, e.remote, branch)
	require.NoError(t, err)
	require.True(t, res.Applied)
	gotA := files(t, wa)
	require.Equal(t, "ignored\n", gotA["build/out.bin"])
	delete(gotA, "build/out.bin")
	require.Equal(t, files(t, wb), gotA)

	// The workspace that made the checkpoint keeps its state.
	res, err = wb.Restore(ctx, e.remote, branch)
	require.NoError(t, err)
	require.False(t, res.Applied)

	// Once the branch is pushed with a commit the checkpoint lacks, the
	// pushed branch wins.
	other := t.TempDir()
	hostGit(t, "", "-c", "http.extraHeader="+e.remote.authHeader(), "clone", "--quiet", e.remote.URL, other)
	write(&Workspace{dir: other}, "person.txt", "a person's push\n")
	hostGit(t, other, "add", "-A")
	hostGit(t, other, "commit", "--quiet", "-m", "a person's commit")
	hostGit(t, other, "-c", "http.extraHeader="+e.remote.authHeader(), "push", "--quiet", "origin", "HEAD:refs/heads/"+branch)
	c := e.machine(t)
	wc, err := c.Prepare(ctx, 5, e.remote, branch)
	require.NoError(t, err)
	res, err = wc.Restore(ctx, e.remote, branch)
	require.NoError(t, err)
	require.True(t, res.SetAside)
	require.False(t, res.Applied)
	require.FileExists(t, filepath.Join(wc.Dir(), "person.txt"))
	require.NoFileExists(t, filepath.Join(wc.Dir(), "notes", "todo.txt"))
	_, taken, err = wc.Checkpoint(ctx, remote, nil)
	require.NoError(t, err, "the set-aside checkpoint is the lease base")
	require.True(t, taken)

	existed, err := c.DeleteWIP(ctx, e.remote, 5)
	require.NoError(t, err)
	require.True(t, existed)
	require.Empty(t, hostGit(t, e.bare, "for-each-ref", "refs/superagent/"))
	existed, err = e.machine(t).DeleteWIP(ctx, e.remote, 5)
	require.NoError(t, err)
	require.False(t, existed)
	res, err = e.machine(t).mustPrepare(t, 5, e.remote, branch).Restore(ctx, e.remote, branch)
	require.NoError(t, err)
	require.Equal(t, Restored{}, res, "no checkpoint, nothing restored")
}

func (m *Manager) mustPrepare(t *testing.T, id int64, r Remote, branch string) *Workspace {
	t.Helper()
	ws, err := m.Prepare(context.Background(), id, r, branch)
	require.NoError(t, err)
	return ws
}

// A nested repository is never walked by host git, so it is not
// checkpointed.
func TestCheckpointRefusesANestedRepository(t *testing.T) {
	e := setup(t)
	ws := e.manager(t, Config{}).mustPrepare(t, 6, e.remote, "superagent/ticket-6")
	require.NoError(t, os.MkdirAll(filepath.Join(ws.Dir(), "vendor", "x", ".git"), 0o755))
	_, _, err := ws.Checkpoint(context.Background(), func(context.Context) (Remote, error) { return e.remote, nil }, nil)
	require.ErrorContains(t, err, "nested git repository")
	require.Empty(t, hostGit(t, e.bare, "for-each-ref", "refs/superagent/"))
}

// BenchmarkCheckpoint measures a checkpoint after a step that changed one
// file (the private index, write-tree, commit-tree and a push over HTTP
// to git http-backend), and one after a step that changed nothing (no
// push), in a workspace of 2,000 files; and, for scale in the same run,
// the cheapest step there is: `true` in the sandbox.
func BenchmarkCheckpoint(b *testing.B) {
	srv := newGitServer(b, testToken)
	tree := map[string]string{}
	for i := range 2000 {
		tree[fmt.Sprintf("pkg%02d/file%04d.go", i%40, i)] = fmt.Sprintf("package pkg\n\n// F%d is file %d.\nfunc F%d() int { return %d }\n", i, i, i, i)
	}
	url, _ := srv.newRepo("o", "r", tree)
	r := Remote{URL: url, Token: testToken, BaseBranch: "main"}
	m, err := NewManager(Config{Root: b.TempDir(), Sandbox: SandboxNone})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ws, err := m.Prepare(ctx, 1, r, "superagent/ticket-1")
	if err != nil {
		b.Fatal(err)
	}
	remote := func(context.Context) (Remote, error) { return r, nil }
	b.Run("changed", func(b *testing.B) {
		n := 0
		var spent time.Duration
		for b.Loop() {
			n++
			if err := os.WriteFile(filepath.Join(ws.Dir(), "pkg00", "file0000.go"), fmt.Appendf(nil, "package pkg\n// %d\n", n), 0o644); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if _, taken, err := ws.Checkpoint(ctx, remote, nil); err != nil || !taken {
				b.Fatalf("checkpoint: taken %v, %v", taken, err)
			}
			spent += time.Since(start)
		}
		b.ReportMetric(float64(spent.Milliseconds())/float64(n), "ms/checkpoint")
	})
	b.Run("unchanged", func(b *testing.B) {
		for b.Loop() {
			if _, taken, err := ws.Checkpoint(ctx, remote, nil); err != nil || taken {
				b.Fatalf("checkpoint: taken %v, %v", taken, err)
			}
		}
	})
	if _, err := exec.LookPath("bwrap"); err != nil {
		return
	}
	boxed, err := NewManager(Config{Root: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	bws, err := boxed.Prepare(ctx, 1, r, "superagent/ticket-1")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("baseline: true in the sandbox", func(b *testing.B) {
		for b.Loop() {
			if res, err := bws.Run(ctx, "true", "", 0); err != nil || res.ExitCode != 0 {
				b.Fatalf("true: %v, %d", err, res.ExitCode)
			}
		}
	})
}
