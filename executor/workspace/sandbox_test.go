package workspace

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sandboxed prepares ticket 1 in a bwrap Manager, next to ticket 2's workspace
// and the data dir's secrets.
func sandboxed(t *testing.T, cfg Config) (*testEnv, *Workspace) {
	t.Helper()
	requireBwrap(t)
	e := setup(t)
	cfg.Sandbox = SandboxBwrap
	m := e.manager(t, cfg)
	ctx := context.Background()
	other, err := m.Prepare(ctx, 2, e.remote, "superagent/t-2")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(other.Dir(), "other-secret.txt"), []byte("OTHER-TICKET-SECRET"), 0o644))
	w, err := m.Prepare(ctx, 1, e.remote, "superagent/t-1")
	require.NoError(t, err)
	return e, w
}

func run(t *testing.T, w *Workspace, command string) Result {
	t.Helper()
	res, err := w.Run(context.Background(), command, "", 30*time.Second)
	require.NoError(t, err)
	return res
}

// shell wraps command for bash when there is one: dash has no /dev/tcp.
func bash(command string) string {
	return "bash -c " + strconv.Quote(command)
}

func TestSandboxConfinesCommands(t *testing.T) {
	const probe = "PROBE-VALUE-7f3a9c"
	t.Setenv("SUPERAGENT_SECRET_PROBE", probe)
	e, w := sandboxed(t, Config{})

	// The control: the workspace itself is readable and writable.
	res := run(t, w, "cat README.md && echo made > made.txt && cat /workspace/made.txt && git log --oneline -1")
	require.Equal(t, 0, res.ExitCode, res.Output)
	require.Contains(t, res.Output, "hello")
	require.Contains(t, res.Output, "made")
	require.Contains(t, res.Output, "initial")
	require.FileExists(t, filepath.Join(w.Dir(), "made.txt"))

	secrets := []string{probe, "DB-SECRET-CONTENT", "ADMIN-SECRET-TOKEN", "OTHER-TICKET-SECRET", testToken}
	for _, tc := range []struct {
		name    string
		command string
		fails   bool // the command must also fail, not just print nothing
	}{
		{"EnvVar", "echo \"v=$SUPERAGENT_SECRET_PROBE\"; env; set", false},
		{"HostProcEnviron", fmt.Sprintf("cat /proc/%d/environ; cat /proc/1/environ; cat /proc/*/environ", os.Getpid()), false},
		{"DataDirByHostPath", fmt.Sprintf("cat %s/superagent.db %s/admin-token", e.data, e.data), true},
		{"DataDirRelative", "cat ../superagent.db ../admin-token ../../superagent.db ../../admin-token /workspace/../admin-token", true},
		{"OtherTicketByHostPath", "cat " + filepath.Join(e.root, "ticket-2", "other-secret.txt"), true},
		{"OtherTicketRelative", "cat ../ticket-2/other-secret.txt", true},
		{"FindEverything", "grep -rs --exclude-dir=usr --exclude-dir=proc --exclude-dir=sys SECRET / 2>/dev/null | head -50", false},
		{"GitConfig", "cat .git/config; git config --list", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, w, tc.command)
			if tc.fails {
				require.NotEqual(t, 0, res.ExitCode, res.Output)
			}
			for _, s := range secrets {
				require.NotContains(t, res.Output, s)
			}
		})
	}

	t.Run("ProcShowsNoHostProcesses", func(t *testing.T) {
		res := run(t, w, "ls /proc")
		require.Equal(t, 0, res.ExitCode, res.Output)
		var pids []int
		for _, f := range strings.Fields(res.Output) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
		require.Less(t, len(pids), 10, "only sandbox processes: %v", pids)
		require.NotContains(t, pids, os.Getpid())
		res = run(t, w, "cat /proc/*/cmdline | tr '\\0' ' '")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.NotContains(t, res.Output, filepath.Base(os.Args[0]))
	})

	t.Run("GitDirIsReadOnly", func(t *testing.T) {
		before, err := os.ReadFile(filepath.Join(w.Dir(), ".git", "config"))
		require.NoError(t, err)
		for _, cmd := range []string{
			"echo 'exit 0' > .git/hooks/pre-commit",
			"echo '[core]\n\tfsmonitor = touch /tmp/pwned' >> .git/config",
			"mkdir .git/hooks/x",
			"rm -rf .git",
			"mv .git .git-old",
			"git config core.hooksPath /workspace/hooks",
			"git commit --allow-empty -m x",
		} {
			res := run(t, w, cmd)
			require.NotEqual(t, 0, res.ExitCode, "%s: %s", cmd, res.Output)
		}
		after, err := os.ReadFile(filepath.Join(w.Dir(), ".git", "config"))
		require.NoError(t, err)
		require.Equal(t, string(before), string(after))
		require.NoFileExists(t, filepath.Join(w.Dir(), ".git", "hooks", "pre-commit"))
	})

	t.Run("SymlinkOutIsNotFollowedByHostTools", func(t *testing.T) {
		res := run(t, w, fmt.Sprintf("ln -s %s/admin-token l1 && ln -s ../ticket-2/other-secret.txt l2 && ln -s /etc/passwd l3 && ln -s .git/config l4",
			e.data))
		require.Equal(t, 0, res.ExitCode, res.Output)
		for _, l := range []string{"l1", "l2", "l3"} {
			out, err := w.ReadFile(l, 0, 0)
			require.Error(t, err, l)
			require.NotContains(t, out, "SECRET")
		}
		err := w.WriteFile("l4", "[core]\n\thooksPath = /workspace\n")
		require.ErrorContains(t, err, "symlink")
		out, err := w.Search(context.Background(), "SECRET", "", 0)
		require.NoError(t, err)
		require.NotContains(t, out, "ADMIN-SECRET")
	})

	t.Run("IdentityIsUnprivileged", func(t *testing.T) {
		res := run(t, w, "id -u; id -g; cat /proc/self/status | grep CapEff")
		require.Equal(t, 0, res.ExitCode, res.Output)
		id := strconv.Itoa(identityOf(w.TicketID()).uid)
		require.Contains(t, res.Output, id+"\n"+id+"\n")
		require.NotContains(t, res.Output, "\n0\n")
		require.Contains(t, res.Output, "CapEff:\t0000000000000000")
	})

	t.Run("SystemIsReadOnly", func(t *testing.T) {
		res := run(t, w, "touch /usr/x || touch /etc/x || touch /x")
		require.NotEqual(t, 0, res.ExitCode, res.Output)
		res = run(t, w, "echo ok > /tmp/x && cat /tmp/x && echo $HOME && touch $HOME/y")
		require.Equal(t, 0, res.ExitCode, res.Output)
	})
}

// hostListeners opens a TCP listener on the host's loopback (standing in for
// PostgreSQL) and one on each of the host's other IPv4 addresses, and
// returns their addresses and a channel that receives on every connection
// accepted.
func hostListeners(t *testing.T) ([]string, chan string) {
	t.Helper()
	ips := []string{"127.0.0.1"}
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			ips = append(ips, ipn.IP.String())
		}
	}
	accepted := make(chan string, 100)
	var out []string
	for _, ip := range ips {
		ln := serveTCP(t, net.JoinHostPort(ip, "0"), func(c net.Conn) { accepted <- c.LocalAddr().String() })
		out = append(out, ln.Addr().String())
	}
	return out, accepted
}

// connectProbe is a command that prints CONNECTED if it reaches addr.
func connectProbe(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return bash(fmt.Sprintf("echo hi > /dev/tcp/%s/%s && echo CONNECTED", host, port))
}

func TestSandboxNetwork(t *testing.T) {
	listeners, accepted := hostListeners(t)
	t.Logf("host listeners: %v", listeners)
	probes := []string{bash("echo > /dev/tcp/127.0.0.1/5432 && echo CONNECTED")}
	for _, a := range listeners {
		probes = append(probes, connectProbe(a))
	}
	requireNothingAccepted := func(t *testing.T) {
		t.Helper()
		select {
		case a := <-accepted:
			t.Fatalf("the sandbox reached the host at %s", a)
		default:
		}
	}

	t.Run("ProbesWorkWithoutSandbox", func(t *testing.T) {
		// The control: the same probes connect from the host, so the
		// tests below fail for the right reason.
		e := setup(t)
		w, err := e.manager(t, Config{Sandbox: SandboxNone}).Prepare(context.Background(), 1, e.remote, "b")
		require.NoError(t, err)
		for _, cmd := range probes[1:] {
			res := run(t, w, cmd)
			require.Contains(t, res.Output, "CONNECTED")
			<-accepted
		}
	})

	t.Run("OffByDefault", func(t *testing.T) {
		_, w := sandboxed(t, Config{})
		for _, cmd := range probes {
			res := run(t, w, cmd)
			require.NotEqual(t, 0, res.ExitCode, res.Output)
			require.NotContains(t, res.Output, "CONNECTED")
		}
		res := run(t, w, "ip -o link")
		require.NotContains(t, res.Output, "tap0")
		requireNothingAccepted(t)
	})

	t.Run("OnReachesNeitherHostNorPrivateRanges", func(t *testing.T) {
		requireSlirp(t)
		_, w := sandboxed(t, Config{Network: true})
		for _, cmd := range probes {
			res := run(t, w, cmd)
			require.NotEqual(t, 0, res.ExitCode, res.Output)
			require.NotContains(t, res.Output, "CONNECTED")
		}
		// The gateway is the host's loopback in slirp4netns's scheme.
		res := run(t, w, bash("echo > /dev/tcp/10.0.2.2/5432 && echo CONNECTED"))
		require.NotContains(t, res.Output, "CONNECTED")
		for _, addr := range []string{"10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1"} {
			res := run(t, w, bash(fmt.Sprintf("echo > /dev/tcp/%s/80 && echo CONNECTED", addr)))
			// The unreachable route answers at once (EHOSTUNREACH).
			require.Contains(t, res.Output, "No route to host", addr)
		}
		requireNothingAccepted(t)

		// It does have a network: slirp4netns's interface, a default route
		// and its DNS forwarder.
		res = run(t, w, "ip -o -4 addr show tap0; ip route; cat /etc/resolv.conf")
		require.Equal(t, 0, res.ExitCode, res.Output)
		require.Contains(t, res.Output, "10.0.2.100/24")
		require.Contains(t, res.Output, "default via 10.0.2.2")
		require.Contains(t, res.Output, "unreachable 10.0.0.0/8")
		require.Contains(t, res.Output, "nameserver 10.0.2.3")
		if _, err := net.LookupHost("proxy.golang.org"); err == nil {
			// Where the host resolves names, so does the sandbox, through
			// slirp4netns's forwarder.
			res = run(t, w, "getent hosts proxy.golang.org")
			require.Equal(t, 0, res.ExitCode, res.Output)
		}

		// The routes are beyond the command's reach.
		res = run(t, w, "ip route del unreachable 10.0.0.0/8")
		require.NotEqual(t, 0, res.ExitCode, res.Output)
		res = run(t, w, "ip route")
		require.Contains(t, res.Output, "unreachable 10.0.0.0/8")
	})

	t.Run("OnStopsSlirpAfterTheCommand", func(t *testing.T) {
		requireSlirp(t)
		_, w := sandboxed(t, Config{Network: true})
		run(t, w, "true")
		require.Eventually(t, func() bool { return !hostProcessWithArgs("slirp4netns\x00--configure") },
			5*time.Second, 50*time.Millisecond)
	})
}

func TestRun(t *testing.T) {
	ctx := context.Background()
	_, w := sandboxed(t, Config{MaxOutputBytes: 1000})

	t.Run("NonZeroExit", func(t *testing.T) {
		res, err := w.Run(ctx, "echo out; echo err >&2; exit 3", "", 0)
		require.NoError(t, err)
		require.Equal(t, 3, res.ExitCode)
		require.Contains(t, res.Output, "out\n")
		require.Contains(t, res.Output, "err\n")
		require.False(t, res.TimedOut)
	})

	t.Run("Workdir", func(t *testing.T) {
		for _, dir := range []string{"pkg/sub", "/workspace/pkg/sub", filepath.Join(w.Dir(), "pkg", "sub")} {
			res, err := w.Run(ctx, "pwd; ls", dir, 0)
			require.NoError(t, err)
			require.Equal(t, "/workspace/pkg/sub\nAGENTS.md\nfile.go\n", res.Output)
		}
		for _, dir := range []string{"..", "../ticket-2", "/etc", "/workspace/..", "README.md", "missing"} {
			_, err := w.Run(ctx, "pwd", dir, 0)
			require.Error(t, err, dir)
		}
	})

	t.Run("TimeoutKillsEverything", func(t *testing.T) {
		start := time.Now()
		res, err := w.Run(ctx, "sleep 1001 & sleep 1002", "", time.Second)
		require.NoError(t, err)
		require.True(t, res.TimedOut)
		require.Less(t, time.Since(start), 10*time.Second)
		require.Contains(t, res.Output, "timed out")
		// No sleeper survives on the host.
		require.Eventually(t, func() bool {
			return !hostProcessWithArgs("sleep\x001001") && !hostProcessWithArgs("sleep\x001002")
		}, 5*time.Second, 50*time.Millisecond)
	})

	t.Run("OutputIsCapped", func(t *testing.T) {
		res, err := w.Run(ctx, "echo START; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END", "", 0)
		require.NoError(t, err)
		require.True(t, res.Truncated)
		require.Less(t, len(res.Output), 1200)
		require.True(t, strings.HasPrefix(res.Output, "START"))
		require.True(t, strings.HasSuffix(res.Output, "END\n"))
		require.Contains(t, res.Output, "bytes of output cut")
	})

	t.Run("CancelledContextIsAnError", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := w.Run(ctx, "true", "", 0)
		require.Error(t, err)
	})
}

func hostProcessWithArgs(args string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(data), args) {
			return true
		}
	}
	return false
}

func TestCheckReportsMissingBwrap(t *testing.T) {
	_, err := NewManager(Config{Root: t.TempDir(), BwrapPath: "/nonexistent/bwrap"})
	require.ErrorContains(t, err, "bubblewrap")
}

func TestSandboxNoneIsConfinedToWorkdir(t *testing.T) {
	e := setup(t)
	m := e.manager(t, Config{Sandbox: SandboxNone})
	w, err := m.Prepare(context.Background(), 1, e.remote, "b")
	require.NoError(t, err)
	t.Setenv("SUPERAGENT_SECRET_PROBE", "PROBE")
	res, err := w.Run(context.Background(), "pwd; env", "pkg", 0)
	require.NoError(t, err)
	require.Contains(t, res.Output, filepath.Join(w.Dir(), "pkg"))
	require.NotContains(t, res.Output, "PROBE")
	_, err = w.Run(context.Background(), "pwd", "..", 0)
	require.Error(t, err)
}

func TestSandboxExtraReadOnly(t *testing.T) {
	tool := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(tool, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tool, "bin", "mytool"), []byte("#!/bin/sh\necho tool ran\n"), 0o755))
	_, w := sandboxed(t, Config{ExtraReadOnly: []string{tool}})
	res := run(t, w, "mytool && touch "+filepath.Join(tool, "bin", "x"))
	require.Contains(t, res.Output, "tool ran")
	require.NotEqual(t, 0, res.ExitCode, "extra paths are read-only: %s", res.Output)
}

func TestConfigValidation(t *testing.T) {
	_, err := NewManager(Config{
		MaxBytes:       -1,
		Sandbox:        "docker",
		MaxOutputBytes: -1,
		MaxTimeout:     -1,
		ExtraReadOnly:  []string{"relative", "/workspace/x", "/nonexistent-path-for-test"},
	})
	require.Error(t, err)
	// Every problem at once.
	for _, want := range []string{"root is required", "max bytes", "docker", "max output", "max timeout", "relative", "/workspace/x", "nonexistent"} {
		require.ErrorContains(t, err, want)
	}
}

func TestRunTimeoutIsCappedByMaxTimeout(t *testing.T) {
	_, w := sandboxed(t, Config{MaxTimeout: time.Second})
	res, err := w.Run(context.Background(), "sleep 1003", "", time.Hour)
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Less(t, res.Duration, 10*time.Second)
}
