package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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

// SetupScriptPath is the repository's setup script (SPEC §14), read from
// its default branch.
const SetupScriptPath = ".superagent/setup.sh"

// MaxSetupScript is the largest setup script accepted.
const MaxSetupScript = 256 << 10

// setupTail is how much of the end of setup's output a result keeps.
const setupTail = 4 << 10

// extras are what a command gets beyond the workspace: more environment
// (the repository's secrets), the repository's setup cache, and, for
// setup, a read-write cache over a read-only workspace.
type extras struct {
	env         []string
	cache       string // host directory bound at sandboxCache
	cacheRW     bool
	workspaceRO bool
}

// quotaWatch is the directory a command is stopped for outgrowing.
type quotaWatch struct {
	dir   string
	limit int64
}

// commandEnv is a command's whole environment: the sandbox's, the cache's
// variables when a cache is bound (at root inside the command's view), and
// the extra variables.
func commandEnv(cfg Config, x extras, root string) []string {
	env := sandboxEnv(cfg)
	if x.cache != "" {
		env = append(env, cacheEnv(root)...)
		bins := []string{root + "/bin", root + "/go/bin", root + "/cargo/bin", root + "/npm/bin"}
		env[0] = "PATH=" + strings.Join(bins, ":") + ":" + strings.TrimPrefix(env[0], "PATH=")
	}
	return append(env, x.env...)
}

// cacheEnv points the common package managers' caches into the setup
// cache at root. Go's build cache stays in /tmp: go needs it writable.
func cacheEnv(root string) []string {
	return []string{
		"SUPERAGENT_CACHE=" + root,
		"GOPATH=" + root + "/go",
		"GOMODCACHE=" + root + "/go/pkg/mod",
		"GOCACHE=/tmp/go-build",
		"npm_config_cache=" + root + "/npm-cache",
		"npm_config_prefix=" + root + "/npm",
		"PIP_CACHE_DIR=" + root + "/pip",
		"PYTHONUSERBASE=" + root + "/python",
		"CARGO_HOME=" + root + "/cargo",
	}
}

// CacheEnvNames are the variables a setup cache sets; a repository secret
// may not take one of these names.
func CacheEnvNames() []string {
	var names []string
	for _, kv := range cacheEnv(sandboxCache) {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	return names
}

// With returns a view of w whose commands also get env ("NAME=value"
// each) and, when cache is not empty, the repository's setup cache (a
// directory SetupCache returned) read-only at /cache, with the
// dependency caches' variables pointing into it.
func (w *Workspace) With(cache string, env []string) *Workspace {
	c := *w
	c.extras = extras{env: slices.Clone(env), cache: cache}
	return &c
}

// SetupResult is the outcome of a repository's setup.
type SetupResult struct {
	// ScriptSHA256 is the hex SHA-256 of the script: the cache's key with
	// the repository.
	ScriptSHA256 string
	// Cached reports that an earlier run's cache was used and the script
	// did not run.
	Cached bool
	// OK reports a run that exited 0 within its timeout and quota; only
	// such a run's cache is kept.
	OK       bool
	ExitCode int
	TimedOut bool
	// OverQuota reports that the cache passed Config.SetupMaxBytes.
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
	ScriptSHA256 string    `json:"script_sha256"`
	ExitCode     int       `json:"exit_code"`
	DurationMS   int64     `json:"duration_ms"`
	RanAt        time.Time `json:"ran_at"`
}

var repoName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$`)

// setupDir is the directory of repo's setup caches, one per script hash.
func (m *Manager) setupDir(repo string) (string, error) {
	if !repoName.MatchString(repo) || strings.Contains(repo, "..") {
		return "", fmt.Errorf("setup: invalid repository name %q", repo)
	}
	return filepath.Join(m.cfg.Root, ".setup", strings.ReplaceAll(repo, "/", "~")), nil
}

// ScriptHash is the key of a setup script's cache.
func ScriptHash(script []byte) string {
	sum := sha256.Sum256(script)
	return hex.EncodeToString(sum[:])
}

// SetupCache returns the cache that a successful setup of repo with the
// script of this hash left on this machine, or "" when there is none.
func (m *Manager) SetupCache(repo, hash string) string {
	dir, err := m.setupDir(repo)
	if err != nil || len(hash) != sha256.Size*2 {
		return ""
	}
	final := filepath.Join(dir, hash)
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
// same script already succeeded on this machine it returns that (Cached);
// otherwise it runs script in the sandbox over this workspace (read-only)
// with a fresh cache read-write at /cache, under the usual limits, the
// network settings, Config.SetupTimeout and Config.SetupMaxBytes, and
// keeps the cache only when the run succeeded. env is added to the
// script's environment. Concurrent Setups of one repository, in this
// process or another on the machine, wait for each other (a file lock),
// and a cache is built aside and renamed into place, so none sees a half
// one. A failing script is a result, not an error.
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return SetupResult{}, fmt.Errorf("setup: %w", err)
	}
	unlock, err := lockFile(ctx, dir+".lock")
	if err != nil {
		return SetupResult{}, fmt.Errorf("setup: %w", err)
	}
	defer unlock()

	hash := ScriptHash(script)
	final := filepath.Join(dir, hash)
	if rec, err := readSetupRecord(final); err == nil {
		return SetupResult{ScriptSHA256: hash, Cached: true, OK: true, ExitCode: rec.ExitCode,
			Duration: time.Duration(rec.DurationMS) * time.Millisecond, CacheDir: filepath.Join(final, "cache")}, nil
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
		return SetupResult{}, fmt.Errorf("setup: %w", err)
	}
	kept := false
	defer func() {
		if !kept {
			_ = removeAll(tmp)
		}
	}()
	res, err := w.runSetup(ctx, tmp, script, env)
	res.ScriptSHA256 = hash
	if err != nil || !res.OK {
		return res, err
	}
	rec, err := json.Marshal(setupRecord{ScriptSHA256: hash, ExitCode: res.ExitCode, DurationMS: res.Duration.Milliseconds(), RanAt: time.Now().UTC()})
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "result.json"), rec, 0o644); err != nil {
		return res, fmt.Errorf("setup: %w", err)
	}
	// A cache left without its result.json (a crash between the two
	// steps) is in the way of the rename.
	_ = removeAll(final)
	if err := os.Rename(tmp, final); err != nil {
		return res, fmt.Errorf("setup: keeping the cache: %w", err)
	}
	kept = true
	res.CacheDir = filepath.Join(final, "cache")
	pruneSetups(dir, hash)
	return res, nil
}

// runSetup runs script with tmp/cache as the cache.
func (w *Workspace) runSetup(ctx context.Context, tmp string, script []byte, env []string) (SetupResult, error) {
	m := w.m
	cache := filepath.Join(tmp, "cache")
	// The script goes in the cache, so it can run with its own #! line
	// wherever the cache is mounted.
	if err := os.MkdirAll(filepath.Join(cache, ".superagent"), 0o755); err != nil {
		return SetupResult{}, fmt.Errorf("setup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cache, ".superagent", "setup.sh"), script, 0o755); err != nil {
		return SetupResult{}, fmt.Errorf("setup: %w", err)
	}
	if os.Geteuid() == 0 && m.cfg.Sandbox != SandboxNone {
		if err := chownTree(tmp, sandboxUID); err != nil {
			return SetupResult{}, fmt.Errorf("setup: %w", err)
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
	x := extras{env: env, cache: cache, cacheRW: true, workspaceRO: true}
	var st runState
	var err error
	if m.cfg.Sandbox == SandboxNone {
		cmd := exec.CommandContext(runCtx, "/bin/sh", "-c", run(cache))
		cmd.Dir = w.dir
		cmd.Env = commandEnv(m.cfg, x, cache)
		st, err = runGroup(cmd, out, nil, nil)
	} else {
		if w.tools.bwrap == "" {
			return SetupResult{}, errors.New("setup: sandbox not checked; create the workspace through NewManager")
		}
		st, err = m.runSandboxed(runCtx, w.tools, w.id, w.dir, sandboxWorkspace, run(sandboxCache), out, x, &quotaWatch{dir: cache, limit: m.cfg.SetupMaxBytes})
	}
	res := SetupResult{ExitCode: st.exitCode, Duration: st.duration, OverQuota: st.overQuota > 0}
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
	if !res.OverQuota {
		if size, err := diskUsage(cache); err == nil && size > m.cfg.SetupMaxBytes {
			res.OverQuota = true
		}
	}
	switch {
	case res.OverQuota:
		res.ExitCode = -1
		text += fmt.Sprintf("\n[stopped: the setup cache passed its quota of %s]", formatBytes(m.cfg.SetupMaxBytes))
	case runCtx.Err() != nil:
		res.TimedOut = true
		res.ExitCode = -1
		text += fmt.Sprintf("\n[setup timed out after %s and was killed]", m.cfg.SetupTimeout)
	}
	if m.cfg.Sandbox != SandboxNone {
		text += limitNotes(m.cfg, res.ExitCode, text, st.cgroup)
	}
	for _, r := range st.refused {
		text += "\n[the sandbox's egress proxy refused " + r + "; only the hosts in " + egressSetting + " are reachable]"
	}
	res.Tail = tail(text, setupTail)
	res.OK = res.ExitCode == 0 && !res.TimedOut && !res.OverQuota
	return res, nil
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
