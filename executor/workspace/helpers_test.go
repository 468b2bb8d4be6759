package workspace

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The sandbox starts this binary as its egress relay.
	RunRelay()
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

const testToken = "ghs_TESTtoken1234567890abcdefSECRET"

// requireBwrap skips the test when bubblewrap is missing, except in CI, where
// a missing sandbox is a failure.
func requireBwrap(t *testing.T) {
	t.Helper()
	requireTool(t, "bwrap")
}

// requireSlirp is requireBwrap for slirp4netns, which the sandbox network
// needs.
func requireSlirp(t *testing.T) {
	t.Helper()
	requireTool(t, "slirp4netns")
}

func requireTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("%s not installed: %v", name, err)
	}
}

// testEnv is a data dir laid out like the service's: secrets beside the
// workspace root, which holds the workspaces.
type testEnv struct {
	data   string
	root   string
	server *gitServer
	remote Remote
	bare   string
}

func setup(t *testing.T) *testEnv {
	t.Helper()
	data := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(data, "superagent.db"), []byte("DB-SECRET-CONTENT"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(data, "admin-token"), []byte("ADMIN-SECRET-TOKEN"), 0o600))
	srv := newGitServer(t, testToken)
	url, bare := srv.newRepo("o", "r", map[string]string{
		"README.md":         "hello\n",
		"AGENTS.md":         "root rules\n",
		"pkg/AGENTS.md":     "pkg rules\n",
		"pkg/sub/file.go":   "package sub\n\nfunc F() int { return 42 }\n",
		"pkg/sub/AGENTS.md": "sub rules\n",
		"docs/guide.md":     "# Guide\n",
	})
	return &testEnv{
		data:   data,
		root:   filepath.Join(data, "workspaces"),
		server: srv,
		remote: Remote{URL: url, Token: testToken, BaseBranch: "main"},
		bare:   bare,
	}
}

func (e *testEnv) manager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	cfg.Root = e.root
	if cfg.Sandbox == "" {
		cfg.Sandbox = SandboxNone
	}
	m, err := NewManager(cfg)
	require.NoError(t, err)
	return m
}

// serveTCP listens on addr and runs handle on each connection, closing
// the connection after it.
func serveTCP(t *testing.T, addr string, handle func(net.Conn)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln
}

// procLine runs command in w in the background, for at most timeout, and
// returns the line starting with prefix in the /proc/<pid>/file of the
// host process whose command line starts with args, once there is one,
// and a channel that receives Run's result.
func procLine(t *testing.T, w *Workspace, command string, timeout time.Duration, args, file, prefix string) (string, <-chan Result) {
	t.Helper()
	done := make(chan Result, 1)
	go func() {
		res, _ := w.Run(context.Background(), command, "", timeout)
		done <- res
	}()
	var found string
	require.Eventually(t, func() bool {
		pid := hostPIDWithArgs(args)
		if pid == 0 {
			return false
		}
		data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), file))
		if err != nil {
			return false
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if strings.HasPrefix(line, prefix) {
				found = line
			}
		}
		return true
	}, 5*time.Second, 20*time.Millisecond)
	return found, done
}
