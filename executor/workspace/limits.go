package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// limitArgs wraps a sandboxed command in prlimit, which sets the per-process
// limits before running it. Every process the command starts inherits them.
// RLIMIT_FSIZE is the disk quota: no single file may grow past it, sparse or
// not (host git would read every byte of a sparse file at commit). Where
// the command's cgroup has the memory or pids controller, memory.max and
// pids.max hold for the whole sandbox instead of RLIMIT_AS (which also
// breaks programs that reserve much address space) and RLIMIT_NPROC
// (which counts the sandbox user's processes on the whole host).
func limitArgs(cfg Config) []string {
	args := []string{
		"/usr/bin/prlimit",
		// SIGXCPU at the soft limit, which the note after the output can
		// name; SIGKILL a second later for a process that catches it.
		"--cpu=" + strconv.Itoa(cfg.CPUSeconds) + ":" + strconv.Itoa(cfg.CPUSeconds+1),
	}
	if !cfg.cgroup.has("memory") {
		args = append(args, "--as="+strconv.FormatInt(cfg.MemoryBytes, 10))
	}
	if !cfg.cgroup.has("pids") {
		args = append(args, "--nproc="+strconv.Itoa(cfg.MaxProcesses))
	}
	return append(args, "--fsize="+strconv.FormatInt(cfg.MaxBytes, 10), "--core=0", "--")
}

// Exit statuses of a shell whose child died of a signal (128+n).
const (
	exitSIGKILL = 128 + int(syscall.SIGKILL)
	exitSIGXCPU = 128 + int(syscall.SIGXCPU)
	exitSIGXFSZ = 128 + int(syscall.SIGXFSZ)
)

// limitNotes explains, after a command's output, which limit it most likely
// ran into, so that the model does not retry blindly, and whose limit it
// was. The cgroup's events are certain; the rest is read from the exit
// status and the output.
func limitNotes(cfg Config, id identity, exitCode int, output string, cg cgroupEvents) string {
	var notes []string
	if cg.oomKills > 0 {
		notes = append(notes, fmt.Sprintf("[stopped: this command's sandbox reached its memory limit of %s (cgroup memory.max) and the kernel killed %d process(es)]",
			formatBytes(cfg.MemoryBytes), cg.oomKills))
	}
	if cg.pidsMax > 0 {
		notes = append(notes, fmt.Sprintf("[limit: this command's sandbox allows %d processes and threads at once (cgroup pids.max); %d fork(s) failed]",
			cfg.MaxProcesses, cg.pidsMax))
	}
	if exitCode == exitSIGXCPU || strings.Contains(output, "CPU time limit exceeded") {
		notes = append(notes, fmt.Sprintf("[stopped: a process used up its CPU time limit of %d s and was killed (SIGXCPU)]", cfg.CPUSeconds))
	}
	if exitCode == exitSIGKILL && cg.oomKills == 0 {
		// The kernel's SIGKILL at the hard CPU limit, for a process that
		// ignored SIGXCPU, or its out-of-memory killer; or the command
		// killed its own child.
		notes = append(notes, fmt.Sprintf("[stopped: killed by SIGKILL, most likely at the CPU time limit of %d s (a process that ignores SIGXCPU is killed a second later), else by the kernel's out-of-memory killer or the command itself]", cfg.CPUSeconds))
	}
	if exitCode == exitSIGXFSZ || strings.Contains(output, "File size limit exceeded") || strings.Contains(output, "File too large") {
		notes = append(notes, fmt.Sprintf("[stopped: a file reached the size limit of %s, the workspace's disk quota (SIGXFSZ/EFBIG)]", formatBytes(cfg.MaxBytes)))
	}
	if !cfg.cgroup.has("pids") && (strings.Contains(output, "Cannot fork") || strings.Contains(output, "fork: Resource temporarily unavailable") ||
		strings.Contains(output, "fork failed: resource temporarily unavailable") || strings.Contains(output, "fork: retry")) {
		if id.host {
			notes = append(notes, fmt.Sprintf("[limit: ticket %d's sandbox user (uid %d) may have %d processes and threads at once, and only this Ticket's commands count against it; a fork failed]",
				id.ticket, id.uid, cfg.MaxProcesses))
		} else {
			notes = append(notes, fmt.Sprintf("[limit: the sandbox allows %d processes and threads at once, counted for the service's own user on the host (other Tickets' commands included); a fork failed]",
				cfg.MaxProcesses))
		}
	}
	if !cfg.cgroup.has("memory") && (strings.Contains(output, "Cannot allocate memory") || strings.Contains(output, "memory exhausted") ||
		strings.Contains(output, "out of memory") || strings.Contains(output, "MemoryError")) {
		notes = append(notes, fmt.Sprintf("[limit: each process may map at most %s of memory (address space); an allocation failed]", formatBytes(cfg.MemoryBytes)))
	}
	if len(notes) == 0 {
		return ""
	}
	return "\n" + strings.Join(notes, "\n")
}

// Bounds of the pause between two measurements of the workspace during a
// command. The pause is twice the last measurement's duration, within them,
// so a large tree is not walked back to back.
const (
	quotaMinInterval = 150 * time.Millisecond
	quotaMaxInterval = 2 * time.Second
)

// usage is what a set of directories holds: bytes (see diskUsage) and
// entries (files, directories, links: the inodes they take).
type usage struct {
	bytes, files int64
}

// quotaWatch is what a command is stopped for outgrowing: the directories
// it may write on the host, and what they may hold together.
type quotaWatch struct {
	dirs     []string
	maxBytes int64
	maxFiles int64
	// owner, when not 0, is the uid the first directory's work tree is
	// handed to by bars' walk (its top .git stays the host's), so that
	// one walk both measures the tree and gives it to the command's user.
	owner int
	// took is how long bars' walk took: the watch during the command
	// starts one pause after it.
	took time.Duration
}

// measure returns what the watched directories hold together.
func (q *quotaWatch) measure() (usage, error) {
	return q.walk(0)
}

// walk is measure, handing the first directory's work tree to owner
// when it is not 0.
func (q *quotaWatch) walk(owner int) (usage, error) {
	var total usage
	for i, d := range q.dirs {
		o := owner
		if i > 0 {
			o = 0
		}
		u, err := diskUsage(d, o)
		if err != nil {
			return total, err
		}
		total.bytes += u.bytes
		total.files += u.files
	}
	return total, nil
}

// exceeds reports whether u passes the bars.
func (u usage) exceeds(maxBytes, maxFiles int64) bool {
	return u.bytes > maxBytes || u.files > maxFiles
}

// overNote says which of q's limits u passed, for a command's result.
func (q *quotaWatch) overNote(u usage) string {
	var what []string
	if u.bytes > q.maxBytes {
		what = append(what, fmt.Sprintf("its disk quota of %s (it held %s)", formatBytes(q.maxBytes), formatBytes(u.bytes)))
	}
	if u.files > q.maxFiles {
		what = append(what, fmt.Sprintf("its limit of %d files and directories (it held %d)", q.maxFiles, u.files))
	}
	return strings.Join(what, " and ")
}

// quotaSlack is what a sandbox makes on its own in the watched
// directories (/tmp/home), allowed above the bar of a workspace that
// starts over its quota.
var quotaSlack = usage{bytes: 64 << 10, files: 16}

// bars are what the watched directories may hold during a command: q's
// limits, or what they hold before it starts (plus quotaSlack) when that
// is more. A workspace already over a limit may run commands that do not
// grow it: deleting files must work. With q.owner the same walk hands the
// work tree to the command's user; an error is that failing.
func (q *quotaWatch) bars() (maxBytes, maxFiles int64, err error) {
	maxBytes, maxFiles = q.maxBytes, q.maxFiles
	start := time.Now()
	used, err := q.walk(q.owner)
	q.took = time.Since(start)
	if err != nil {
		if q.owner != 0 && errors.Is(err, errHandingOver) {
			return 0, 0, err
		}
		return maxBytes, maxFiles, nil
	}
	if used.bytes > maxBytes {
		maxBytes = used.bytes + quotaSlack.bytes
	}
	if used.files > maxFiles {
		maxFiles = used.files + quotaSlack.files
	}
	return maxBytes, maxFiles, nil
}

// watchQuota measures q's directories while a command runs and calls kill
// once they pass maxBytes or maxFiles (from q.bars, taken before the
// command started). The returned stop ends the watch and returns what
// triggered the kill, or the zero usage.
func watchQuota(q *quotaWatch, maxBytes, maxFiles int64, kill func()) (stop func() usage) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var over usage
	wg.Add(1)
	go func() {
		defer wg.Done()
		// bars measured the directories just before the command started:
		// the first measurement here waits a pause, as the next ones do.
		pause := min(max(2*q.took, quotaMinInterval), quotaMaxInterval)
		for {
			select {
			case <-done:
				return
			case <-time.After(pause):
			}
			start := time.Now()
			used, err := q.measure()
			if err == nil && used.exceeds(maxBytes, maxFiles) {
				kill()
				over = used
				return
			}
			pause = min(max(2*time.Since(start), quotaMinInterval), quotaMaxInterval)
		}
	}()
	return func() usage {
		close(done)
		wg.Wait()
		return over
	}
}

// diskUsage returns what dir holds: its entries, and their bytes, each
// regular file counted by the larger of its apparent size and its
// allocated blocks, so a sparse file counts every byte that a reader
// (host git, a checkpoint) would read; a file with several hard links
// counts once. Entries that vanish while it walks are skipped: a command
// may be deleting files. A missing dir holds nothing. When owner is not
// 0, every entry but dir's top .git and what it holds is also given to
// owner (as uid and gid; symlinks are changed, not followed) where it is
// not already theirs, as chownTree does.
func diskUsage(dir string, owner int) (usage, error) {
	var total usage
	seen := map[uint64]bool{}
	gitDir := filepath.Join(dir, ".git")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			total.bytes += fi.Size()
			total.files++
			return nil
		}
		if owner != 0 && (int(st.Uid) != owner || int(st.Gid) != owner) && p != gitDir && !strings.HasPrefix(p, gitDir+"/") {
			if err := os.Lchown(p, owner, owner); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%w: %w", errHandingOver, err)
			}
		}
		if st.Nlink > 1 && !d.IsDir() {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		total.files++
		n := st.Blocks * 512
		if fi.Mode().IsRegular() {
			n = max(n, st.Size)
		}
		total.bytes += n
		return nil
	})
	if err != nil {
		return usage{}, fmt.Errorf("measuring workspace: %w", err)
	}
	return total, nil
}

// errHandingOver is a walk's failure to give the work tree to the
// command's user.
var errHandingOver = errors.New("handing the work tree to the sandbox user")

// chownTree gives the work tree at dir to uid (as uid and gid), so that a
// command running as uid on the host can write it. .git is left alone: it
// stays the host's, and read-only in the sandbox anyway. Symlinks are
// changed, not followed.
func chownTree(dir string, uid int) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" && filepath.Dir(p) == dir {
			return fs.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid && int(st.Gid) == uid {
			return nil
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		return fmt.Errorf("handing the work tree to the sandbox user: %w", err)
	}
	return nil
}

// formatBytes prints n in binary units, e.g. "10 MiB".
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + string("KMGTPE"[exp]) + "iB"
}
