package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// sandboxUID is the uid and gid commands run as inside the sandbox's user
// namespace, mapped to the service's own uid, when the service is not
// root.
const sandboxUID = 65534

// When the service runs as root, each Ticket's commands run as a uid (and
// gid) of their own on the host: ticketUIDBase plus the Ticket's id modulo
// ticketUIDCount. Root-owned files stay closed to them, RLIMIT_NPROC applies
// (the kernel never enforces it for host root) and counts only that
// Ticket's processes, and one Ticket cannot signal or trace another's.
// The range lies far above the ids distributions hand out (and below
// 2^31, which some tools read as signed).
const (
	ticketUIDBase  = 2_000_000_000
	ticketUIDCount = 1 << 24
)

// identity is whom a command runs as.
type identity struct {
	ticket int64
	uid    int
	// host: uid is the command's uid on the host (the service is root),
	// not one inside a user namespace mapped to the service's.
	host bool
}

// identityOf returns the identity of ticket's commands.
func identityOf(ticket int64) identity {
	if os.Geteuid() != 0 {
		return identity{ticket: ticket, uid: sandboxUID}
	}
	return identity{ticket: ticket, uid: ticketUIDBase + int(ticket%ticketUIDCount), host: true}
}

// passwd and group are the sandbox's /etc/passwd and /etc/group: root,
// the command's own user (so git, whoami and getpwuid work) and nobody.
func (id identity) passwd() []byte {
	lines := "root:x:0:0:root:/root:/usr/sbin/nologin\n"
	if id.uid != sandboxUID {
		lines += fmt.Sprintf("sandbox:x:%d:%d:sandbox:/tmp/home:/bin/sh\n", id.uid, id.uid)
	}
	return []byte(lines + "nobody:x:65534:65534:nobody:/tmp/home:/bin/sh\n")
}

func (id identity) group() []byte {
	lines := "root:x:0:\n"
	if id.uid != sandboxUID {
		lines += fmt.Sprintf("sandbox:x:%d:\n", id.uid)
	}
	return []byte(lines + "nogroup:x:65534:\n")
}

// systemDirs are bound read-only, or recreated as symlinks where the host has
// symlinks (merged /usr).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are the parts of /etc a shell and common tools need. The rest of
// /etc stays out: it can hold service configuration. Of /etc/ssl only the
// public certificates go in; /etc/ssl/private holds the host's keys.
var etcFiles = []string{
	"/etc/hosts", "/etc/nsswitch.conf",
	"/etc/host.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
	"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/alternatives", "/etc/mime.types",
	"/etc/inputrc", "/etc/bash.bashrc", "/etc/profile",
	// Fontconfig's configuration: without it a headless browser draws no text.
	"/etc/fonts",
}

// sandboxResolvConf points the sandbox at slirp4netns's DNS forwarder.
const sandboxResolvConf = "nameserver 10.0.2.3\n"

// launch is one bubblewrap invocation: its arguments and the files it
// inherits as fd 3, 4, ... in order.
type launch struct {
	args []string
	// privileged is set when the service runs as root: bwrap then makes no
	// user namespace, and setpriv drops the command to its Ticket's uid on
	// the host.
	privileged bool
	// overlay is the mount a private mount namespace makes before bwrap
	// starts (privileged only): the build caches' layers.
	overlay *overlayMount
	files   []*os.File // bwrap's ends, closed once it has started
	ours    []*os.File // our ends of its pipes
	info    *os.File   // bwrap's --info-fd, read for the child pid (network only)
	block   *os.File   // bwrap's --block-fd, written once the network is up
}

// pass hands f to bwrap and returns the fd number it will have there.
func (l *launch) pass(f *os.File) string {
	l.files = append(l.files, f)
	return strconv.Itoa(2 + len(l.files))
}

// pipe returns a pipe whose write end is ours and read end bwrap's.
func (l *launch) pipe() (r, w *os.File, err error) {
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("creating pipe for bubblewrap: %w", err)
	}
	l.ours = append(l.ours, w)
	return r, w, nil
}

// data returns the fd number of a pipe holding data for bwrap to read.
func (l *launch) data(data []byte) (string, error) {
	r, w, err := l.pipe()
	if err != nil {
		return "", err
	}
	fd := l.pass(r)
	// Small enough for the pipe's buffer, so this does not block.
	if _, err := w.Write(data); err != nil {
		return "", fmt.Errorf("writing to bubblewrap: %w", err)
	}
	return fd, w.Close()
}

// started closes bwrap's ends of the files, which it now holds.
func (l *launch) started() {
	for _, f := range l.files {
		_ = f.Close()
	}
	l.files = nil
}

func (l *launch) close() {
	l.started()
	for _, f := range l.ours {
		_ = f.Close()
	}
}

// newLaunch builds the bubblewrap invocation that runs command with
// /bin/sh -c in a sandbox around the workspace at dir, starting in chdir.
// With an egress list, proxySock is the egress proxy's socket on the host.
func newLaunch(cfg Config, dir, chdir, command, proxySock string, x extras) (l *launch, err error) {
	l = &launch{privileged: x.id.host}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if l.privileged {
		// No user namespace: as root, bwrap can make the others directly,
		// and one would map the command's uid back to host root.
		l.args = []string{"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"}
	} else {
		// A user namespace whose sandboxUID is the service's own uid.
		l.args = []string{"--unshare-all", "--uid", strconv.Itoa(sandboxUID), "--gid", strconv.Itoa(sandboxUID)}
	}
	l.args = append(l.args,
		"--die-with-parent",
		"--new-session",
		"--clearenv",
		"--hostname", "sandbox",
	)
	if cfg.slirp() {
		infoR, infoW, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("creating pipe for bubblewrap: %w", err)
		}
		l.ours = append(l.ours, infoR)
		l.info = infoR
		blockR, blockW, err := l.pipe()
		if err != nil {
			_ = infoW.Close()
			return nil, err
		}
		l.block = blockW
		l.args = append(l.args, "--info-fd", l.pass(infoW), "--block-fd", l.pass(blockR))
	}
	if prog := seccompProgram(); prog != nil {
		fd, err := l.data(prog)
		if err != nil {
			return nil, err
		}
		l.args = append(l.args, "--seccomp", fd)
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				l.args = append(l.args, "--symlink", target, d)
			}
		case fi.IsDir():
			l.args = append(l.args, "--ro-bind", d, d)
		}
	}
	// bwrap makes missing parents of a mount point mode 0700; as root that
	// shuts the sandbox user out of them.
	l.args = append(l.args, parentDirs(etcFiles)...)
	for _, f := range etcFiles {
		l.args = append(l.args, "--ro-bind-try", f, f)
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{"/etc/passwd", x.id.passwd()}, {"/etc/group", x.id.group()}} {
		fd, err := l.data(f.data)
		if err != nil {
			return nil, err
		}
		l.args = append(l.args, "--perms", "0644", "--ro-bind-data", fd, f.path)
	}
	if cfg.slirp() {
		fd, err := l.data([]byte(sandboxResolvConf))
		if err != nil {
			return nil, err
		}
		l.args = append(l.args, "--perms", "0644", "--ro-bind-data", fd, "/etc/resolv.conf")
	} else {
		l.args = append(l.args, "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf")
	}
	l.args = append(l.args, "--proc", "/proc", "--dev", "/dev")
	if x.tmp != "" {
		// On the Ticket's disk, counted by its quota.
		l.args = append(l.args, "--bind", x.tmp, "/tmp")
	} else {
		// The start-up check's: RAM-backed and small.
		l.args = append(l.args, "--perms", "1777", "--size", strconv.Itoa(16<<20), "--tmpfs", "/tmp")
	}
	l.args = append(l.args, "--perms", "0777", "--dir", "/tmp/home")
	// After /tmp, so that paths under it are not hidden by the tmpfs.
	l.args = append(l.args, parentDirs(cfg.ExtraReadOnly)...)
	for _, p := range cfg.ExtraReadOnly {
		l.args = append(l.args, "--ro-bind", p, p)
	}
	if x.cache != "" {
		bind := "--ro-bind"
		if x.cacheRW {
			bind = "--bind"
		}
		l.args = append(l.args, bind, x.cache, sandboxCache)
	}
	for _, b := range x.mounts {
		bind := "--ro-bind"
		if b.rw {
			bind = "--bind"
		}
		l.args = append(l.args, bind, b.src, b.dst)
	}
	if x.build.upper != "" {
		src := x.build.upper
		if x.build.lower != "" && l.privileged {
			l.overlay = &overlayMount{lower: x.build.lower, upper: x.build.upper, work: x.build.work, target: x.build.merged}
			src = x.build.merged
		}
		l.args = append(l.args, "--bind", src, sandboxBuild)
	}
	env := commandEnv(cfg, x, sandboxCache, sandboxBuild)
	if proxySock != "" {
		l.args = append(l.args, parentDirs([]string{sandboxRelay})...)
		l.args = append(l.args, "--ro-bind", cfg.RelayPath, sandboxRelay, "--ro-bind", proxySock, sandboxProxySck)
		env = append(env, proxyEnv()...)
	}
	bindWorkspace := "--bind"
	if x.workspaceRO {
		bindWorkspace = "--ro-bind"
	}
	l.args = append(l.args, bindWorkspace, dir, sandboxWorkspace)
	if !x.noGit {
		// Mounted over the writable workspace: sandboxed code may read
		// history but not plant hooks or config that the host's git obeys.
		l.args = append(l.args, "--ro-bind", filepath.Join(dir, ".git"), sandboxWorkspace+"/.git")
	}
	l.args = append(l.args, "--remount-ro", "/", "--chdir", chdir)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		l.args = append(l.args, "--setenv", k, v)
	}
	// setpriv, then the relay (a Go program, which needs more address
	// space than a small memory limit leaves it), then the limits.
	if l.privileged {
		id := strconv.Itoa(x.id.uid)
		l.args = append(l.args, "/usr/bin/setpriv", "--reuid="+id, "--regid="+id, "--clear-groups",
			"--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--")
	}
	limits := cfg
	if x.addressSpace > 0 {
		limits.MemoryBytes = x.addressSpace
	}
	cmd := append(limitArgs(limits), "/bin/sh", "-c", command)
	if proxySock != "" {
		cmd = relayArgs(cmd...)
	}
	l.args = append(l.args, cmd...)
	return l, nil
}

// parentDirs returns bwrap arguments that make the parents of paths, where
// missing, readable and searchable by everyone.
func parentDirs(paths []string) []string {
	var args []string
	seen := map[string]bool{}
	for _, p := range paths {
		var parents []string
		for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if d := parents[i]; !seen[d] {
				seen[d] = true
				args = append(args, "--perms", "0755", "--dir", d)
			}
		}
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
		// .git belongs to the host's user, the work tree to the sandbox's;
		// without this git inside refuses the repository as not its own.
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=safe.directory",
		"GIT_CONFIG_VALUE_0=" + sandboxWorkspace,
	}
}

// proxyEnv points a command's tools at the egress relay. The sandbox's
// loopback is its own, so it need not go through the proxy.
func proxyEnv() []string {
	proxy := "http://" + egressProxyAddr
	noProxy := "localhost,127.0.0.1,::1"
	return []string{
		"HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy, "http_proxy=" + proxy, "https_proxy=" + proxy,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
	}
}

// Result is the outcome of a command.
type Result struct {
	// Output is stdout and stderr interleaved, capped at
	// Config.MaxOutputBytes, followed by notes on any limit the command hit.
	Output string
	// ExitCode is the command's exit status; -1 when it was killed.
	ExitCode int
	// TimedOut reports that the command was killed at its timeout.
	TimedOut bool
	// OverQuota reports that the command was killed because the workspace
	// passed its disk quota (Config.MaxBytes) or its file limit
	// (Config.MaxFiles).
	OverQuota bool
	// Truncated reports that Output was cut.
	Truncated bool
	Duration  time.Duration
}

// Run runs command with /bin/sh -c inside the sandbox, in workdir (relative to
// the workspace root), for at most timeout (0 means DefaultTimeout; capped at
// Config.MaxTimeout). A non-zero exit is reported in Result, not as an error;
// errors are for failures on the host side.
func (w *Workspace) Run(ctx context.Context, command string, workdir string, timeout time.Duration) (Result, error) {
	return w.run(ctx, command, workdir, timeout, runOpts{})
}

// runOpts are what a command run by the service itself (a screenshot)
// changes of Run.
type runOpts struct {
	// collect, if not nil, is given the host directory of the command's
	// /tmp once the command has ended, before it is emptied.
	collect func(tmp string)
	// addressSpace, if not zero, is the command's RLIMIT_AS instead of
	// Config.MemoryBytes (a browser reserves far more than it uses).
	addressSpace int64
}

func (w *Workspace) run(ctx context.Context, command string, workdir string, timeout time.Duration, opt runOpts) (Result, error) {
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
	x := w.extras
	x.id = identityOf(w.id)
	x.addressSpace = opt.addressSpace
	if x.tmp, x.build, err = w.prepareScratch(ctx, w.buildLower); err != nil {
		return Result{}, fmt.Errorf("running command: %w", err)
	}
	// What the command left in /tmp goes with it.
	defer func() { _ = emptyDir(x.tmp) }()
	quota := w.quota()

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := newCappedWriter(w.m.cfg.MaxOutputBytes)
	var st runState
	switch w.m.cfg.Sandbox {
	case SandboxNone:
		cmd := exec.CommandContext(runCtx, "/bin/sh", "-c", command)
		cmd.Dir = filepath.Join(w.dir, filepath.FromSlash(rel))
		cmd.Env = commandEnv(w.m.cfg, x, x.cache, x.build.upper)
		st, err = runGroup(cmd, out, nil, nil)
	default:
		if w.tools.bwrap == "" {
			return Result{}, errors.New("running command: sandbox not checked; create the workspace through NewManager")
		}
		st, err = w.m.runSandboxed(runCtx, w.tools, w.dir, path2sandbox(rel), command, out, x, quota)
	}
	if opt.collect != nil {
		opt.collect(x.tmp)
	}
	res := Result{Duration: st.duration, ExitCode: st.exitCode, OverQuota: st.over != usage{}}
	res.Output, res.Truncated = out.result()
	if err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("running command: %w", ctx.Err())
		}
		return res, fmt.Errorf("running command: %w", err)
	}
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("running command: %w", ctx.Err())
	case res.OverQuota:
		// What else the command ran into still explains it: a single file
		// stopped at the size limit is usually what carried the workspace
		// past its quota.
		res.Output += limitNotes(w.m.cfg, x.id, res.ExitCode, res.Output, st.cgroup)
		res.ExitCode = -1
		res.Output += "\n[stopped: the workspace passed " + quota.overNote(st.over) +
			" (its /tmp and build caches count too); delete files (build output, caches) before anything else — commits are refused until then]"
		return res, nil
	case runCtx.Err() != nil:
		res.TimedOut = true
		res.ExitCode = -1
		res.Output += fmt.Sprintf("\n[command timed out after %s and was killed]", timeout)
	}
	if w.m.cfg.Sandbox != SandboxNone {
		res.Output += limitNotes(w.m.cfg, x.id, res.ExitCode, res.Output, st.cgroup)
	}
	for _, r := range st.refused {
		res.Output += "\n[the sandbox's egress proxy refused " + r + "; only the hosts in " + egressSetting + " are reachable]"
	}
	if used, err := quota.measure(); err != nil {
		return res, fmt.Errorf("running command: %w", err)
	} else if used.exceeds(quota.maxBytes, quota.maxFiles) {
		res.Output += "\n[error: the workspace is over " + quota.overNote(used) +
			" (its build caches count too); delete files (build output, caches) before anything else — commits are refused until then]"
	}
	return res, nil
}

// quota is what the Ticket's commands may hold: the workspace and its
// scratch directory (/tmp, build caches) together.
func (w *Workspace) quota() *quotaWatch {
	return &quotaWatch{dirs: []string{w.dir, w.m.scratchDir(w.id)}, maxBytes: w.m.cfg.MaxBytes, maxFiles: w.m.cfg.MaxFiles}
}

// runState is how a command ended.
type runState struct {
	exitCode int
	duration time.Duration
	over     usage    // what the watched directories held when the quota watcher stopped the command; zero if it did not
	refused  []string // what the egress proxy refused, at most egressMaxRefusals
	cgroup   cgroupEvents
}

// runSandboxed runs command under bubblewrap with the workspace at dir and
// returns how it ended. A non-zero exit or a kill at ctx's deadline is not an
// error. With quota, its directories are watched during the command and the
// command killed once they pass its limits.
func (m *Manager) runSandboxed(ctx context.Context, tools sandboxTools, dir, chdir, command string, out io.Writer, x extras, quota *quotaWatch) (st runState, err error) {
	var proxySock string
	if len(m.cfg.egress) > 0 {
		proxy, err := m.startEgress(x.id.ticket)
		if err != nil {
			return runState{}, fmt.Errorf("starting the egress proxy: %w", err)
		}
		defer func() { st.refused = proxy.stop() }()
		proxySock = proxy.sock
	}
	l, err := newLaunch(m.cfg, dir, chdir, command, proxySock, x)
	if err != nil {
		return runState{}, err
	}
	defer l.close()
	if l.privileged && !x.workspaceRO {
		if quota == nil || len(quota.dirs) == 0 || quota.dirs[0] != dir {
			if err := chownTree(dir, x.id.uid); err != nil {
				return runState{}, err
			}
		} else {
			// The quota's first walk of the work tree hands it over.
			quota.owner = x.id.uid
		}
	}
	var cg *sandboxCgroup
	if m.cfg.cgroup != nil {
		if cg, err = m.cfg.cgroup.create(m.cfg, x.id.ticket); err != nil {
			return runState{}, err
		}
		defer func() {
			st.cgroup = cg.events()
			if rerr := cg.remove(); rerr != nil && err == nil {
				err = rerr
			}
		}()
	}
	var maxBytes, maxFiles int64
	if quota != nil {
		if maxBytes, maxFiles, err = quota.bars(); err != nil {
			return runState{}, err
		}
	}
	cmd := exec.CommandContext(ctx, tools.bwrap, l.args...)
	cmd.Dir = dir
	cmd.Env = sandboxEnv(m.cfg)
	cmd.ExtraFiles = l.files
	started := func(pgid int) (func() usage, error) {
		l.started()
		var stopNet func()
		if m.cfg.slirp() {
			stop, err := startNetwork(ctx, l, tools)
			if err != nil {
				return nil, fmt.Errorf("setting up the sandbox network: %w", err)
			}
			stopNet = stop
		}
		stopWatch := func() usage { return usage{} }
		if quota != nil {
			stopWatch = watchQuota(quota, maxBytes, maxFiles, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		}
		return func() usage {
			over := stopWatch()
			if stopNet != nil {
				stopNet()
			}
			return over
		}, nil
	}
	if l.overlay != nil {
		// bwrap starts in, and keeps, a mount namespace holding the
		// overlay.
		return l.overlay.run(func() (runState, error) { return runGroup(cmd, out, cg, started) })
	}
	return runGroup(cmd, out, cg, started)
}

// runGroup runs cmd in its own process group, killed whole when cmd's
// context ends. started, if not nil, runs once cmd has started; it returns
// a function called once cmd has ended, which returns what the watched
// directories held when the quota watcher killed the command, or zero.
func runGroup(cmd *exec.Cmd, out io.Writer, cg *sandboxCgroup, started func(pgid int) (func() usage, error)) (runState, error) {
	cmd.Stdout = out
	cmd.Stderr = out
	// Its own process group, killed whole at the timeout. Inside bwrap the
	// PID namespace dies with bwrap, taking every descendant along; with a
	// cgroup, bwrap starts in it and it is killed whole as well.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if cg != nil {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(cg.fd.Fd())
	}
	cmd.Cancel = func() error {
		if cg != nil {
			cg.kill()
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return runState{}, err
	}
	stop := func() usage { return usage{} }
	if started != nil {
		s, err := started(cmd.Process.Pid)
		if err != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			return runState{}, err
		}
		stop = s
	}
	err := cmd.Wait()
	st := runState{duration: time.Since(start), over: stop()}
	if cmd.ProcessState != nil {
		st.exitCode = cmd.ProcessState.ExitCode()
	}
	// Once the process has exited, what Wait adds (the context's error at a
	// kill, exec.ErrWaitDelay when a background process held the output
	// open) is in the exit state already.
	if err != nil && cmd.ProcessState == nil {
		return st, err
	}
	return st, nil
}

func path2sandbox(rel string) string {
	if rel == "." {
		return sandboxWorkspace
	}
	return sandboxWorkspace + "/" + rel
}

// InsideDir returns p relative to the workspace root when it names a
// directory inside the workspace, as Run's workdir and as the file tools
// resolve it: through os.Root, so a symlink may lead there but not out.
func (w *Workspace) InsideDir(p string) (string, error) {
	rel, err := w.relPath(p)
	if err != nil {
		return "", err
	}
	if err := w.checkWorkdir(rel); err != nil {
		return "", fmt.Errorf("directory %q: %w", p, err)
	}
	return rel, nil
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
		fmt.Sprintf("\n[... output cut at %s of %s: %d bytes of output cut; showing the first %d and the last %d ...]\n",
			formatBytes(int64(c.max)), formatBytes(c.total), c.total-kept, len(c.head), len(tail)) +
		strings.ToValidUTF8(string(tail), "\uFFFD"), true
}
