package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SandboxMode selects how Workspace.Run isolates commands.
type SandboxMode string

const (
	// SandboxBwrap runs each command under bubblewrap. The default.
	SandboxBwrap SandboxMode = "bwrap"
	// SandboxNone runs commands directly on the host with a clean environment.
	// It is unsafe and meant only for development.
	SandboxNone SandboxMode = "none"
)

// Config configures a Manager. The zero value of each field is its documented
// default.
type Config struct {
	// Root is the directory holding one workspace per Ticket. Required.
	Root string
	// MaxBytes is the disk quota of one workspace, .git included, counted in
	// allocated blocks (a sparse file counts what it holds). Default 2 GiB.
	// A sandboxed command is stopped as soon as the workspace passes it, no
	// single file may grow past it, and Commit refuses while it is exceeded.
	MaxBytes int64
	// MaxFiles is how many files, directories and links one workspace may
	// hold with its /tmp and build caches (inodes, which blocks do not
	// count). Default 100,000. Enforced like MaxBytes.
	MaxFiles int64
	// Sandbox is SandboxBwrap (default) or SandboxNone (unsafe, development only).
	Sandbox SandboxMode
	// Network gives sandboxed commands a network of their own: a user-mode
	// stack (slirp4netns) that reaches the internet but not the host, its
	// loopback, the private ranges or the host's own subnets. Default false:
	// no network at all, loopback included.
	Network bool
	// Egress, with Network on, is the only hosts commands may reach: exact
	// names ("proxy.golang.org"), "*.example.com" for any name below
	// example.com (not example.com itself), or IP addresses, each with an
	// optional ":port" (default: 80 and 443). Default: none, which leaves the
	// network open as Network describes. With a list, the sandbox gets no
	// network but its own loopback; HTTP_PROXY and HTTPS_PROXY point its
	// tools at a relay there, which hands each connection to an HTTP proxy
	// this process runs for the command. The proxy forwards plain HTTP and
	// tunnels CONNECT to listed hosts only, resolves names itself, refuses
	// addresses on the host's side of the network (loopback, private,
	// link-local, CGNAT, multicast, unspecified, the host's own), and
	// answers a refusal with 403 and a body naming the setting.
	Egress []string
	// RelayPath is the binary that runs inside the sandbox as the egress
	// relay, bound read-only into it; its main must call RunRelay first.
	// Used with Egress. Default: this process's own executable.
	RelayPath string
	// Logger receives the egress proxy's refusals (at INFO, with host and
	// reason). Default: discarded.
	Logger *slog.Logger
	// SlirpPath is the slirp4netns binary, used when Network is on. Default
	// "slirp4netns" looked up in PATH.
	SlirpPath string
	// CPUSeconds is the CPU time each sandboxed process may use before the
	// kernel kills it (RLIMIT_CPU). Default 1800.
	CPUSeconds int
	// MemoryBytes is the address space each sandboxed process may map
	// (RLIMIT_AS). Default 8 GiB.
	MemoryBytes int64
	// MaxProcesses is how many processes and threads the sandbox user may
	// have at once (RLIMIT_NPROC). Default 1024.
	MaxProcesses int
	// CPUs caps the CPU time a sandbox gets per wall-clock second, in
	// CPUs, with cgroup cpu.max where the host delegates cgroup v2.
	// Default 0: no cap.
	CPUs int
	// BwrapPath is the bubblewrap binary. Default "bwrap" looked up in PATH.
	BwrapPath string
	// GitPath is the git binary used on the host. Default "git".
	GitPath string
	// MaxOutputBytes caps the output a command returns (head and tail are
	// kept). Default 64 KiB.
	MaxOutputBytes int
	// MaxTimeout is the longest timeout a command may ask for. Default 30 min.
	// A command passing 0 gets DefaultTimeout.
	MaxTimeout time.Duration
	// ExtraReadOnly lists extra host paths bound read-only into the sandbox at
	// the same path (e.g. /usr/local/go); each one's bin directory, if any, is
	// put on the sandbox PATH. Default: none beyond the system directories.
	ExtraReadOnly []string
	// SetupTimeout bounds one run of a repository's setup script
	// (Workspace.Setup). Default 15 min; it is not capped by MaxTimeout.
	SetupTimeout time.Duration
	// SetupMaxBytes is the disk quota of one repository's setup cache, the
	// directory setup writes and later commands read, with its build
	// caches; setup is stopped once the cache passes it. Default: MaxBytes.
	SetupMaxBytes int64
	// SetupMaxFiles is how many files and directories the setup cache may
	// hold with its build caches. Default: 5 × MaxFiles (module caches
	// hold many small files).
	SetupMaxFiles int64

	// Set by withDefaults: the parsed Egress.
	egress []egressRule
	// Test hooks for the egress proxy: how it resolves a name and connects
	// to an address it has checked. Default: the system's resolver, and
	// net.Dialer.
	resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	// Set by NewManager: where each command's cgroup goes; nil without
	// cgroup v2. cgroupMount is a test hook: the cgroup v2 mount to look
	// at. Default /sys/fs/cgroup.
	cgroup      *cgroupParent
	cgroupMount string
}

// slirp reports whether commands get slirp4netns's open network; with an
// egress list they get only their loopback and the proxy.
func (cfg Config) slirp() bool { return cfg.Network && len(cfg.egress) == 0 }

// DefaultTimeout is the timeout of a command run with timeout 0.
const DefaultTimeout = 2 * time.Minute

const (
	defaultMaxBytes       = 2 << 30
	defaultMaxFiles       = 100_000
	defaultMaxOutputBytes = 64 << 10
	defaultMaxTimeout     = 30 * time.Minute
	defaultCPUSeconds     = 1800
	defaultMemoryBytes    = 8 << 30
	defaultMaxProcesses   = 1024
	defaultSetupTimeout   = 15 * time.Minute
)

// withDefaults returns cfg with defaults filled in, or one error listing every
// problem.
func (cfg Config) withDefaults() (Config, error) {
	var errs []error
	if cfg.Root == "" {
		errs = append(errs, errors.New("root is required"))
	} else if !filepath.IsAbs(cfg.Root) {
		abs, err := filepath.Abs(cfg.Root)
		if err != nil {
			errs = append(errs, fmt.Errorf("making root %q absolute: %w", cfg.Root, err))
		}
		cfg.Root = abs
	}
	cfg.Root = filepath.Clean(cfg.Root)
	errs = orDefault(&cfg.MaxBytes, defaultMaxBytes, "max bytes", errs)
	errs = orDefault(&cfg.MaxFiles, defaultMaxFiles, "max files", errs)
	switch cfg.Sandbox {
	case "":
		cfg.Sandbox = SandboxBwrap
	case SandboxBwrap, SandboxNone:
	default:
		errs = append(errs, fmt.Errorf("unknown sandbox mode %q (want %q or %q)", cfg.Sandbox, SandboxBwrap, SandboxNone))
	}
	if cfg.BwrapPath == "" {
		cfg.BwrapPath = "bwrap"
	}
	if cfg.GitPath == "" {
		cfg.GitPath = "git"
	}
	errs = orDefault(&cfg.MaxOutputBytes, defaultMaxOutputBytes, "max output bytes", errs)
	errs = orDefault(&cfg.SetupTimeout, defaultSetupTimeout, "setup timeout", errs)
	errs = orDefault(&cfg.SetupMaxBytes, cfg.MaxBytes, "setup max bytes", errs)
	errs = orDefault(&cfg.SetupMaxFiles, 5*cfg.MaxFiles, "setup max files", errs)
	errs = orDefault(&cfg.MaxTimeout, defaultMaxTimeout, "max timeout", errs)
	if cfg.SlirpPath == "" {
		cfg.SlirpPath = "slirp4netns"
	}
	errs = orDefault(&cfg.CPUSeconds, defaultCPUSeconds, "cpu seconds", errs)
	errs = orDefault(&cfg.MemoryBytes, defaultMemoryBytes, "memory bytes", errs)
	errs = orDefault(&cfg.MaxProcesses, defaultMaxProcesses, "max processes", errs)
	if cfg.CPUs < 0 {
		errs = append(errs, fmt.Errorf("cpus %d is negative", cfg.CPUs))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	rules, err := parseEgress(cfg.Egress)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.egress = rules
	if len(cfg.Egress) > 0 && cfg.Sandbox == SandboxBwrap {
		if !cfg.Network {
			errs = append(errs, errors.New("an egress list needs the network on"))
		}
		if cfg.RelayPath == "" {
			if cfg.RelayPath, err = os.Executable(); err != nil {
				errs = append(errs, fmt.Errorf("finding this executable for the egress relay: %w", err))
			}
		} else if _, err := os.Stat(cfg.RelayPath); err != nil {
			errs = append(errs, fmt.Errorf("egress relay: %w", err))
		}
	}
	extra := make([]string, 0, len(cfg.ExtraReadOnly))
	for _, p := range cfg.ExtraReadOnly {
		if !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("extra read-only path %q is not absolute", p))
			continue
		}
		p = filepath.Clean(p)
		if p == "/" || p == "/tmp" || p == "/tmp/home" || under(p, sandboxWorkspace) || under(p, sandboxCache) || under(p, sandboxBuild) || under(p, "/proc") || under(p, "/dev") {
			errs = append(errs, fmt.Errorf("extra read-only path %q would cover a sandbox mount", p))
			continue
		}
		if _, err := os.Stat(p); err != nil {
			errs = append(errs, fmt.Errorf("extra read-only path: %w", err))
			continue
		}
		extra = append(extra, p)
	}
	cfg.ExtraReadOnly = extra
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("invalid workspace config: %w", err)
	}
	return cfg, nil
}

// orDefault sets a zero *v to def and adds an error to errs when *v is
// negative: the rule every size, count and time limit of Config follows.
func orDefault[T int | int64 | time.Duration](v *T, def T, what string, errs []error) []error {
	switch {
	case *v < 0:
		return append(errs, fmt.Errorf("%s %v is negative", what, *v))
	case *v == 0:
		*v = def
	}
	return errs
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}
