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
		res := run(t, w, "id -u; touch made-by-sandbox")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.Equal(t, "65534\n", res.Output)
		fi, err := os.Stat(filepath.Join(w.Dir(), "made-by-sandbox"))
		require.NoError(t, err)
		require.Equal(t, uint32(sandboxUID), fi.Sys().(*syscall.Stat_t).Uid)

		// And the process itself, seen from the host.
		uidLine, done := procLine(t, w, "sleep 1004", 10*time.Second, "sleep\x001004", "status", "Uid:")
		require.Equal(t, []string{"Uid:", "65534", "65534", "65534", "65534"}, strings.Fields(uidLine))
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
		require.Contains(t, res.Output, "the sandbox allows 60 processes")
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
		res := run(t, w, "dd if=/dev/zero of=big.bin bs=1M count=60; sleep 5; echo AFTER")
		require.True(t, res.OverQuota, res.Output)
		require.NotContains(t, res.Output, "AFTER")
		require.Contains(t, res.Output, "a file reached the size limit of 10 MiB")
		require.Contains(t, res.Output, "stopped: the workspace passed its disk quota of 10 MiB")
	})

	t.Run("SparseFilesCountWhatTheyHold", func(t *testing.T) {
		// 50 files of 9 MiB apparent size each: 450 MiB by apparent size,
		// next to nothing on disk.
		res := run(t, w, "for i in $(seq 50); do truncate -s 9M sparse$i; done; sleep 0.5; echo DONE")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.Contains(t, res.Output, "DONE")
		require.NotContains(t, res.Output, "quota")
		// A sparse file past the quota is refused outright: host git would
		// read every byte of it.
		res = run(t, w, "truncate -s 100G huge")
		require.NotEqual(t, 0, res.ExitCode, res.Output)
		run(t, w, "rm -f sparse* huge")
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

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 10 << 20: "10 MiB", 2 << 30: "2 GiB", 1536: "1.5 KiB"} {
		require.Equal(t, want, formatBytes(n))
	}
}
