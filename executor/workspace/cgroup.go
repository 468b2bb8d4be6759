package workspace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Where the host delegates cgroup v2, each sandboxed command runs in a
// cgroup of its own, whose limits hold for the sandbox as a whole: resident
// memory (memory.max, no swap), processes and threads (pids.max), CPU
// bandwidth (cpu.max). bwrap is started straight into it (CLONE_INTO_CGROUP),
// so nothing the command starts is ever outside, and the cgroup is killed
// whole at a timeout and when the command ends. Elsewhere (cgroup v1 or
// hybrid hosts, or a cgroup this process may not write) the per-process
// rlimits stand in, and RLIMIT_NPROC counts the sandbox user's processes on
// the whole host.

const (
	defaultCgroupMount = "/sys/fs/cgroup"
	cgroup2Magic       = 0x63677270 // CGROUP2_SUPER_MAGIC
	// cgroupLeaf holds this process's own members once it delegates
	// controllers to sandboxes: cgroup v2 lets a cgroup that has
	// processes of its own give its children no controllers.
	cgroupLeaf = "superagent"
)

// cgroupControllers are the controllers the sandboxes use, where
// delegated.
var cgroupControllers = []string{"cpu", "memory", "pids"}

// cgroupParent is the cgroup v2 directory under which each command gets
// its own cgroup, and which of cgroupControllers those get.
type cgroupParent struct {
	dir         string
	controllers []string
}

func (p *cgroupParent) has(controller string) bool {
	return p != nil && slices.Contains(p.controllers, controller)
}

// findCgroup returns the cgroup this process is in under the cgroup v2
// mount at mount, given /proc/self/cgroup, when that is writable; or why
// the sandbox cannot use cgroups there.
func findCgroup(mount string, isCgroup2 bool, selfCgroup []byte) (*cgroupParent, error) {
	if !isCgroup2 {
		return nil, fmt.Errorf("%s is not a cgroup v2 mount (cgroup v1 or hybrid)", mount)
	}
	var rel string
	found := false
	for line := range strings.SplitSeq(string(selfCgroup), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
		}
	}
	if !found {
		return nil, errors.New("this process has no cgroup v2 entry in /proc/self/cgroup")
	}
	dir := filepath.Join(mount, filepath.Clean("/"+rel))
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return nil, fmt.Errorf("cgroup %s is not writable: %w", dir, err)
	}
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("reading the cgroup's controllers: %w", err)
	}
	p := &cgroupParent{dir: dir}
	for _, c := range cgroupControllers {
		if slices.Contains(strings.Fields(string(avail)), c) {
			p.controllers = append(p.controllers, c)
		}
	}
	return p, nil
}

// delegate enables the controllers for the cgroup's children. Where the
// cgroup has processes of its own (this one, at least), the kernel refuses
// (EBUSY) until they move to a leaf below it, so they are moved to
// cgroupLeaf first. If a controller still cannot be enabled, the sandboxes
// go without it.
func (p *cgroupParent) delegate() error {
	if len(p.controllers) == 0 {
		return nil
	}
	control := filepath.Join(p.dir, "cgroup.subtree_control")
	want := "+" + strings.Join(p.controllers, " +")
	err := writeCgroupFile(control, want)
	if errors.Is(err, syscall.EBUSY) {
		if err := p.moveToLeaf(); err != nil {
			return err
		}
		err = writeCgroupFile(control, want)
	}
	if err != nil {
		p.controllers = nil
		return fmt.Errorf("enabling %s for sandbox cgroups: %w", strings.Join(p.controllers, ", "), err)
	}
	return nil
}

// moveToLeaf moves every process of the cgroup into its cgroupLeaf child.
func (p *cgroupParent) moveToLeaf() error {
	leaf := filepath.Join(p.dir, cgroupLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating cgroup %s: %w", leaf, err)
	}
	procs, err := os.ReadFile(filepath.Join(p.dir, "cgroup.procs"))
	if err != nil {
		return fmt.Errorf("reading the cgroup's processes: %w", err)
	}
	for _, pid := range strings.Fields(string(procs)) {
		// One at a time: the kernel takes one pid per write.
		err := writeCgroupFile(filepath.Join(leaf, "cgroup.procs"), pid)
		if err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("moving process %s to cgroup %s: %w", pid, leaf, err)
		}
	}
	return nil
}

// sandboxCgroup is one command's cgroup.
type sandboxCgroup struct {
	dir string
	fd  *os.File // the directory, for CLONE_INTO_CGROUP
}

// create makes a cgroup for one command with cfg's limits on the
// controllers the parent has.
// Its name starts with the Ticket's, so whose it is shows in the tree.
func (p *cgroupParent) create(cfg Config, ticket int64) (*sandboxCgroup, error) {
	dir, err := os.MkdirTemp(p.dir, "sandbox-ticket-"+strconv.FormatInt(ticket, 10)+"-")
	if err != nil {
		return nil, fmt.Errorf("creating the command's cgroup: %w", err)
	}
	c := &sandboxCgroup{dir: dir}
	var files [][2]string
	if p.has("memory") {
		files = append(files, [2]string{"memory.max", strconv.FormatInt(cfg.MemoryBytes, 10)}, [2]string{"memory.swap.max", "0"})
	}
	if p.has("pids") {
		files = append(files, [2]string{"pids.max", strconv.Itoa(cfg.MaxProcesses)})
	}
	if p.has("cpu") {
		quota := "max"
		if cfg.CPUs > 0 {
			quota = strconv.Itoa(cfg.CPUs * cgroupCPUPeriod)
		}
		files = append(files, [2]string{"cpu.max", quota + " " + strconv.Itoa(cgroupCPUPeriod)})
	}
	for _, f := range files {
		if f[0] == "memory.swap.max" {
			// Without swap accounting there is no such file, and no
			// swap to turn off.
			if _, err := os.Stat(filepath.Join(dir, f[0])); err != nil {
				continue
			}
		}
		err := writeCgroupFile(filepath.Join(dir, f[0]), f[1])
		if err != nil {
			_ = os.Remove(dir)
			return nil, fmt.Errorf("setting the command's cgroup limits: %w", err)
		}
	}
	if c.fd, err = os.Open(dir); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("opening the command's cgroup: %w", err)
	}
	return c, nil
}

// cgroupCPUPeriod is cpu.max's period in microseconds: the kernel's default.
const cgroupCPUPeriod = 100000

// kill kills every process in the cgroup.
func (c *sandboxCgroup) kill() {
	err := writeCgroupFile(filepath.Join(c.dir, "cgroup.kill"), "1")
	if err == nil {
		return
	}
	// Before Linux 5.14 there is no cgroup.kill.
	procs, _ := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	for _, f := range strings.Fields(string(procs)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// cgroupEvents is what the cgroup's limits did to a command.
type cgroupEvents struct {
	oomKills int // processes the kernel killed at memory.max
	pidsMax  int // forks refused at pids.max
}

func (c *sandboxCgroup) events() cgroupEvents {
	return cgroupEvents{
		oomKills: cgroupCounter(filepath.Join(c.dir, "memory.events"), "oom_kill"),
		pidsMax:  cgroupCounter(filepath.Join(c.dir, "pids.events"), "max"),
	}
}

// remove kills what is left in the cgroup, waits until it is empty and
// removes it.
func (c *sandboxCgroup) remove() error {
	c.kill()
	_ = c.fd.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := os.Remove(c.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		// EBUSY while the killed processes are still on their way out.
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("removing the command's cgroup: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cgroupCounter reads key's value from a flat-keyed file such as
// memory.events; 0 when it is absent.
func cgroupCounter(path, key string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// writeCgroupFile writes one value to a cgroup interface file. A real
// cgroup file exists already; O_CREATE lets a plain directory stand in
// for cgroupfs in tests.
func writeCgroupFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// detectCgroup finds and prepares the cgroup for sandboxes under mount,
// or says why there is none.
func detectCgroup(mount string) (*cgroupParent, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(mount, &st); err != nil {
		return nil, fmt.Errorf("checking %s: %w", mount, err)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("reading this process's cgroup: %w", err)
	}
	p, err := findCgroup(mount, st.Type == cgroup2Magic, self)
	if err != nil {
		return nil, err
	}
	if err := p.delegate(); err != nil {
		return p, err
	}
	return p, nil
}

// useCgroup returns where the Manager's commands get their cgroups, and
// logs what holds either way.
func useCgroup(cfg Config) *cgroupParent {
	mount := cfg.cgroupMount
	if mount == "" {
		mount = defaultCgroupMount
	}
	p, err := detectCgroup(mount)
	if p == nil {
		cfg.Logger.Info("sandbox: no cgroup per command; per-process rlimits hold, and the process limit counts the sandbox user's processes on the whole host",
			"reason", err)
		return nil
	}
	if err != nil {
		cfg.Logger.Warn("sandbox: cgroup per command without limits; per-process rlimits hold", "cgroup", p.dir, "err", err)
	} else {
		cfg.Logger.Info("sandbox: a cgroup per command", "cgroup", p.dir, "controllers", strings.Join(p.controllers, ","))
	}
	return p
}
