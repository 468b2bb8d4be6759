package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeCgroup lays out a directory standing in for a cgroup v2 mount, with
// this process in rel and controllers delegated to it.
func fakeCgroup(t *testing.T, rel, controllers string) string {
	t.Helper()
	mount := t.TempDir()
	dir := filepath.Join(mount, rel)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte(controllers+"\n"), 0o644))
	return mount
}

func TestFindCgroup(t *testing.T) {
	mount := fakeCgroup(t, "system.slice/superagent.service", "cpuset cpu io memory hugetlb pids rdma")
	self := []byte("0::/system.slice/superagent.service\n")

	p, err := findCgroup(mount, true, self)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(mount, "system.slice/superagent.service"), p.dir)
	require.Equal(t, []string{"cpu", "memory", "pids"}, p.controllers)

	_, err = findCgroup(mount, false, self)
	require.ErrorContains(t, err, "is not a cgroup v2 mount (cgroup v1 or hybrid)")
	// A v1 host's /proc/self/cgroup has no "0::" line, or an empty one
	// beside the v1 hierarchies (hybrid).
	_, err = findCgroup(mount, true, []byte("4:memory:/x\n1:cpu:/\n"))
	require.ErrorContains(t, err, "no cgroup v2 entry")
	_, err = findCgroup(mount, true, []byte("0::/elsewhere\n"))
	require.ErrorContains(t, err, "elsewhere")

	// Only what is delegated.
	mount = fakeCgroup(t, "user.slice", "memory")
	p, err = findCgroup(mount, true, []byte("1:name=systemd:/user.slice\n0::/user.slice\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"memory"}, p.controllers)
}

func TestCgroupDelegate(t *testing.T) {
	mount := fakeCgroup(t, "svc", "cpu memory pids")
	p, err := findCgroup(mount, true, []byte("0::/svc\n"))
	require.NoError(t, err)
	require.NoError(t, p.delegate())
	require.Equal(t, "+cpu +memory +pids", readFile(t, filepath.Join(p.dir, "cgroup.subtree_control")))

	// Where the cgroup has processes of its own, they go to a leaf below.
	require.NoError(t, os.WriteFile(filepath.Join(p.dir, "cgroup.procs"), []byte("4242\n"), 0o644))
	require.NoError(t, p.moveToLeaf())
	require.Equal(t, "4242", readFile(t, filepath.Join(p.dir, cgroupLeaf, "cgroup.procs")))
}

func TestCgroupCreateWritesLimits(t *testing.T) {
	cfg := Config{MemoryBytes: 256 << 20, MaxProcesses: 60, CPUs: 2}
	p := &cgroupParent{dir: t.TempDir(), controllers: []string{"cpu", "memory", "pids"}}
	c, err := p.create(cfg, 7)
	require.NoError(t, err)
	require.Equal(t, p.dir, filepath.Dir(c.dir))
	require.Equal(t, "268435456", readFile(t, filepath.Join(c.dir, "memory.max")))
	require.Equal(t, "60", readFile(t, filepath.Join(c.dir, "pids.max")))
	require.Equal(t, "200000 100000", readFile(t, filepath.Join(c.dir, "cpu.max")))

	c.kill()
	require.Equal(t, "1", readFile(t, filepath.Join(c.dir, "cgroup.kill")))

	// What the kernel counts names the limit in the result.
	require.NoError(t, os.WriteFile(filepath.Join(c.dir, "memory.events"), []byte("low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(c.dir, "pids.events"), []byte("max 3\n"), 0o644))
	ev := c.events()
	require.Equal(t, cgroupEvents{oomKills: 1, pidsMax: 3}, ev)
	cfg.cgroup = p
	notes := limitNotes(cfg, identityOf(7), 137, "Killed\n", ev)
	require.Contains(t, notes, "[stopped: this command's sandbox reached its memory limit of 256 MiB (cgroup memory.max) and the kernel killed 1 process(es)]")
	require.Contains(t, notes, "[limit: this command's sandbox allows 60 processes and threads at once (cgroup pids.max); 3 fork(s) failed]")

	// No CPU cap by default; and a controller that is not delegated is
	// left to the rlimit.
	p = &cgroupParent{dir: t.TempDir(), controllers: []string{"cpu", "pids"}}
	c, err = p.create(Config{MemoryBytes: 1 << 30, MaxProcesses: 10}, 7)
	require.NoError(t, err)
	require.Equal(t, "max 100000", readFile(t, filepath.Join(c.dir, "cpu.max")))
	require.NoFileExists(t, filepath.Join(c.dir, "memory.max"))
	cfg = Config{MemoryBytes: 1 << 30, MaxProcesses: 10, CPUSeconds: 5, MaxBytes: 1 << 20, cgroup: p}
	args := strings.Join(limitArgs(cfg), " ")
	require.Contains(t, args, "--as=1073741824")
	require.NotContains(t, args, "--nproc")
	cfg.cgroup = nil
	require.Contains(t, strings.Join(limitArgs(cfg), " "), "--nproc=10")
}

func TestCgroupDetectionOnThisHost(t *testing.T) {
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(defaultCgroupMount, &st))
	p, err := detectCgroup(defaultCgroupMount)
	if st.Type != cgroup2Magic {
		// cgroup v1 or hybrid: the rlimits alone hold.
		require.Nil(t, p)
		require.ErrorContains(t, err, "not a cgroup v2 mount")
		return
	}
	if err == nil {
		t.Logf("this host delegates cgroup v2 at %s with %v", p.dir, p.controllers)
	} else {
		t.Logf("cgroup v2 here, but: %v", err)
	}
}

// TestSandboxInRealCgroup runs commands in cgroups on a real cgroup v2
// hierarchy: /sys/fs/cgroup where the host has cgroup v2, or a hybrid
// host's /sys/fs/cgroup/unified (which has no controllers, so there only
// the placement, the kill and the clean-up are exercised, not the limits).
func TestSandboxInRealCgroup(t *testing.T) {
	mount := ""
	for _, m := range []string{defaultCgroupMount, defaultCgroupMount + "/unified"} {
		var st syscall.Statfs_t
		if syscall.Statfs(m, &st) == nil && st.Type == cgroup2Magic {
			mount = m
			break
		}
	}
	if mount == "" {
		t.Skip("no cgroup v2 hierarchy mounted")
	}
	if p, err := detectCgroup(mount); p == nil {
		t.Skipf("cgroup v2 at %s, but not usable here: %v", mount, err)
	}
	_, w := sandboxed(t, Config{cgroupMount: mount, MaxProcesses: 50, MemoryBytes: 256 << 20})
	p := w.m.cfg.cgroup
	require.NotNil(t, p)
	t.Logf("cgroups under %s with controllers %v", p.dir, p.controllers)

	t.Run("CommandRunsInItsOwnCgroup", func(t *testing.T) {
		line, done := procLine(t, w, "sleep 1005", 2*time.Second, "sleep\x001005", "cgroup", "0::")
		cg := filepath.Join(mount, strings.TrimPrefix(line, "0::"))
		require.Equal(t, p.dir, filepath.Dir(cg))
		require.True(t, strings.HasPrefix(filepath.Base(cg), "sandbox-ticket-1-"), "named for its Ticket: %s", cg)
		res := <-done
		require.True(t, res.TimedOut)
		// Killed whole and removed.
		require.NoDirExists(t, cg)
		require.False(t, hostProcessWithArgs("sleep\x001005"))
	})

	t.Run("LimitsHoldForTheWholeSandbox", func(t *testing.T) {
		if !p.has("pids") || !p.has("memory") {
			if os.Getenv("SUPERAGENT_TEST_CGROUP_LIMITS") == "required" {
				t.Fatalf("the pids and memory controllers are not delegated at %s (%v), and this run requires them", p.dir, p.controllers)
			}
			t.Skipf("the pids and memory controllers are not delegated here (%v)", p.controllers)
		}
		res := run(t, w, "for i in $(seq 100); do sleep 5 & done; echo ALL-STARTED")
		require.NotContains(t, res.Output, "ALL-STARTED")
		require.Contains(t, res.Output, "(cgroup pids.max)")
		res = run(t, w, "head -c 600M /dev/zero | tail -c 1 >/dev/null; echo $?")
		require.Contains(t, res.Output, "(cgroup memory.max)")
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}
