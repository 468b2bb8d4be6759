package workspace

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/secret"
)

// repoSecret stands for a repository secret a command had in its
// environment and wrote into a file.
const repoSecret = "REPO-SECRET-value-7f3a9c"

func writeFile(t *testing.T, ws *Workspace, rel, text string) {
	t.Helper()
	p := filepath.Join(ws.Dir(), rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
}

// TestCheckpointRefusesSecrets: nothing secret leaves through a push. A
// configured secret's value (as is or base64), a token of a known shape,
// one in a commit message, or one in a commit that a later commit
// removed: each checkpoint and branch push is refused, naming the file,
// and the remote gets no ref.
func TestCheckpointRefusesSecrets(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	remote := func(context.Context) (Remote, error) { return e.remote, nil }
	scrub := secret.New(repoSecret)
	m := e.manager(t, Config{Sandbox: sandboxMode()})
	author := Author{Name: "A", Email: "a@example.com"}

	for i, tc := range []struct {
		name, file, content, kind string
	}{
		{"Value", "config/app.env", "TOKEN=" + repoSecret + "\n", "the value of a configured secret"},
		{"Base64", "notes.txt", "x: " + base64.StdEncoding.EncodeToString([]byte("pre"+repoSecret+"post")) + "\n", "the value of a configured secret"},
		{"GitHubTokenShape", "deploy/creds.json", `{"token": "ghp_` + "abcdefghijklmnopqrstuvwxyz0123456789" + `"}`, "a GitHub token"},
		{"PrivateKey", "id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n", "a private key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ticket := int64(10 + i)
			ws := m.mustPrepare(t, ticket, e.remote, "superagent/ticket-"+strconv.FormatInt(ticket, 10))
			writeFile(t, ws, tc.file, tc.content)
			_, taken, err := ws.Checkpoint(ctx, remote, scrub)
			var leak *LeakError
			require.True(t, errors.As(err, &leak), "%v", err)
			require.False(t, taken)
			require.Equal(t, tc.file, leak.Path)
			require.Equal(t, tc.kind, leak.Kind)
			require.Contains(t, err.Error(), "the checkpoint was not pushed: "+tc.file+" holds "+tc.kind)
			require.NotContains(t, err.Error(), repoSecret)
			require.Empty(t, hostGit(t, e.bare, "for-each-ref", "refs/superagent/"))

			// Committed, it is refused for the branch too.
			_, err = ws.Commit(ctx, "add "+tc.file, nil, author)
			require.NoError(t, err)
			err = ws.Push(ctx, e.remote, "superagent/ticket-"+strconv.FormatInt(ticket, 10), scrub)
			require.True(t, errors.As(err, &leak), "%v", err)
			require.Equal(t, tc.file, leak.Path)
			require.Contains(t, err.Error(), "the branch was not pushed")
			require.Empty(t, hostGit(t, e.bare, "for-each-ref", "refs/heads/superagent/"))
		})
	}

	t.Run("RemovedByALaterCommit", func(t *testing.T) {
		ws := m.mustPrepare(t, 20, e.remote, "superagent/ticket-20")
		writeFile(t, ws, "leak.txt", repoSecret)
		_, err := ws.Commit(ctx, "oops", nil, author)
		require.NoError(t, err)
		require.NoError(t, os.Remove(filepath.Join(ws.Dir(), "leak.txt")))
		_, err = ws.Commit(ctx, "remove it", nil, author)
		require.NoError(t, err)
		_, _, err = ws.Checkpoint(ctx, remote, scrub)
		var leak *LeakError
		require.True(t, errors.As(err, &leak), "%v", err)
		require.Contains(t, leak.Path, "a file in a commit not yet pushed")
		require.Empty(t, hostGit(t, e.bare, "for-each-ref", "refs/superagent/"))
	})

	t.Run("InACommitMessage", func(t *testing.T) {
		ws := m.mustPrepare(t, 21, e.remote, "superagent/ticket-21")
		writeFile(t, ws, "ok.txt", "fine\n")
		sha, err := ws.Commit(ctx, "uses "+repoSecret, nil, author)
		require.NoError(t, err)
		err = ws.Push(ctx, e.remote, "superagent/ticket-21", scrub)
		var leak *LeakError
		require.True(t, errors.As(err, &leak), "%v", err)
		require.Equal(t, "the message of commit "+sha, leak.Path)
	})

	t.Run("Control", func(t *testing.T) {
		// The same kinds of files without a secret are pushed.
		ws := m.mustPrepare(t, 22, e.remote, "superagent/ticket-22")
		writeFile(t, ws, "config/app.env", "TOKEN=${TOKEN}\n")
		_, taken, err := ws.Checkpoint(ctx, remote, scrub)
		require.NoError(t, err)
		require.True(t, taken)
		require.Contains(t, hostGit(t, e.bare, "for-each-ref", "refs/superagent/"), WIPRef(22))
	})
}

// TestCheckpointIsBoundedAndUnprivileged: the checkpoint reads the work
// tree in the sandbox as the Ticket's user, and refuses a sparse file
// by its apparent size before any git reads it.
func TestCheckpointIsBoundedAndUnprivileged(t *testing.T) {
	e, ws := sandboxed(t, Config{})
	ctx := context.Background()
	remote := func(context.Context) (Remote, error) { return e.remote, nil }
	res := run(t, ws, "truncate -s 1500M sparse.bin && echo made")
	require.Equal(t, 0, res.ExitCode, res.Output)
	_, taken, err := ws.Checkpoint(ctx, remote, nil)
	var refused *CheckpointRefusal
	require.True(t, errors.As(err, &refused), "%v", err)
	require.False(t, taken)
	require.Contains(t, err.Error(), "sparse.bin is 1.5 GiB (a sparse file counts every byte), over the 100 MiB a pushed file may hold")
	require.Empty(t, hostGit(t, e.bare, "for-each-ref", "refs/superagent/"))
	// A commit stages the same way: refused before git reads the file.
	_, err = ws.Commit(ctx, "add it", nil, Author{Name: "A", Email: "a@example.com"})
	require.ErrorContains(t, err, "committing: sparse.bin is 1.5 GiB")
	// Paths are passed to git in the sandbox as they are.
	writeFile(t, ws, "it's here.txt", "quoted\n")
	_, err = ws.Commit(ctx, "one file", []string{"it's here.txt"}, Author{Name: "A", Email: "a@example.com"})
	require.NoError(t, err)
	require.Equal(t, "it's here.txt", hostGit(t, ws.Dir(), "-c", "safe.directory=*", "show", "--name-only", "--format=", "HEAD"))

	require.NoError(t, os.Remove(filepath.Join(ws.Dir(), "sparse.bin")))
	writeFile(t, ws, "work.txt", "done\n")
	_, taken, err = ws.Checkpoint(ctx, remote, nil)
	require.NoError(t, err)
	require.True(t, taken)
	// What git wrote in the sandbox is its user's, not root's.
	fi, err := os.Stat(filepath.Join(ws.m.scratchDir(ws.TicketID()), "wip", checkpointListFile))
	require.NoError(t, err)
	require.Equal(t, uint32(identityOf(ws.TicketID()).uid), fi.Sys().(*syscall.Stat_t).Uid)
	if os.Geteuid() == 0 {
		require.NotEqual(t, uint32(0), fi.Sys().(*syscall.Stat_t).Uid)
	}
}

// TestCheckpointPushesNothingUnchanged: a Ticket that only reads pushes
// no ref; ignored files are not work; a change is pushed, and so is its
// revert (the ref must not bring the change back elsewhere).
func TestCheckpointPushesNothingUnchanged(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	remote := func(context.Context) (Remote, error) { return e.remote, nil }
	ws := e.manager(t, Config{Sandbox: sandboxMode()}).mustPrepare(t, 30, e.remote, "superagent/ticket-30")

	_, taken, err := ws.Checkpoint(ctx, remote, nil)
	require.NoError(t, err)
	require.False(t, taken, "the tree is the base commit's")
	writeFile(t, ws, ".git/info/exclude", "out/\n")
	writeFile(t, ws, "out/build.log", "ignored\n")
	_, taken, err = ws.Checkpoint(ctx, remote, nil)
	require.NoError(t, err)
	require.False(t, taken, "only an ignored file changed")
	require.Empty(t, hostGit(t, e.bare, "for-each-ref", "refs/superagent/"))

	writeFile(t, ws, "README.md", "changed\n")
	_, taken, err = ws.Checkpoint(ctx, remote, nil)
	require.NoError(t, err)
	require.True(t, taken)
	_, taken, err = ws.Checkpoint(ctx, remote, nil)
	require.NoError(t, err)
	require.False(t, taken, "the tree is the last checkpoint's")
	writeFile(t, ws, "README.md", "hello\n")
	_, taken, err = ws.Checkpoint(ctx, remote, nil)
	require.NoError(t, err)
	require.True(t, taken, "back to the base after a checkpoint: the ref follows")
}

// sandboxMode is bubblewrap where it is installed (always in CI), else
// none: the checkpoint's logic is the same in both.
func sandboxMode() SandboxMode {
	if _, err := os.Stat("/usr/bin/bwrap"); err == nil || os.Getenv("CI") == "true" {
		return SandboxBwrap
	}
	return SandboxNone
}
