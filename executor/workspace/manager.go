package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Manager creates, opens and removes the workspaces under Config.Root.
type Manager struct {
	cfg   Config
	tools sandboxTools // resolved by Check; empty with SandboxNone
	git   gitRunner

	mu    sync.Mutex
	locks map[int64]*sync.Mutex
}

// NewManager validates cfg, creates Root, and with SandboxBwrap checks that
// bubblewrap exists and can start a sandbox.
func NewManager(cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	gitPath, err := exec.LookPath(cfg.GitPath)
	if err != nil {
		return nil, fmt.Errorf("finding git %q: %w", cfg.GitPath, err)
	}
	if err := os.MkdirAll(cfg.Root, 0o700); err != nil {
		return nil, fmt.Errorf("creating workspace root: %w", err)
	}
	home := filepath.Join(cfg.Root, ".githome")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("creating git home: %w", err)
	}
	m := &Manager{
		cfg:   cfg,
		git:   gitRunner{path: gitPath, home: home},
		locks: map[int64]*sync.Mutex{},
	}
	if cfg.Sandbox == SandboxBwrap {
		m.cfg.cgroup = useCgroup(cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Check(ctx); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Check verifies that the sandbox works by running `true` in it with the same
// mounts a command gets. With SandboxNone it only reports that mode.
func (m *Manager) Check(ctx context.Context) error {
	if m.cfg.Sandbox == SandboxNone {
		return nil
	}
	path, err := exec.LookPath(m.cfg.BwrapPath)
	if err != nil {
		return fmt.Errorf("finding bubblewrap %q (install the bubblewrap package, or set the sandbox to %q for development only): %w",
			m.cfg.BwrapPath, SandboxNone, err)
	}
	dir, err := os.MkdirTemp(m.cfg.Root, ".check-")
	if err != nil {
		return fmt.Errorf("creating sandbox check dir: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o700); err != nil {
		return fmt.Errorf("creating sandbox check dir: %w", err)
	}
	tools := sandboxTools{bwrap: path}
	if m.cfg.slirp() {
		if tools.slirp, err = exec.LookPath(m.cfg.SlirpPath); err != nil {
			return fmt.Errorf("finding slirp4netns %q, which the sandbox network needs (install the slirp4netns package, or turn the network off): %w",
				m.cfg.SlirpPath, err)
		}
		if tools.nsenter, err = exec.LookPath("nsenter"); err != nil {
			return fmt.Errorf("finding nsenter, which the sandbox network needs (install util-linux): %w", err)
		}
		if tools.ip, err = exec.LookPath("ip"); err != nil {
			return fmt.Errorf("finding ip, which the sandbox network needs (install iproute2): %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	st, err := m.runSandboxed(ctx, tools, dir, sandboxWorkspace, "true", &out, extras{id: identityOf(0)}, nil)
	if err == nil && st.exitCode != 0 {
		err = fmt.Errorf("exit status %d", st.exitCode)
	}
	if err != nil {
		return fmt.Errorf("bubblewrap %s cannot start a sandbox (are unprivileged user namespaces allowed? are prlimit and setpriv from util-linux installed?): %w: %s",
			path, err, strings.TrimSpace(out.String()))
	}
	m.mu.Lock()
	m.tools = tools
	m.mu.Unlock()
	return nil
}

func (m *Manager) lock(ticketID int64) func() {
	m.mu.Lock()
	l, ok := m.locks[ticketID]
	if !ok {
		l = &sync.Mutex{}
		m.locks[ticketID] = l
	}
	m.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (m *Manager) dir(ticketID int64) string {
	return filepath.Join(m.cfg.Root, "ticket-"+strconv.FormatInt(ticketID, 10))
}

func (m *Manager) workspace(ticketID int64) *Workspace {
	m.mu.Lock()
	tools := m.tools
	m.mu.Unlock()
	return &Workspace{m: m, id: ticketID, dir: m.dir(ticketID), tools: tools}
}

// Prepare makes ticket's workspace ready on branch: it clones remote if the
// workspace is absent (or broken), fetches otherwise, then checks out branch.
// If origin has branch it is checked out tracking origin; a local branch that
// is already there keeps its commits and is only fast-forwarded. Otherwise
// branch is created from origin/<BaseBranch>. Uncommitted and unpushed work is
// never discarded, so Prepare may be called again after a crash at any point.
func (m *Manager) Prepare(ctx context.Context, ticketID int64, remote Remote, branch string) (*Workspace, error) {
	if err := remote.validate(); err != nil {
		return nil, fmt.Errorf("preparing workspace of ticket %d: %w", ticketID, err)
	}
	if err := checkBranchName(branch); err != nil {
		return nil, fmt.Errorf("preparing workspace of ticket %d: %w", ticketID, err)
	}
	unlock := m.lock(ticketID)
	defer unlock()

	dir := m.dir(ticketID)
	ok, err := m.isWorkspace(ctx, dir)
	if err != nil {
		return nil, err
	}
	if !ok {
		if err := m.clone(ctx, ticketID, remote); err != nil {
			return nil, fmt.Errorf("preparing workspace of ticket %d: %w", ticketID, err)
		}
	} else if err := m.fetch(ctx, dir, remote); err != nil {
		return nil, fmt.Errorf("preparing workspace of ticket %d: %w", ticketID, err)
	}
	w := m.workspace(ticketID)
	if err := w.checkoutBranch(ctx, remote, branch); err != nil {
		return nil, fmt.Errorf("preparing workspace of ticket %d: %w", ticketID, err)
	}
	return w, nil
}

// isWorkspace reports whether dir is a complete clone. A directory that exists
// but is not one is removed so that it can be cloned again.
func (m *Manager) isWorkspace(ctx context.Context, dir string) (bool, error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("checking workspace %s: %w", dir, err)
	}
	top, err := m.git.run(ctx, gitCmd{dir: dir, args: []string{"rev-parse", "--show-toplevel"}})
	if err == nil && filepath.Clean(strings.TrimSpace(top)) == dir {
		if _, err := m.git.run(ctx, gitCmd{dir: dir, args: []string{"rev-parse", "--verify", "-q", "HEAD^{commit}"}}); err == nil {
			// A git process killed mid-operation leaves its lock behind. Only
			// this Manager writes .git (the sandbox mounts it read-only) and
			// the ticket lock is held, so a lock here is stale.
			_ = os.Remove(filepath.Join(dir, ".git", "index.lock"))
			return true, nil
		}
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	// Clones are renamed into place only when complete, so a broken directory
	// is not the result of an interrupted clone by this code, but it still
	// holds nothing we can use.
	if err := removeAll(dir); err != nil {
		return false, fmt.Errorf("removing broken workspace %s: %w", dir, err)
	}
	return false, nil
}

// clone clones remote into a temporary directory and renames it into place, so
// the workspace directory only ever holds a complete clone.
func (m *Manager) clone(ctx context.Context, ticketID int64, remote Remote) error {
	prefix := ".clone-ticket-" + strconv.FormatInt(ticketID, 10) + "-"
	// Leftovers of clones interrupted by a crash.
	if entries, err := os.ReadDir(m.cfg.Root); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) {
				if err := removeAll(filepath.Join(m.cfg.Root, e.Name())); err != nil {
					return fmt.Errorf("removing interrupted clone: %w", err)
				}
			}
		}
	}
	tmp, err := os.MkdirTemp(m.cfg.Root, prefix)
	if err != nil {
		return fmt.Errorf("creating clone dir: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = removeAll(tmp)
		}
	}()
	_, err = m.git.run(ctx, gitCmd{
		dir:    tmp,
		args:   []string{"clone", "--quiet", "--no-recurse-submodules", "--origin", "origin", "--", remote.URL, "."},
		env:    remote.authEnv(),
		remote: remote,
	})
	if err != nil {
		return fmt.Errorf("cloning: %w", err)
	}
	if err := m.git.stampCheckout(ctx, tmp, tmp, "HEAD", nil); err != nil {
		return fmt.Errorf("cloning: %w", err)
	}
	if err := os.Rename(tmp, m.dir(ticketID)); err != nil {
		return fmt.Errorf("moving clone into place: %w", err)
	}
	done = true
	return nil
}

func (m *Manager) fetch(ctx context.Context, dir string, remote Remote) error {
	if _, err := m.git.run(ctx, gitCmd{dir: dir, args: []string{"remote", "set-url", "origin", "--", remote.URL}}); err != nil {
		return fmt.Errorf("setting origin URL: %w", err)
	}
	_, err := m.git.run(ctx, gitCmd{
		dir:    dir,
		args:   []string{"fetch", "--quiet", "--prune", "--no-recurse-submodules", "origin"},
		env:    remote.authEnv(),
		remote: remote,
	})
	if err != nil {
		return fmt.Errorf("fetching: %w", err)
	}
	return nil
}

// Open returns ticket's existing workspace, or an error wrapping
// fs.ErrNotExist.
func (m *Manager) Open(ticketID int64) (*Workspace, error) {
	dir := m.dir(ticketID)
	fi, err := os.Lstat(filepath.Join(dir, ".git"))
	if err != nil {
		return nil, fmt.Errorf("opening workspace of ticket %d: %w", ticketID, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("opening workspace of ticket %d: .git is not a directory: %w", ticketID, fs.ErrNotExist)
	}
	return m.workspace(ticketID), nil
}

// Remove deletes ticket's workspace. Removing a missing workspace is not an
// error.
func (m *Manager) Remove(ticketID int64) error {
	unlock := m.lock(ticketID)
	defer unlock()
	for _, d := range []string{m.dir(ticketID), m.scratchDir(ticketID)} {
		if err := removeAll(d); err != nil {
			return fmt.Errorf("removing workspace of ticket %d: %w", ticketID, err)
		}
	}
	return nil
}

// Sweep removes every workspace whose Ticket keep reports as over, and returns
// how many it removed.
func (m *Manager) Sweep(keep func(ticketID int64) bool) (removed int, err error) {
	entries, err := os.ReadDir(m.cfg.Root)
	if err != nil {
		return 0, fmt.Errorf("listing workspaces: %w", err)
	}
	var errs []error
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "ticket-")
		if !ok || !e.IsDir() {
			continue
		}
		id, perr := strconv.ParseInt(rest, 10, 64)
		if perr != nil || keep(id) {
			continue
		}
		if err := m.Remove(id); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("sweeping workspaces: %w", err)
	}
	return removed, nil
}

// removeAll is os.RemoveAll that also copes with directories a command made
// read-only (Go's module cache does that).
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
