package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSandboxHostSecrets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the host-uid half of the sandbox applies when the service runs as root")
	}
	// A root-only file inside a directory bound into the sandbox, as
	// SUPERAGENT_SANDBOX_READONLY would bind it.
	tool := t.TempDir()
	require.NoError(t, os.Chmod(tool, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tool, "key.pem"), []byte("ROOT-ONLY-KEY"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(tool, "public.txt"), []byte("PUBLIC"), 0o644))
	_, w := sandboxed(t, Config{ExtraReadOnly: []string{tool}})

	res := run(t, w, "cat "+filepath.Join(tool, "public.txt"))
	require.Equal(t, 0, res.ExitCode, res.Output)
	require.Contains(t, res.Output, "PUBLIC")
	res = run(t, w, "cat "+filepath.Join(tool, "key.pem"))
	require.NotEqual(t, 0, res.ExitCode, res.Output)
	require.NotContains(t, res.Output, "ROOT-ONLY-KEY")

	t.Run("NoSSLPrivate", func(t *testing.T) {
		res := run(t, w, "ls /etc/ssl/private")
		require.NotEqual(t, 0, res.ExitCode, res.Output)
		res = run(t, w, "ls /etc/ssl/certs | head -3")
		if _, err := os.Stat("/etc/ssl/certs"); err == nil {
			require.Equal(t, 0, res.ExitCode, res.Output)
		}
	})

	t.Run("HostUIDIsNotRoot", func(t *testing.T) {
		// The Ticket's own uid, far from root's and from every other
		// Ticket's; the sandbox's /etc/passwd names it.
		uid := strconv.Itoa(ticketUIDBase + int(w.TicketID()))
		res := run(t, w, "id -u; whoami; touch made-by-sandbox")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.Equal(t, uid+"\nsandbox\n", res.Output)
		fi, err := os.Stat(filepath.Join(w.Dir(), "made-by-sandbox"))
		require.NoError(t, err)
		require.Equal(t, uid, strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid)))

		// And the process itself, seen from the host.
		uidLine, done := procLine(t, w, "sleep 1004", 10*time.Second, "sleep\x001004", "status", "Uid:")
		require.Equal(t, []string{"Uid:", uid, uid, uid, uid}, strings.Fields(uidLine))
		<-done
	})

	t.Run("HostGitStillWorks", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(w.Dir(), "host.txt"), []byte("x"), 0o644))
		_, err := w.Commit(context.Background(), "add", nil, Author{Name: "A", Email: "a@example.com"})
		require.NoError(t, err)
		res := run(t, w, "echo more >> host.txt && git log --oneline -1")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.Contains(t, res.Output, "add")
	})
}

func hostPIDWithArgs(args string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(data), args) {
			return pid
		}
	}
	return 0
}

func TestSandboxLimits(t *testing.T) {
	_, w := sandboxed(t, Config{MaxBytes: 10 << 20, MaxProcesses: 60, CPUSeconds: 1, MemoryBytes: 256 << 20})

	t.Run("ForkBombStopsAtProcessLimit", func(t *testing.T) {
		start := time.Now()
		res := run(t, w, "for i in $(seq 1000); do sleep 5 & done; echo ALL-STARTED")
		// dash gives up at the first fork that fails.
		require.NotContains(t, res.Output, "ALL-STARTED")
		require.Contains(t, res.Output, "Cannot fork")
		if os.Geteuid() == 0 {
			require.Contains(t, res.Output, "ticket 1's sandbox user (uid 2000000001) may have 60 processes")
		} else {
			require.Contains(t, res.Output, "the sandbox allows 60 processes")
		}
		require.Less(t, time.Since(start), 5*time.Second)
	})

	t.Run("QuotaStopsAWriteDuringTheCommand", func(t *testing.T) {
		// Many files, each below the single-file limit, so only the watcher
		// can stop this; the sleep would keep it going well past the check
		// that follows a command.
		start := time.Now()
		res := run(t, w, "for i in $(seq 30); do head -c 1048576 /dev/urandom > f$i.bin; done; sleep 20; echo SURVIVED")
		require.Less(t, time.Since(start), 10*time.Second)
		require.True(t, res.OverQuota)
		require.Equal(t, -1, res.ExitCode)
		require.NotContains(t, res.Output, "SURVIVED")
		require.Contains(t, res.Output, "stopped: the workspace passed its disk quota of 10 MiB")
		res = run(t, w, "rm -f f*.bin")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.NotContains(t, res.Output, "quota")
	})

	t.Run("SingleFileStopsAtQuota", func(t *testing.T) {
		// Removed even when an assertion fails, so that the next subtest
		// does not start over quota.
		t.Cleanup(func() { run(t, w, "rm -f big.bin") })
		res := run(t, w, "dd if=/dev/zero of=big.bin bs=1M count=60; echo AFTER")
		require.NotContains(t, res.Output, "60+0 records out")
		size, err := os.Stat(filepath.Join(w.Dir(), "big.bin"))
		require.NoError(t, err)
		require.LessOrEqual(t, size.Size(), int64(10<<20))
		// Whether or not the quota watcher caught the file at its limit
		// before the command ended, the output names the file-size limit.
		require.Contains(t, res.Output, "a file reached the size limit of 10 MiB")
	})

	t.Run("SingleFileAtQuotaThenTheWatcher", func(t *testing.T) {
		// The file stops at the size limit, and the command goes on long
		// enough for the quota watcher to stop it too: both are said.
		t.Cleanup(func() { run(t, w, "rm -f big.bin") })
		// SIGXFSZ ignored, so dd sees EFBIG and says so before the watcher
		// kills the shell (dash names a signal only at its next prompt).
		res := run(t, w, "trap '' XFSZ; dd if=/dev/zero of=big.bin bs=1M count=60; sleep 5; echo AFTER")
		require.True(t, res.OverQuota, res.Output)
		require.NotContains(t, res.Output, "AFTER")
		require.Contains(t, res.Output, "a file reached the size limit of 10 MiB")
		require.Contains(t, res.Output, "stopped: the workspace passed its disk quota of 10 MiB")
	})

	t.Run("SparseFilesCountEveryByte", func(t *testing.T) {
		// 50 files of 9 MiB apparent size each: next to nothing on disk,
		// 450 MiB for whatever reads them (host git, a checkpoint): they
		// count as 450 MiB, and the command is stopped.
		t.Cleanup(func() { run(t, w, "rm -f sparse* huge") })
		res := run(t, w, "for i in $(seq 50); do truncate -s 9M sparse$i; done; sleep 5; echo DONE")
		require.True(t, res.OverQuota, res.Output)
		require.NotContains(t, res.Output, "DONE")
		require.Contains(t, res.Output, "stopped: the workspace passed its disk quota of 10 MiB")
		run(t, w, "rm -f sparse*")
		// A sparse file past the quota is refused outright.
		res = run(t, w, "truncate -s 100G huge")
		require.NotEqual(t, 0, res.ExitCode, res.Output)
	})

	t.Run("FilesCountAsWellAsBytes", func(t *testing.T) {
		// Empty files take no blocks, but each one an inode: the file
		// limit stops the command that makes too many.
		_, w := sandboxed(t, Config{MaxFiles: 2000})
		res := run(t, w, "mkdir many && cd many && i=0; while [ $i -lt 5000 ]; do : > f$i; i=$((i+1)); done; sleep 5; echo DONE")
		require.True(t, res.OverQuota, res.Output)
		require.NotContains(t, res.Output, "DONE")
		require.Contains(t, res.Output, "stopped: the workspace passed its limit of 2000 files and directories")
		_, err := w.Commit(context.Background(), "many", nil, Author{Name: "A", Email: "a@example.com"})
		require.ErrorContains(t, err, "over its limit of 2000 files")
		res = run(t, w, "rm -rf many")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.NotContains(t, res.Output, "limit")
	})

	t.Run("TmpIsOnTheTicketsDisk", func(t *testing.T) {
		// /tmp counts against the workspace's quota (it is no longer RAM
		// that a memory limit does not see), and is empty for each command.
		res := run(t, w, "for i in $(seq 30); do head -c 1048576 /dev/zero > /tmp/f$i; done; sleep 5; echo SURVIVED")
		require.True(t, res.OverQuota, res.Output)
		require.NotContains(t, res.Output, "SURVIVED")
		res = run(t, w, "ls -A /tmp; echo x > /tmp/left")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.Equal(t, "home\n", res.Output)
		res = run(t, w, "ls -A /tmp")
		require.Equal(t, "home\n", res.Output)
	})

	t.Run("CPUSpinStopsAtCPULimit", func(t *testing.T) {
		start := time.Now()
		res := run(t, w, "while :; do :; done")
		require.Less(t, time.Since(start), 10*time.Second)
		require.False(t, res.TimedOut)
		require.NotEqual(t, 0, res.ExitCode)
		require.Contains(t, res.Output, "CPU time limit of 1 s", "exit %d", res.ExitCode)
	})

	t.Run("CPUSpinIgnoringSIGXCPUStopsAtHardLimit", func(t *testing.T) {
		start := time.Now()
		res := run(t, w, "perl -e '$SIG{XCPU} = \"IGNORE\"; 1 while 1'")
		require.Less(t, time.Since(start), 10*time.Second)
		require.False(t, res.TimedOut)
		require.Equal(t, 128+int(syscall.SIGKILL), res.ExitCode, res.Output)
		require.Contains(t, res.Output, "CPU time limit of 1 s", "exit %d", res.ExitCode)
	})

	t.Run("BigAllocationFailsAtMemoryLimit", func(t *testing.T) {
		res := run(t, w, "dd if=/dev/zero of=/dev/null bs=16M count=1")
		require.Equal(t, 0, res.ExitCode, "the control: a small buffer works: %s", res.Output)
		res = run(t, w, "dd if=/dev/zero of=/dev/null bs=512M count=1")
		require.NotEqual(t, 0, res.ExitCode, res.Output)
		require.Contains(t, res.Output, "memory exhausted")
		require.Contains(t, res.Output, "256 MiB of memory")
	})
}

// TestSandboxProcessLimitIsPerTicket: one Ticket's processes do not use
// up another's process limit. Each Ticket's commands run as a uid of
// their own, and RLIMIT_NPROC counts per uid.
func TestSandboxProcessLimitIsPerTicket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a uid per Ticket needs the service to run as root; without it the limit is the service user's")
	}
	e, w := sandboxed(t, Config{MaxProcesses: 60})
	other, err := e.manager(t, Config{Sandbox: SandboxBwrap, MaxProcesses: 60}).Open(2)
	require.NoError(t, err)
	ctx := context.Background()
	// Ticket 2 holds 45 processes for a while...
	held := make(chan Result, 1)
	go func() {
		res, _ := other.Run(ctx, "for i in $(seq 45); do sleep 8 & done; echo HOLDING; wait", "", time.Minute)
		held <- res
	}()
	require.Eventually(t, func() bool {
		return countUIDProcs(identityOf(2).uid) >= 45
	}, 10*time.Second, 20*time.Millisecond)
	// ...while ticket 1 starts 40 of its own: together they are past 60.
	res := run(t, w, "for i in $(seq 40); do sleep 1 & done; wait; echo ALL-STARTED")
	require.Equal(t, 0, res.ExitCode, res.Output)
	require.Contains(t, res.Output, "ALL-STARTED")
	require.NotContains(t, res.Output, "fork")
	require.Equal(t, 0, (<-held).ExitCode)
}

// countUIDProcs counts the host's processes whose real uid is uid.
func countUIDProcs(uid int) int {
	n := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", e.Name()), &st) == nil && int(st.Uid) == uid {
			n++
		}
	}
	return n
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 10 << 20: "10 MiB", 2 << 30: "2 GiB", 1536: "1.5 KiB"} {
		require.Equal(t, want, formatBytes(n))
	}
}

// TestRunHandsTheWorkTreeToTheTicket: what the host wrote in the work
// tree between commands (new files and directories, as root) is the
// Ticket's user's before the next command runs, so the command can
// change it, while .git stays the host's. One walk does this and the
// quota's first measurement.
func TestRunHandsTheWorkTreeToTheTicket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only as root do commands run as a uid of their own on the host")
	}
	_, w := sandboxed(t, Config{})
	writeFile(t, w, "new/deeper/host.txt", "from the host\n")
	res := run(t, w, "echo more >> new/deeper/host.txt && touch new/deeper/mine && cat new/deeper/host.txt")
	require.Equal(t, 0, res.ExitCode, res.Output)
	require.Equal(t, "from the host\nmore\n", res.Output)
	uid := uint32(identityOf(w.TicketID()).uid)
	for _, p := range []string{"new", "new/deeper", "new/deeper/host.txt", "new/deeper/mine"} {
		fi, err := os.Lstat(filepath.Join(w.Dir(), p))
		require.NoError(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		require.Equal(t, [2]uint32{uid, uid}, [2]uint32{st.Uid, st.Gid}, p)
	}
	for _, p := range []string{".git", ".git/HEAD", ".git/config"} {
		fi, err := os.Lstat(filepath.Join(w.Dir(), p))
		require.NoError(t, err)
		require.Equal(t, uint32(0), fi.Sys().(*syscall.Stat_t).Uid, p)
	}
}
