package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sandboxCache is where a repository's setup cache appears inside the
// sandbox: read-write while setup runs, read-only for every later command.
const sandboxCache = "/cache"

// SetupScriptPath is the repository's setup script, read from its default
// branch (docs/architecture.md#the-executor-step-by-step).
const SetupScriptPath = ".superagent/setup.sh"

// MaxSetupScript is the largest setup script accepted.
const MaxSetupScript = 256 << 10

// setupTail is how much of the end of setup's output a result keeps.
const setupTail = 4 << 10

// extras are what a command gets beyond the workspace: more environment
// (the repository's secrets), the repository's setup cache, its /tmp and
// build caches on the Ticket's disk, and whom it runs as; for setup, a
// read-write cache over a read-only clean checkout.
type extras struct {
	env         []string
	cache       string // host directory bound at sandboxCache
	cacheRW     bool
	workspaceRO bool
	noGit       bool   // the workspace has no .git to bind (setup's clean checkout)
	tmp         string // host directory bound at /tmp; "" for a small tmpfs
	build       buildLayers
	id          identity
	mounts      []bindMount // more host directories, e.g. the checkpoint's
	// addressSpace replaces Config.MemoryBytes as RLIMIT_AS when not zero.
	addressSpace int64
}

// bindMount is a host directory bound into the sandbox.
type bindMount struct {
	src, dst string
	rw       bool
}

// commandEnv is a command's whole environment: the sandbox's, the cache's
// variables when a cache is bound (at cache inside the command's view), the
// build caches' when they are (at build), and the extra variables. The
// cache's bin directories come after the system's on PATH, so nothing
// setup left there stands in for a system tool.
func commandEnv(cfg Config, x extras, cache, build string) []string {
	env := sandboxEnv(cfg)
	if x.cache != "" {
		env = append(env, cacheEnv(cache)...)
		bins := []string{cache + "/bin", cache + "/go/bin", cache + "/cargo/bin", cache + "/npm/bin"}
		env[0] += ":" + strings.Join(bins, ":")
	}
	if x.build.upper != "" {
		env = append(env, buildEnv(build)...)
	}
	return append(env, x.env...)
}

// cacheEnv points the package managers' install locations into the setup
// cache at root. Their download and build caches are in the build caches
// (buildEnv), which later commands may write.
func cacheEnv(root string) []string {
	return []string{
		"SUPERAGENT_CACHE=" + root,
		"GOPATH=" + root + "/go",
		"npm_config_prefix=" + root + "/npm",
		"PYTHONUSERBASE=" + root + "/python",
		"CARGO_HOME=" + root + "/cargo",
	}
}

// CacheEnvNames are the variables a setup cache sets; a repository secret
// may not take one of these names.
func CacheEnvNames() []string {
	var names []string
	for _, kv := range append(cacheEnv(sandboxCache), buildEnv(sandboxBuild)...) {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	return names
}

// With returns a view of w whose commands also get env ("NAME=value"
// each) and, when cache is not empty, the repository's setup cache (a
// directory SetupCache returned) read-only at /cache, with its
// variables, and setup's warmed build caches beneath the Ticket's own.
func (w *Workspace) With(cache string, env []string) *Workspace {
	c := *w
	c.extras = extras{env: slices.Clone(env), cache: cache}
	c.buildLower = ""
	if cache != "" {
		if fi, err := os.Stat(filepath.Join(filepath.Dir(cache), "build")); err == nil && fi.IsDir() {
			c.buildLower = filepath.Join(filepath.Dir(cache), "build")
		}
	}
	return &c
}

// SetupResult is the outcome of a repository's setup.
type SetupResult struct {
	// ScriptSHA256 is the hex SHA-256 of the script.
	ScriptSHA256 string
	// Key is the cache's key with the repository: the script's hash and
	// the lock files' contents at BaseCommit.
	Key string
	// BaseCommit is the default branch's commit setup ran on, in a clean
	// checkout (or, when Cached, the one the cached run was on).
	BaseCommit string
	// LockFiles are the lock files at the top of BaseCommit's tree that
	// the key covers.
	LockFiles []string
	// Cached reports that an earlier run's cache was used and the script
	// did not run.
	Cached bool
	// OK reports a run that exited 0 within its timeout and quota; only
	// such a run's cache is kept.
	OK       bool
	ExitCode int
	TimedOut bool
	// OverQuota reports that the cache passed Config.SetupMaxBytes or
	// Config.SetupMaxFiles.
	OverQuota bool
	// Tail is the end of the output (empty when Cached), with notes on a
	// limit it hit. Not scrubbed: the caller knows the secrets.
	Tail     string
	Duration time.Duration
	// CacheDir is the cache for later commands (With) when OK.
	CacheDir string
}

// setupRecord is result.json beside a kept cache.
type setupRecord struct {
	Key          string    `json:"key"`
	ScriptSHA256 string    `json:"script_sha256"`
	BaseCommit   string    `json:"base_commit"`
	LockFiles    []string  `json:"lock_files"`
	ExitCode     int       `json:"exit_code"`
	DurationMS   int64     `json:"duration_ms"`
	RanAt        time.Time `json:"ran_at"`
}

var repoName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$`)

// setupDir is the directory of repo's setup caches, one per key.
func (m *Manager) setupDir(repo string) (string, error) {
	if !repoName.MatchString(repo) || strings.Contains(repo, "..") {
		return "", fmt.Errorf("setup: invalid repository name %q", repo)
	}
	return filepath.Join(m.cfg.Root, ".setup", strings.ReplaceAll(repo, "/", "~")), nil
}

// ScriptHash is the hex SHA-256 of a setup script.
func ScriptHash(script []byte) string {
	sum := sha256.Sum256(script)
	return hex.EncodeToString(sum[:])
}

// lockFiles are the files whose contents, at the top of the default
// branch's tree, key the setup cache with the script: a changed
// dependency list builds a new cache.
var lockFiles = []string{
	"go.mod", "go.sum", "go.work", "go.work.sum",
	"package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb", "bun.lock",
	"Cargo.toml", "Cargo.lock",
	"requirements.txt", "requirements-dev.txt", "Pipfile.lock", "poetry.lock", "uv.lock", "pyproject.toml",
	"Gemfile.lock", "composer.lock", "mix.lock", "pubspec.lock", "gradle.lockfile", "packages.lock.json",
}

// setupKey returns the cache key of script at commit: a hash of the
// script's hash and of each lock file's path and blob.
func (w *Workspace) setupKey(ctx context.Context, script []byte, commit string) (string, []string, error) {
	out, err := w.git(ctx, append([]string{"ls-tree", "-z", "--full-tree", commit, "--"}, lockFiles...)...)
	if err != nil {
		return "", nil, fmt.Errorf("setup: listing the lock files: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "script %s\n", ScriptHash(script))
	var found []string
	for rec := range strings.SplitSeq(out, "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[1] != "blob" {
			continue
		}
		found = append(found, name)
		fmt.Fprintf(h, "%s %s\n", name, f[2])
	}
	return hex.EncodeToString(h.Sum(nil)), found, nil
}

// setupMark is the host file, beside the Ticket's scratch directories,
// that names the setup cache the Ticket's commands use.
func (w *Workspace) setupMark() string {
	return filepath.Join(w.m.scratchDir(w.id), "setup")
}

// SetupCache returns the cache of repo that the Ticket's last successful
// Setup (made or found) on this machine left, or "" when there is none.
func (w *Workspace) SetupCache(repo string) string {
	dir, err := w.m.setupDir(repo)
	if err != nil {
		return ""
	}
	raw, err := os.ReadFile(w.setupMark())
	r, key, ok := strings.Cut(strings.TrimSpace(string(raw)), " ")
	if err != nil || !ok || r != repo || len(key) != sha256.Size*2 || strings.ContainsAny(key, "./") {
		return ""
	}
	final := filepath.Join(dir, key)
	if _, err := readSetupRecord(final); err != nil {
		return ""
	}
	return filepath.Join(final, "cache")
}

func readSetupRecord(dir string) (setupRecord, error) {
	var r setupRecord
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}

// Setup makes sure repo's setup cache for script exists: when a run of the
// same script on the same lock files already succeeded on this machine it
// returns that (Cached); otherwise it runs script in the sandbox over a
// clean checkout of the default branch (origin/HEAD, read-only, without
// .git: never the Ticket's own files) with a fresh cache read-write at
// /cache and fresh build caches at /build-cache, under the usual limits,
// the network settings, Config.SetupTimeout and the setup quota, and keeps
// both only when the run succeeded, owned by the service and closed to
// every sandbox user's writes. env is added to the script's environment.
// Concurrent Setups of one repository, in this process or another on the
// machine, wait for each other (a file lock), and a cache is built aside
// and renamed into place, so none sees a half one. A failing script is a
// result, not an error.
func (w *Workspace) Setup(ctx context.Context, repo string, script []byte, env []string) (SetupResult, error) {
	if len(script) > MaxSetupScript {
		return SetupResult{}, fmt.Errorf("setup: the script is %d bytes, over the limit of %d", len(script), MaxSetupScript)
	}
	if err := w.exists(); err != nil {
		return SetupResult{}, err
	}
	m := w.m
	dir, err := m.setupDir(repo)
	if err != nil {
		return SetupResult{}, err
	}
	base, err := w.git(ctx, "rev-parse", "--verify", "-q", "refs/remotes/origin/HEAD^{commit}")
	if err != nil {
		return SetupResult{}, errors.New("setup: the clone has no default branch (origin/HEAD) to set up from")
	}
	base = strings.TrimSpace(base)
	key, locks, err := w.setupKey(ctx, script, base)
	if err != nil {
		return SetupResult{}, err
	}
	res := SetupResult{ScriptSHA256: ScriptHash(script), Key: key, BaseCommit: base, LockFiles: locks}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return res, fmt.Errorf("setup: %w", err)
	}
	unlock, err := lockFile(ctx, dir+".lock")
	if err != nil {
		return res, fmt.Errorf("setup: %w", err)
	}
	defer unlock()

	final := filepath.Join(dir, key)
	if rec, err := readSetupRecord(final); err == nil {
		res.Cached, res.OK, res.ExitCode, res.BaseCommit = true, true, rec.ExitCode, rec.BaseCommit
		res.Duration, res.CacheDir = time.Duration(rec.DurationMS)*time.Millisecond, filepath.Join(final, "cache")
		return res, w.markSetup(repo, key)
	}
	// Builds a crash interrupted: the lock is held, so none is running.
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".build-") {
				_ = removeAll(filepath.Join(dir, e.Name()))
			}
		}
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return res, fmt.Errorf("setup: %w", err)
	}
	kept := false
	defer func() {
		if !kept {
			_ = removeAll(tmp)
		}
	}()
	run, err := w.runSetup(ctx, tmp, base, script, env)
	run.ScriptSHA256, run.Key, run.BaseCommit, run.LockFiles = res.ScriptSHA256, key, base, locks
	if err != nil || !run.OK {
		return run, err
	}
	if err := removeAll(filepath.Join(tmp, "src")); err != nil {
		return run, fmt.Errorf("setup: %w", err)
	}
	_ = removeAll(filepath.Join(tmp, "tmp"))
	for _, d := range []string{"cache", "build"} {
		if err := sealTree(filepath.Join(tmp, d), d == "build"); err != nil {
			return run, fmt.Errorf("setup: %w", err)
		}
	}
	rec, err := json.Marshal(setupRecord{Key: key, ScriptSHA256: run.ScriptSHA256, BaseCommit: base, LockFiles: locks,
		ExitCode: run.ExitCode, DurationMS: run.Duration.Milliseconds(), RanAt: time.Now().UTC()})
	if err != nil {
		return run, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "result.json"), rec, 0o644); err != nil {
		return run, fmt.Errorf("setup: %w", err)
	}
	// A cache left without its result.json (a crash between the two
	// steps) is in the way of the rename.
	_ = removeAll(final)
	if err := os.Rename(tmp, final); err != nil {
		return run, fmt.Errorf("setup: keeping the cache: %w", err)
	}
	kept = true
	run.CacheDir = filepath.Join(final, "cache")
	pruneSetups(dir, key)
	return run, w.markSetup(repo, key)
}

// markSetup records, on the host, the cache the Ticket's commands use.
func (w *Workspace) markSetup(repo, key string) error {
	if err := os.MkdirAll(w.m.scratchDir(w.id), 0o700); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if err := os.WriteFile(w.setupMark(), []byte(repo+" "+key+"\n"), 0o600); err != nil {
		return fmt.Errorf("setup: recording the ticket's cache: %w", err)
	}
	return nil
}

// checkoutClean writes commit's tree to dir through a private index,
// leaving the workspace's index, HEAD and work tree alone.
func (w *Workspace) checkoutClean(ctx context.Context, commit, dir, index string) error {
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := w.m.git.run(ctx, gitCmd{dir: w.dir, args: []string{"read-tree", commit}, env: env}); err != nil {
		return fmt.Errorf("setup: reading the default branch's tree: %w", err)
	}
	if _, err := w.m.git.run(ctx, gitCmd{dir: w.dir, args: []string{"checkout-index", "--all", "--force", "--prefix=" + dir + "/"}, env: env}); err != nil {
		return fmt.Errorf("setup: checking out the default branch: %w", err)
	}
	// The same file times as a Ticket's clone of the same commit.
	if err := w.m.git.stampCheckout(ctx, w.dir, dir, commit, append(env, "GIT_WORK_TREE="+dir)); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	return nil
}

// runSetup runs script over a clean checkout of base, with tmp/cache as
// the cache and tmp/build as the build caches.
func (w *Workspace) runSetup(ctx context.Context, tmp, base string, script []byte, env []string) (SetupResult, error) {
	m := w.m
	src, cache := filepath.Join(tmp, "src"), filepath.Join(tmp, "cache")
	build, tmpDir := filepath.Join(tmp, "build"), filepath.Join(tmp, "tmp")
	if err := w.checkoutClean(ctx, base, src, filepath.Join(tmp, "index")); err != nil {
		return SetupResult{}, err
	}
	_ = os.Remove(filepath.Join(tmp, "index"))
	// The script goes in the cache, so it can run with its own #! line
	// wherever the cache is mounted.
	for _, d := range []string{filepath.Join(cache, ".superagent"), build, tmpDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return SetupResult{}, fmt.Errorf("setup: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(cache, ".superagent", "setup.sh"), script, 0o755); err != nil {
		return SetupResult{}, fmt.Errorf("setup: %w", err)
	}
	id := identityOf(w.id)
	if id.host && m.cfg.Sandbox != SandboxNone {
		for _, d := range []string{cache, build, tmpDir} {
			if err := chownTree(d, id.uid); err != nil {
				return SetupResult{}, fmt.Errorf("setup: %w", err)
			}
		}
	}
	run := func(root string) string {
		if strings.HasPrefix(string(script), "#!") {
			return "exec " + root + "/.superagent/setup.sh"
		}
		return "exec /bin/sh " + root + "/.superagent/setup.sh"
	}
	runCtx, cancel := context.WithTimeout(ctx, m.cfg.SetupTimeout)
	defer cancel()
	out := newCappedWriter(m.cfg.MaxOutputBytes)
	x := extras{env: env, cache: cache, cacheRW: true, workspaceRO: true, noGit: true, tmp: tmpDir, build: buildLayers{upper: build}, id: id}
	quota := &quotaWatch{dirs: []string{cache, build, tmpDir}, maxBytes: m.cfg.SetupMaxBytes, maxFiles: m.cfg.SetupMaxFiles}
	var st runState
	var err error
	if m.cfg.Sandbox == SandboxNone {
		cmd := exec.CommandContext(runCtx, "/bin/sh", "-c", run(cache))
		cmd.Dir = src
		cmd.Env = commandEnv(m.cfg, x, cache, build)
		st, err = runGroup(cmd, out, nil, nil)
	} else {
		if w.tools.bwrap == "" {
			return SetupResult{}, errors.New("setup: sandbox not checked; create the workspace through NewManager")
		}
		st, err = m.runSandboxed(runCtx, w.tools, src, sandboxWorkspace, run(sandboxCache), out, x, quota)
	}
	res := SetupResult{ExitCode: st.exitCode, Duration: st.duration, OverQuota: st.over != usage{}}
	text, _ := out.result()
	if err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("setup: %w", ctx.Err())
		}
		return res, fmt.Errorf("setup: %w", err)
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("setup: %w", ctx.Err())
	}
	over := st.over
	if !res.OverQuota {
		if used, err := quota.measure(); err == nil && used.exceeds(quota.maxBytes, quota.maxFiles) {
			res.OverQuota, over = true, used
		}
	}
	switch {
	case res.OverQuota:
		res.ExitCode = -1
		text += "\n[stopped: the setup cache passed " + quota.overNote(over) + "]"
	case runCtx.Err() != nil:
		res.TimedOut = true
		res.ExitCode = -1
		text += fmt.Sprintf("\n[setup timed out after %s and was killed]", m.cfg.SetupTimeout)
	}
	if m.cfg.Sandbox != SandboxNone {
		text += limitNotes(m.cfg, id, res.ExitCode, text, st.cgroup)
	}
	for _, r := range st.refused {
		text += "\n[the sandbox's egress proxy refused " + r + "; only the hosts in " + egressSetting + " are reachable]"
	}
	res.Tail = tail(text, setupTail)
	res.OK = res.ExitCode == 0 && !res.TimedOut && !res.OverQuota
	return res, nil
}

// sealTree makes what setup wrote the service's (when it runs as root)
// and readable by every sandbox user, without set-id bits. Where build is
// set (the build caches, only ever a read-only lower layer), directories
// setup could write stay writable by all, so a Ticket's copy of one in
// its own upper layer is writable by the Ticket's user.
func sealTree(dir string, build bool) error {
	root := os.Geteuid() == 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if root {
			if err := os.Lchown(p, 0, 0); err != nil {
				return err
			}
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fi.Mode().Perm() &^ 0o022
		switch {
		case d.IsDir() && build && fi.Mode().Perm()&0o200 != 0:
			mode = 0o777
		case d.IsDir():
			mode |= 0o555
		default:
			mode |= 0o444
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		return fmt.Errorf("sealing the setup cache: %w", err)
	}
	return nil
}

// tail returns the last n bytes of s, starting at a line where it can.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	return strings.ToValidUTF8(s, "")
}

// pruneSetups removes a repository's caches of other scripts but the
// newest one besides keep, so a script changed back and forth does not
// rebuild each time and old ones do not pile up.
func pruneSetups(dir, keep string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type old struct {
		name string
		mod  time.Time
	}
	var olds []old
	for _, e := range entries {
		if !e.IsDir() || e.Name() == keep || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			olds = append(olds, old{e.Name(), fi.ModTime()})
		}
	}
	slices.SortFunc(olds, func(a, b old) int { return b.mod.Compare(a.mod) })
	for i, o := range olds {
		if i >= 1 {
			_ = removeAll(filepath.Join(dir, o.name))
		}
	}
}

// lockFile takes an exclusive flock on path, waiting until ctx ends.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ErrTooLarge is returned by BaseFile for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// BaseFile returns the file at path on the remote's default branch (the
// origin/HEAD the clone recorded), at most limit bytes; ok is false when
// there is no such regular file there (a symlink does not count).
func (w *Workspace) BaseFile(ctx context.Context, path string, limit int64) (data []byte, ok bool, err error) {
	if !w.refExists(ctx, "refs/remotes/origin/HEAD") {
		// No origin/HEAD (an empty remote): nothing to read.
		return nil, false, nil
	}
	out, err := w.git(ctx, "ls-tree", "-z", "refs/remotes/origin/HEAD", "--", path)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	meta, name, found := strings.Cut(strings.TrimSuffix(out, "\x00"), "\t")
	f := strings.Fields(meta)
	if !found || name != path || len(f) != 3 || f[1] != "blob" || (f[0] != "100644" && f[0] != "100755") {
		return nil, false, nil
	}
	size, err := w.git(ctx, "cat-file", "-s", f[2])
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(size), 10, 64); err != nil || n > limit {
		return nil, false, fmt.Errorf("%s is %s bytes, over the limit of %d: %w", path, strings.TrimSpace(size), limit, ErrTooLarge)
	}
	blob, err := w.git(ctx, "cat-file", "blob", f[2])
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	return []byte(blob), true, nil
}
