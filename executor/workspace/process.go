package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a long-lived command in the Ticket's sandbox whose stdin and
// stdout belong to the caller: a tool server the Executor talks to while
// its Session runs. It is sandboxed like a command of Run (the same
// namespaces, limits, cgroup and egress policy), with a small tmpfs of its
// own at /tmp instead of the Ticket's, so commands that come and go do not
// empty it. It ends at Close, when the context it was started with ends,
// or when it exits.
type Process struct {
	// Stdin is the process's standard input; Stdout its standard output.
	Stdin  io.WriteCloser
	Stdout io.ReadCloser

	cmd     *exec.Cmd
	stderr  *cappedWriter
	cleanup []func()
	done    chan struct{}
	once    sync.Once
	waitErr error
}

// processStderr is how much of a Process's standard error is kept.
const processStderr = 8 << 10

// Start starts argv (a program and its arguments, looked up on the
// sandbox's PATH) in the workspace's sandbox, in its root, with the
// sandbox's environment, the view's (see With) and env ("NAME=value").
func (w *Workspace) Start(ctx context.Context, argv []string, env []string) (p *Process, err error) {
	if err := w.exists(); err != nil {
		return nil, err
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("starting a process: no command")
	}
	x := w.extras
	x.id = identityOf(w.id)
	x.env = append(append([]string{}, x.env...), env...)
	p = &Process{stderr: newCappedWriter(processStderr), done: make(chan struct{})}
	defer func() {
		if err != nil {
			p.runCleanup()
		}
	}()
	var cmd *exec.Cmd
	var afterStart func(pgid int) error
	if w.m.cfg.Sandbox == SandboxNone {
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = w.dir
		cmd.Env = commandEnv(w.m.cfg, x, x.cache, "")
	} else {
		if w.tools.bwrap == "" {
			return nil, errors.New("starting a process: sandbox not checked; create the workspace through NewManager")
		}
		cmd, afterStart, err = w.sandboxedProcess(ctx, p, shellWords(argv), x)
		if err != nil {
			return nil, fmt.Errorf("starting a process: %w", err)
		}
	}
	if p.Stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("starting a process: %w", err)
	}
	if p.Stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, fmt.Errorf("starting a process: %w", err)
	}
	cmd.Stderr = p.stderr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting a process: %w", err)
	}
	p.cmd = cmd
	if afterStart != nil {
		if err := afterStart(cmd.Process.Pid); err != nil {
			p.kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("starting a process: %w", err)
		}
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// sandboxedProcess builds the bubblewrap command of a Process and what
// must follow its start; what it sets up is undone by p's cleanup.
func (w *Workspace) sandboxedProcess(ctx context.Context, p *Process, command string, x extras) (*exec.Cmd, func(int) error, error) {
	m := w.m
	var proxySock string
	if len(m.cfg.egress) > 0 {
		proxy, err := m.startEgress(x.id.ticket)
		if err != nil {
			return nil, nil, fmt.Errorf("starting the egress proxy: %w", err)
		}
		p.cleanup = append(p.cleanup, func() { proxy.stop() })
		proxySock = proxy.sock
	}
	l, err := newLaunch(m.cfg, w.dir, sandboxWorkspace, "exec "+command, proxySock, x)
	if err != nil {
		return nil, nil, err
	}
	p.cleanup = append(p.cleanup, l.close)
	if l.privileged {
		if err := chownTree(w.dir, x.id.uid); err != nil {
			return nil, nil, err
		}
	}
	cmd := exec.CommandContext(ctx, w.tools.bwrap, l.args...)
	cmd.Dir = w.dir
	cmd.Env = sandboxEnv(m.cfg)
	cmd.ExtraFiles = l.files
	if m.cfg.cgroup != nil {
		cg, err := m.cfg.cgroup.create(m.cfg, x.id.ticket)
		if err != nil {
			return nil, nil, err
		}
		p.cleanup = append(p.cleanup, func() { cg.kill(); _ = cg.remove() })
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.fd.Fd())}
	}
	return cmd, func(int) error {
		l.started()
		if !m.cfg.slirp() {
			return nil
		}
		stop, err := startNetwork(ctx, l, w.tools)
		if err != nil {
			return fmt.Errorf("setting up the sandbox network: %w", err)
		}
		p.cleanup = append(p.cleanup, stop)
		return nil
	}, nil
}

// shellWords quotes argv for /bin/sh.
func shellWords(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

func (p *Process) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (p *Process) runCleanup() {
	for i := len(p.cleanup) - 1; i >= 0; i-- {
		p.cleanup[i]()
	}
	p.cleanup = nil
}

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Close kills the process and everything it started, waits for it and
// frees what its sandbox held. It is safe to call more than once.
func (p *Process) Close() error {
	p.once.Do(func() {
		p.kill()
		_ = p.Stdin.Close()
		<-p.done
		p.runCleanup()
	})
	return nil
}

// Stderr returns the kept part of the process's standard error.
func (p *Process) Stderr() string {
	s, _ := p.stderr.result()
	return s
}

// ExitCode is the process's exit status once it has exited; -1 before,
// or when it was killed.
func (p *Process) ExitCode() int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}
