package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// sandboxWorkspace is where the workspace appears inside the sandbox.
const sandboxWorkspace = "/workspace"

// systemDirs are bound read-only, or recreated as symlinks where the host has
// symlinks (merged /usr).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are the parts of /etc a shell and common tools need. The rest of
// /etc stays out: it can hold service configuration.
var etcFiles = []string{
	"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf",
	"/etc/host.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
	"/etc/ssl", "/etc/ca-certificates", "/etc/alternatives", "/etc/mime.types",
	"/etc/inputrc", "/etc/bash.bashrc", "/etc/profile",
}

// bwrapArgs returns bubblewrap's arguments (without the command) for a
// sandbox around the workspace at dir, starting in chdir.
func bwrapArgs(cfg Config, dir, chdir string) []string {
	args := []string{
		"--unshare-all",
		"--die-with-parent",
		"--new-session",
		"--clearenv",
		"--uid", "65534", "--gid", "65534",
		"--hostname", "sandbox",
	}
	if cfg.Network {
		args = append(args, "--share-net")
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		args = append(args, "--ro-bind-try", f, f)
	}
	args = append(args,
		"--proc", "/proc",
		"--dev", "/dev",
		// RAM-backed, so it gets the workspace's limit too.
		"--size", strconv.FormatInt(cfg.MaxBytes, 10), "--tmpfs", "/tmp",
		"--dir", "/tmp/home",
	)
	// After /tmp, so that paths under it are not hidden by the tmpfs.
	for _, p := range cfg.ExtraReadOnly {
		args = append(args, "--ro-bind", p, p)
	}
	args = append(args,
		"--bind", dir, sandboxWorkspace,
		// Mounted over the writable workspace: sandboxed code may read
		// history but not plant hooks or config that the host's git obeys.
		"--ro-bind", filepath.Join(dir, ".git"), sandboxWorkspace+"/.git",
		"--remount-ro", "/",
		"--chdir", chdir,
	)
	for _, kv := range sandboxEnv(cfg) {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	return args
}

// sandboxEnv is the whole environment of a command; nothing from the host's
// passes through.
func sandboxEnv(cfg Config) []string {
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, p := range cfg.ExtraReadOnly {
		if fi, err := os.Stat(filepath.Join(p, "bin")); err == nil && fi.IsDir() {
			path += ":" + filepath.Join(p, "bin")
		}
	}
	return []string{
		"PATH=" + path,
		"HOME=/tmp/home",
		"LANG=C.UTF-8",
		"TMPDIR=/tmp",
	}
}

// Result is the outcome of a command.
type Result struct {
	// Output is stdout and stderr interleaved, capped at
	// Config.MaxOutputBytes.
	Output string
	// ExitCode is the command's exit status; -1 when it was killed.
	ExitCode int
	// TimedOut reports that the command was killed at its timeout.
	TimedOut bool
	// Truncated reports that Output was cut.
	Truncated bool
	Duration  time.Duration
}

// Run runs command with /bin/sh -c inside the sandbox, in workdir (relative to
// the workspace root), for at most timeout (0 means DefaultTimeout; capped at
// Config.MaxTimeout). A non-zero exit is reported in Result, not as an error;
// errors are for failures on the host side.
func (w *Workspace) Run(ctx context.Context, command string, workdir string, timeout time.Duration) (Result, error) {
	if err := w.exists(); err != nil {
		return Result{}, err
	}
	rel, err := w.relPath(workdir)
	if err != nil {
		return Result{}, fmt.Errorf("running command: workdir: %w", err)
	}
	if err := w.checkWorkdir(rel); err != nil {
		return Result{}, fmt.Errorf("running command: workdir %q: %w", workdir, err)
	}
	switch {
	case timeout <= 0:
		timeout = DefaultTimeout
	case timeout > w.m.cfg.MaxTimeout:
		timeout = w.m.cfg.MaxTimeout
	}

	var cmd *exec.Cmd
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch w.m.cfg.Sandbox {
	case SandboxNone:
		cmd = exec.CommandContext(runCtx, "/bin/sh", "-c", command)
		cmd.Dir = filepath.Join(w.dir, filepath.FromSlash(rel))
	default:
		if w.bwrap == "" {
			return Result{}, errors.New("running command: sandbox not checked; create the workspace through NewManager")
		}
		args := bwrapArgs(w.m.cfg, w.dir, path2sandbox(rel))
		args = append(args, "/bin/sh", "-c", command)
		cmd = exec.CommandContext(runCtx, w.bwrap, args...)
		cmd.Dir = w.dir
	}
	cmd.Env = sandboxEnv(w.m.cfg)
	out := newCappedWriter(w.m.cfg.MaxOutputBytes)
	cmd.Stdout = out
	cmd.Stderr = out
	// Its own process group, killed whole at the timeout. Inside bwrap the
	// PID namespace dies with bwrap, taking every descendant along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second

	start := time.Now()
	err = cmd.Run()
	res := Result{Duration: time.Since(start)}
	res.Output, res.Truncated = out.result()
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if err != nil {
		var exitErr *exec.ExitError
		switch {
		case ctx.Err() != nil:
			return res, fmt.Errorf("running command: %w", ctx.Err())
		case runCtx.Err() != nil:
			res.TimedOut = true
			res.ExitCode = -1
			res.Output += fmt.Sprintf("\n[command timed out after %s and was killed]", timeout)
		case errors.As(err, &exitErr):
		case errors.Is(err, exec.ErrWaitDelay):
			// A background process kept the output open; it is gone now.
		default:
			return res, fmt.Errorf("running command: %w", err)
		}
	}
	if size, err := w.size(); err != nil {
		return res, fmt.Errorf("running command: %w", err)
	} else if size > w.m.cfg.MaxBytes {
		res.Output += fmt.Sprintf("\n[error: the workspace now holds %d bytes, over its limit of %d; delete files (build output, caches) before anything else — commits are refused until then]",
			size, w.m.cfg.MaxBytes)
	}
	return res, nil
}

func path2sandbox(rel string) string {
	if rel == "." {
		return sandboxWorkspace
	}
	return sandboxWorkspace + "/" + rel
}

// checkWorkdir makes sure rel is a directory inside the workspace, following
// symlinks only where they stay inside.
func (w *Workspace) checkWorkdir(rel string) error {
	root, err := w.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("not a directory")
	}
	if w.m.cfg.Sandbox == SandboxNone {
		// The host's chdir follows symlinks; os.Root already refused those
		// leaving the workspace, but check the resolved path too.
		real, err := filepath.EvalSymlinks(filepath.Join(w.dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		if real != w.dir && !strings.HasPrefix(real, w.dir+"/") {
			return errors.New("outside the workspace")
		}
	}
	return nil
}

// cappedWriter keeps the first and last max/2 bytes written and counts the
// rest.
type cappedWriter struct {
	mu      sync.Mutex
	max     int
	head    []byte
	tail    []byte // ring buffer once full
	tailPos int
	total   int64
}

func newCappedWriter(maxBytes int) *cappedWriter {
	return &cappedWriter{max: maxBytes}
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	headMax := c.max / 2
	tailMax := c.max - headMax
	rest := p
	if room := headMax - len(c.head); room > 0 {
		n := min(room, len(rest))
		c.head = append(c.head, rest[:n]...)
		rest = rest[n:]
	}
	if tailMax == 0 {
		return len(p), nil
	}
	if len(rest) >= tailMax {
		c.tail = append(c.tail[:0], rest[len(rest)-tailMax:]...)
		c.tailPos = 0
		return len(p), nil
	}
	for len(rest) > 0 {
		if len(c.tail) < tailMax {
			n := min(tailMax-len(c.tail), len(rest))
			c.tail = append(c.tail, rest[:n]...)
			rest = rest[n:]
			continue
		}
		n := copy(c.tail[c.tailPos:], rest)
		c.tailPos = (c.tailPos + n) % tailMax
		rest = rest[n:]
	}
	return len(p), nil
}

// result returns the kept output, with a note where bytes were cut.
func (c *cappedWriter) result() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := append(append([]byte{}, c.tail[c.tailPos:]...), c.tail[:c.tailPos]...)
	kept := int64(len(c.head) + len(tail))
	if kept >= c.total {
		return strings.ToValidUTF8(string(c.head)+string(tail), "\uFFFD"), false
	}
	return strings.ToValidUTF8(string(c.head), "\uFFFD") +
		fmt.Sprintf("\n[... %d bytes of output cut; showing the first %d and the last %d ...]\n", c.total-kept, len(c.head), len(tail)) +
		strings.ToValidUTF8(string(tail), "\uFFFD"), true
}
