package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sandboxBuild is where a command finds its build caches (Go's build and
// module caches, npm's and pip's): writable, kept between the commands of
// a Ticket on the Ticket's own disk, and, where the repository's setup
// warmed them, starting from setup's layer.
const sandboxBuild = "/build-cache"

// buildEnv points the toolchains' build and download caches at root.
func buildEnv(root string) []string {
	return []string{
		"GOCACHE=" + root + "/go-build",
		"GOMODCACHE=" + root + "/go-mod",
		"npm_config_cache=" + root + "/npm",
		"PIP_CACHE_DIR=" + root + "/pip",
		"XDG_CACHE_HOME=" + root,
	}
}

// buildLayers are the host directories of a command's build caches.
type buildLayers struct {
	// upper is what the command writes: the Ticket's own layer (or, for
	// setup, the layer it warms for the repository).
	upper string
	// lower is setup's layer of the repository, read-only beneath upper;
	// "" when there is none. work and merged are the overlay's work
	// directory and mount point, beside upper.
	lower, work, merged string
}

// scratchDir is the Ticket's own disk beside its workspace: /tmp and its
// build caches. It is outside the work tree, so git never sees it, and
// inside the quota.
func (m *Manager) scratchDir(ticketID int64) string {
	return filepath.Join(m.cfg.Root, ".scratch", "ticket-"+strconv.FormatInt(ticketID, 10))
}

// prepareScratch makes the Ticket's scratch directories, empties /tmp and
// hands what commands write to their user. lower is setup's build layer
// or "". Without an overlay (the service is not root), a Ticket's first
// command starts from a copy of it.
func (w *Workspace) prepareScratch(ctx context.Context, lower string) (tmp string, build buildLayers, err error) {
	dir := w.m.scratchDir(w.id)
	tmp = filepath.Join(dir, "tmp")
	build = buildLayers{upper: filepath.Join(dir, "build")}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", build, fmt.Errorf("making the ticket's scratch directory: %w", err)
	}
	if err := emptyDir(tmp); err != nil {
		return "", build, err
	}
	id := identityOf(w.id)
	fresh := false
	if _, err := os.Stat(build.upper); errors.Is(err, fs.ErrNotExist) {
		fresh = true
		if err := os.Mkdir(build.upper, 0o700); err != nil {
			return "", build, fmt.Errorf("making the ticket's build cache: %w", err)
		}
	}
	if lower != "" {
		if id.host {
			build.lower, build.work, build.merged = lower, filepath.Join(dir, "build-work"), filepath.Join(dir, "build-merged")
			for _, d := range []string{build.work, build.merged} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					return "", build, fmt.Errorf("making the ticket's build cache: %w", err)
				}
			}
		} else if fresh {
			// No overlay without root here (bubblewrap's needs 0.9):
			// a copy, shared blocks where the file system can.
			out, err := exec.CommandContext(ctx, "cp", "-a", "--reflink=auto", "--", lower+"/.", build.upper).CombinedOutput()
			if err != nil {
				return "", build, fmt.Errorf("copying the repository's build cache: %w: %s", err, strings.TrimSpace(string(out)))
			}
		}
	}
	if id.host {
		for _, d := range []string{tmp, build.upper} {
			if err := os.Lchown(d, id.uid, id.uid); err != nil {
				return "", build, fmt.Errorf("handing the scratch directory to the sandbox user: %w", err)
			}
		}
	}
	return tmp, build, nil
}

// emptyDir makes dir an empty directory, removing what a command left in
// it (os.RemoveAll does not follow symlinks).
func emptyDir(dir string) error {
	if err := removeAll(dir); err != nil {
		return fmt.Errorf("emptying %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	return nil
}

// overlayMount is an overlay of the build caches, made in a private mount
// namespace that bwrap then inherits: the host never sees it, and it goes
// with the command.
type overlayMount struct {
	lower, upper, work, target string
}

// run calls fn on an OS thread of its own whose mount namespace is
// private and holds the overlay at o.target; the processes fn starts
// inherit that namespace. The thread is never handed back to the
// runtime: it ends with fn, and the namespace with it and the command.
// Making the mount here, rather than with unshare(1) and mount(8) in
// front of bwrap, spares each command three programs' start.
func (o *overlayMount) run(fn func() (runState, error)) (runState, error) {
	for _, p := range []string{o.lower, o.upper, o.work, o.target} {
		if strings.ContainsAny(p, ",:\\") {
			return runState{}, fmt.Errorf("the path %q cannot be an overlay layer (it holds a comma, colon or backslash)", p)
		}
	}
	type result struct {
		st  runState
		err error
	}
	done := make(chan result, 1)
	var onThread func()
	onThread = func() {
		runtime.LockOSThread()
		if syscall.Gettid() == syscall.Getpid() {
			// The process's main thread, which the runtime keeps for
			// good (and /proc/self shows): hold it while another
			// thread does the work, then hand it back unchanged.
			held := make(chan struct{})
			go func() {
				defer close(held)
				onThread()
			}()
			<-held
			runtime.UnlockOSThread()
			return
		}
		// No UnlockOSThread: the runtime ends this thread, and its
		// mount namespace, with the goroutine.
		if err := o.mount(); err != nil {
			done <- result{err: err}
			return
		}
		st, err := fn()
		done <- result{st, err}
	}
	go onThread()
	r := <-done
	return r.st, r.err
}

// mount unshares the calling thread's mount namespace, keeps its mounts
// from reaching the host's, and mounts the overlay.
func (o *overlayMount) mount() error {
	if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
		return fmt.Errorf("mounting the build caches: a private mount namespace: %w", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("mounting the build caches: making the mounts private: %w", err)
	}
	opts := "lowerdir=" + o.lower + ",upperdir=" + o.upper + ",workdir=" + o.work
	if err := syscall.Mount("superagent-build", o.target, "overlay", 0, opts); err != nil {
		return fmt.Errorf("mounting the build caches (overlay): %w", err)
	}
	return nil
}

// stampCheckout sets the modification time of every regular file git
// checked out in dir to the committer time of commit, so that two
// checkouts of one commit (setup's clean one, each Ticket's clone) look
// alike to tools that key their caches on file times: Go's test cache
// reuses a test's result only when the files it opened have the same
// size and time. A file that differs between two commits gets their
// different times, so nothing stale is reused. Symlinks are left alone
// (a time set through one would land outside). git runs in dir with env;
// tree is the work tree whose files are stamped.
func (g gitRunner) stampCheckout(ctx context.Context, dir, tree, commit string, env []string) error {
	out, err := g.run(ctx, gitCmd{dir: dir, args: []string{"show", "-s", "--format=%ct", commit}, env: env})
	if err != nil {
		return fmt.Errorf("reading the commit's time: %w", err)
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		return fmt.Errorf("reading the commit's time: %q", out)
	}
	when := time.Unix(secs, 0)
	files, err := g.run(ctx, gitCmd{dir: dir, args: []string{"ls-files", "-z"}, env: env})
	if err != nil {
		return fmt.Errorf("listing the checkout: %w", err)
	}
	for name := range strings.SplitSeq(files, "\x00") {
		p := filepath.Join(tree, filepath.FromSlash(name))
		if fi, err := os.Lstat(p); name == "" || err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if err := os.Chtimes(p, when, when); err != nil {
			return fmt.Errorf("setting file times: %w", err)
		}
	}
	// The index's stat data follows, so git does not read every file
	// again at the next status.
	if _, err := g.run(ctx, gitCmd{dir: dir, args: []string{"update-index", "-q", "--refresh"}, env: env}); err != nil {
		var gerr *GitError
		if !errors.As(err, &gerr) || gerr.ExitCode != 1 {
			return fmt.Errorf("refreshing the index: %w", err)
		}
	}
	return nil
}
