package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// WIPRef is the hidden ref of the repository that holds ticket's
// work-in-progress checkpoint. GitHub accepts custom refs outside
// refs/heads, refs/tags and refs/pull, shows them nowhere, and does not
// clone them by default.
func WIPRef(ticketID int64) string {
	return "refs/superagent/wip/" + strconv.FormatInt(ticketID, 10)
}

// Checkpoint is one checkpoint commit: its tree is the working tree
// (tracked changes and untracked files that are not ignored) and its only
// parent is the branch's head at the time.
type Checkpoint struct {
	Commit string
	Head   string
	Tree   string
}

// wipMark is what the workspace last agreed with the hidden ref on: the
// ref's value as this workspace knows it (the force-with-lease base), and
// the head and tree of the checkpoint it made or restored. It lives in
// .git, which the sandbox cannot write.
type wipMark struct {
	Lease, Head, Tree string
}

const (
	wipMarkFile = "superagent-wip"
	wipAuthor   = "superagent"
	wipEmail    = "superagent@localhost"
)

func (w *Workspace) readMark() wipMark {
	raw, err := os.ReadFile(filepath.Join(w.dir, ".git", wipMarkFile))
	if err != nil {
		return wipMark{}
	}
	f := strings.Fields(string(raw))
	for len(f) < 3 {
		f = append(f, "-")
	}
	clean := func(s string) string { return strings.TrimPrefix(s, "-") }
	return wipMark{Lease: clean(f[0]), Head: clean(f[1]), Tree: clean(f[2])}
}

func (w *Workspace) writeMark(m wipMark) error {
	dash := func(s string) string { return "-" + s }
	if err := os.WriteFile(filepath.Join(w.dir, ".git", wipMarkFile),
		[]byte(dash(m.Lease)+" "+dash(m.Head)+" "+dash(m.Tree)+"\n"), 0o600); err != nil {
		return fmt.Errorf("recording the checkpoint: %w", err)
	}
	return nil
}

// Bounds of a checkpoint: beyond them it is refused (and the step goes
// on). GitHub refuses files over 100 MB in any ref.
const (
	checkpointTimeout  = 2 * time.Minute
	maxCheckpointFile  = 100 << 20
	sandboxCheckpoint  = "/wip"
	checkpointListFile = "list"
)

// CheckpointRefusal is a checkpoint the host would not take: what the
// tree holds passes a bound, or a file holds a secret. Its message is
// meant for the model and names the file.
type CheckpointRefusal struct{ Reason string }

func (e *CheckpointRefusal) Error() string {
	return "the work in progress was not checkpointed: " + e.Reason
}

// Checkpoint records the work in progress, commits and working tree, in
// WIPRef of remote, without touching the workspace's index or HEAD. The
// tree holds what git would commit: tracked files and untracked ones that
// are not ignored. Git reads the work tree only inside the sandbox, as
// the Ticket's user with its limits and a time limit, writing to a
// private index and object directory; the host moves the objects in and
// reads objects only. It refuses (a *CheckpointRefusal, or a *LeakError
// when finder, if not nil, finds a secret in a file or a commit message
// the push would send) a tree of more than Config.MaxFiles files, one file
// over 100 MiB or more than Config.MaxBytes in all. It returns false, and
// pushes nothing, when neither HEAD nor the tree changed since the
// checkpoint this workspace last made or restored, or, before any
// checkpoint, when the tree is HEAD's and HEAD is on the remote. remote
// is asked for only when there is something to push. The push forces
// with a lease on the value this workspace last saw, so a process that
// lost the Ticket cannot overwrite the checkpoint of the one that has it.
func (w *Workspace) Checkpoint(ctx context.Context, remote func(context.Context) (Remote, error), finder Finder) (Checkpoint, bool, error) {
	var cp Checkpoint
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	if nested, err := w.nestedRepo(); err != nil {
		return cp, false, fmt.Errorf("checkpointing: %w", err)
	} else if nested != "" {
		return cp, false, &CheckpointRefusal{Reason: nested + " is a nested git repository; remove it (or its .git)"}
	}
	if err := w.underQuota(); err != nil {
		return cp, false, &CheckpointRefusal{Reason: err.Error()}
	}
	index, err := w.stage(ctx, nil)
	if err != nil {
		return cp, false, err
	}
	// From here on the host reads the index and objects, never the tree.
	out, err := w.m.git.run(ctx, gitCmd{dir: w.dir, args: []string{"write-tree"}, env: []string{"GIT_INDEX_FILE=" + index}})
	if err != nil {
		return cp, false, fmt.Errorf("checkpointing: writing the tree: %w", err)
	}
	cp.Tree = strings.TrimSpace(out)
	if cp.Head, err = w.Head(ctx); err != nil {
		return cp, false, fmt.Errorf("checkpointing: %w", err)
	}
	mark := w.readMark()
	if mark.Head == cp.Head && mark.Tree == cp.Tree {
		cp.Commit = mark.Lease
		return cp, false, nil
	}
	if mark.Lease == "" && w.cleanAndPushed(ctx, cp) {
		// Nothing the remote lacks: no ref to make.
		return cp, false, nil
	}
	out, err = w.m.git.run(ctx, gitCmd{
		dir:  w.dir,
		args: []string{"commit-tree", cp.Tree, "-p", cp.Head, "-m", fmt.Sprintf("superagent: work in progress of ticket %d", w.id)},
		env: []string{
			"GIT_AUTHOR_NAME=" + wipAuthor, "GIT_AUTHOR_EMAIL=" + wipEmail,
			"GIT_COMMITTER_NAME=" + wipAuthor, "GIT_COMMITTER_EMAIL=" + wipEmail,
		},
	})
	if err != nil {
		return cp, false, fmt.Errorf("checkpointing: committing the tree: %w", err)
	}
	cp.Commit = strings.TrimSpace(out)
	if leak, err := w.findLeak(ctx, finder, "the checkpoint", []string{cp.Commit}, mark.Lease); err != nil {
		return cp, false, fmt.Errorf("checkpointing: %w", err)
	} else if leak != nil {
		return cp, false, leak
	}
	r, err := remote(ctx)
	if err == nil {
		err = r.validate()
	}
	if err != nil {
		return cp, false, fmt.Errorf("checkpointing: %w", err)
	}
	ref := WIPRef(w.id)
	_, err = w.m.git.run(ctx, gitCmd{
		dir: w.dir,
		args: []string{"push", "--quiet", "--no-verify", "--porcelain", "--force-with-lease=" + ref + ":" + mark.Lease,
			"--", r.URL, cp.Commit + ":" + ref},
		env:    r.authEnv(),
		remote: r,
	})
	if err != nil {
		return cp, false, fmt.Errorf("checkpointing: pushing %s: %w", ref, err)
	}
	return cp, true, w.writeMark(wipMark{Lease: cp.Commit, Head: cp.Head, Tree: cp.Tree})
}

// cleanAndPushed reports whether cp's tree is HEAD's and every commit of
// HEAD is on the remote: a checkpoint would hold nothing new.
func (w *Workspace) cleanAndPushed(ctx context.Context, cp Checkpoint) bool {
	headTree, err := w.git(ctx, "rev-parse", "--verify", "HEAD^{tree}")
	if err != nil || strings.TrimSpace(headTree) != cp.Tree {
		return false
	}
	n, err := w.git(ctx, "rev-list", "--count", "HEAD", "--not", "--remotes=origin")
	return err == nil && strings.TrimSpace(n) == "0"
}

// stage stages the work tree as `git add --all -- <paths>` would (all of
// it without paths) into a private index, starting from the workspace's
// index, and returns that index's path. Git runs in the sandbox over the
// work tree, with the workspace's .git read-only and the private index
// and an object directory writable at /wip; the host checks what it would
// take before git reads any of it, then moves the objects into .git.
func (w *Workspace) stage(ctx context.Context, paths []string) (string, error) {
	wip := filepath.Join(w.m.scratchDir(w.id), "wip")
	if err := emptyDir(wip); err != nil {
		return "", fmt.Errorf("staging: %w", err)
	}
	if err := os.Mkdir(filepath.Join(wip, "objects"), 0o700); err != nil {
		return "", fmt.Errorf("staging: %w", err)
	}
	// Starting from the real index reuses its file stats, so tracked files
	// unchanged since the last commit or add are not read again.
	if err := copyFile(filepath.Join(w.dir, ".git", "index"), filepath.Join(wip, "index")); err != nil {
		return "", fmt.Errorf("staging: copying the index: %w", err)
	}
	git := "git"
	for i := 0; i < len(safeConfig); i += 2 {
		git += " -c '" + safeConfig[i+1] + "'"
	}
	git += " -c core.untrackedCache=false"
	spec := " -- ."
	if len(paths) > 0 {
		spec = " --"
		for _, p := range paths {
			spec += " " + shellQuote(p)
		}
	}
	list := git + " ls-files -z --others --modified --exclude-standard" + spec + " > " + sandboxCheckpoint + "/" + checkpointListFile
	if err := w.runCheckpointGit(ctx, wip, list); err != nil {
		return "", err
	}
	if err := w.checkCandidates(filepath.Join(wip, checkpointListFile)); err != nil {
		return "", err
	}
	if err := w.runCheckpointGit(ctx, wip, git+" add --all"+spec); err != nil {
		return "", err
	}
	if err := moveObjects(filepath.Join(wip, "objects"), filepath.Join(w.dir, ".git", "objects")); err != nil {
		return "", fmt.Errorf("staging: %w", err)
	}
	index := filepath.Join(wip, "index")
	if os.Geteuid() == 0 {
		if err := os.Lchown(index, 0, 0); err != nil {
			return "", fmt.Errorf("staging: %w", err)
		}
	}
	return index, nil
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runCheckpointGit runs script (host-written git commands) in the
// sandbox for a checkpoint, with wip at /wip; in SandboxNone, on the
// host with the same paths.
func (w *Workspace) runCheckpointGit(ctx context.Context, wip, script string) error {
	id := identityOf(w.id)
	dir := sandboxCheckpoint
	if w.m.cfg.Sandbox == SandboxNone {
		dir = wip
		script = strings.ReplaceAll(script, sandboxCheckpoint+"/", wip+"/")
	}
	env := []string{"GIT_INDEX_FILE=" + dir + "/index", "GIT_OBJECT_DIRECTORY=" + dir + "/objects",
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + sandboxWorkspace + "/.git/objects", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	out := newCappedWriter(4 << 10)
	var st runState
	var err error
	if w.m.cfg.Sandbox == SandboxNone {
		env[2] = "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(w.dir, ".git", "objects")
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
		cmd.Dir = w.dir
		cmd.Env = append(commandEnv(w.m.cfg, extras{}, "", ""), append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0="+w.dir)...)
		st, err = runGroup(cmd, out, nil, nil)
	} else {
		if id.host {
			if err := chownTree(wip, id.uid); err != nil {
				return fmt.Errorf("checkpointing: %w", err)
			}
		}
		x := extras{env: env, id: id, mounts: []bindMount{{src: wip, dst: sandboxCheckpoint, rw: true}}}
		st, err = w.m.runSandboxed(ctx, w.tools, w.dir, sandboxWorkspace, script, out, x, nil)
	}
	text, _ := out.result()
	switch {
	case err != nil && ctx.Err() != nil:
		return &CheckpointRefusal{Reason: fmt.Sprintf("reading the work tree took over %s", checkpointTimeout)}
	case err != nil:
		return fmt.Errorf("checkpointing: %w", err)
	case ctx.Err() != nil:
		return &CheckpointRefusal{Reason: fmt.Sprintf("reading the work tree took over %s", checkpointTimeout)}
	case st.exitCode != 0:
		return fmt.Errorf("checkpointing: git in the sandbox exited with status %d: %s", st.exitCode, strings.TrimSpace(text))
	}
	return nil
}

// checkCandidates refuses a checkpoint whose new and changed files (the
// NUL-separated list at path, written by git in the sandbox) pass the
// bounds, before anything reads them.
func (w *Workspace) checkCandidates(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("checkpointing: %w", err)
	}
	if fi.Size() > maxGitStdout {
		return &CheckpointRefusal{Reason: fmt.Sprintf("the list of new and changed files is over %s", formatBytes(maxGitStdout))}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("checkpointing: %w", err)
	}
	root, err := w.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	var count, total int64
	for name := range strings.SplitSeq(string(raw), "\x00") {
		if name == "" {
			continue
		}
		count++
		if count > w.m.cfg.MaxFiles {
			return &CheckpointRefusal{Reason: fmt.Sprintf("it would hold more than %d new and changed files", w.m.cfg.MaxFiles)}
		}
		fi, err := root.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted since, or a link
		}
		if fi.Size() > maxCheckpointFile {
			return &CheckpointRefusal{Reason: fmt.Sprintf("%s is %s (a sparse file counts every byte), over the %s a pushed file may hold; delete it or add it to .gitignore",
				name, formatBytes(fi.Size()), formatBytes(maxCheckpointFile))}
		}
		if total += fi.Size(); total > w.m.cfg.MaxBytes {
			return &CheckpointRefusal{Reason: fmt.Sprintf("its new and changed files hold more than %s", formatBytes(w.m.cfg.MaxBytes))}
		}
	}
	return nil
}

// moveObjects moves the loose objects and packs git wrote under from into
// the object directory to, giving them to the service.
func moveObjects(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == from {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(p, 0, 0); err != nil {
				return err
			}
		}
		if _, err := os.Lstat(dst); err == nil {
			return nil // git has it already
		}
		return os.Rename(p, dst)
	})
}

// Restored says what Restore did with the checkpoint it found.
type Restored struct {
	// Checkpoint is the one remote holds; empty when it holds none.
	Checkpoint
	// Applied: the branch is now at the checkpoint's parent and the
	// working tree at its tree.
	Applied bool
	// SetAside: the pushed branch has commits the checkpoint lacks (a
	// person pushed, or the branch was rewritten), so the pushed branch
	// was kept and the checkpoint left alone.
	SetAside bool
}

// Restore brings the workspace, already on branch, to the checkpoint in
// WIPRef of remote when this workspace has not made or restored it
// itself (it was cloned afresh, or is older): the branch goes to the
// checkpoint's parent, the index with it, and the working tree to the
// checkpoint's tree, files the checkpoint does not hold removed (ignored
// ones stay). The checkpoint wins only when it descends from what origin
// has on branch; otherwise the pushed branch is kept (SetAside).
func (w *Workspace) Restore(ctx context.Context, remote Remote, branch string) (Restored, error) {
	var res Restored
	if err := remote.validate(); err != nil {
		return res, fmt.Errorf("restoring the checkpoint: %w", err)
	}
	if err := checkBranchName(branch); err != nil {
		return res, fmt.Errorf("restoring the checkpoint: %w", err)
	}
	ref := WIPRef(w.id)
	_, err := w.m.git.run(ctx, gitCmd{
		dir:    w.dir,
		args:   []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--", remote.URL, "+" + ref + ":" + ref},
		env:    remote.authEnv(),
		remote: remote,
	})
	var gerr *GitError
	if errors.As(err, &gerr) && strings.Contains(gerr.Stderr, "couldn't find remote ref") {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("restoring the checkpoint: fetching %s: %w", ref, err)
	}
	for _, v := range []struct {
		dst  *string
		spec string
	}{{&res.Commit, ref + "^{commit}"}, {&res.Head, ref + "^1^{commit}"}, {&res.Tree, ref + "^{tree}"}} {
		out, err := w.git(ctx, "rev-parse", "--verify", "--end-of-options", v.spec)
		if err != nil {
			return res, fmt.Errorf("restoring the checkpoint: reading %s: %w", v.spec, err)
		}
		*v.dst = strings.TrimSpace(out)
	}
	mark := w.readMark()
	if mark.Lease == res.Commit {
		return res, nil // made or restored here: this workspace is as new
	}
	if tracking := "refs/remotes/origin/" + branch; w.refExists(ctx, tracking) && !w.isAncestor(ctx, tracking, res.Head) {
		res.SetAside = true
		return res, w.writeMark(wipMark{Lease: res.Commit})
	}
	current, err := w.git(ctx, "symbolic-ref", "-q", "HEAD")
	if err != nil || strings.TrimSpace(current) != "refs/heads/"+branch {
		return res, fmt.Errorf("restoring the checkpoint: HEAD is not on %s", branch)
	}
	steps := [][]string{
		{"update-ref", "-m", "superagent: restore the checkpoint", "HEAD", res.Head},
		{"read-tree", "--reset", "-u", res.Tree},
		// What the checkpoint does not hold goes; ignored files stay.
		{"clean", "-f", "-f", "-d", "-q"},
		{"reset", "--quiet", "--no-refresh"},
	}
	for _, args := range steps {
		if _, err := w.git(ctx, args...); err != nil {
			return res, fmt.Errorf("restoring the checkpoint: %w", err)
		}
	}
	res.Applied = true
	return res, w.writeMark(wipMark{Lease: res.Commit, Head: res.Head, Tree: res.Tree})
}

// DeleteWIP deletes ticket's WIPRef in remote; a ref that is not there is
// not an error. It needs no workspace: it pushes from an empty repository
// of the Manager's own.
func (m *Manager) DeleteWIP(ctx context.Context, remote Remote, ticketID int64) (existed bool, err error) {
	if err := remote.validate(); err != nil {
		return false, fmt.Errorf("deleting the checkpoint of ticket %d: %w", ticketID, err)
	}
	ref := WIPRef(ticketID)
	scratch := filepath.Join(m.cfg.Root, ".wip-scratch.git")
	out, err := m.git.run(ctx, gitCmd{dir: m.cfg.Root, args: []string{"ls-remote", "--", remote.URL, ref}, env: remote.authEnv(), remote: remote})
	if err != nil {
		return false, fmt.Errorf("deleting the checkpoint of ticket %d: listing it: %w", ticketID, err)
	}
	if strings.TrimSpace(out) == "" {
		return false, nil
	}
	if _, err := os.Stat(filepath.Join(scratch, "HEAD")); errors.Is(err, fs.ErrNotExist) {
		if _, err := m.git.run(ctx, gitCmd{dir: m.cfg.Root, args: []string{"init", "--quiet", "--bare", "--", scratch}}); err != nil {
			return false, fmt.Errorf("deleting the checkpoint of ticket %d: %w", ticketID, err)
		}
	}
	_, err = m.git.run(ctx, gitCmd{
		dir:    scratch,
		args:   []string{"--git-dir=" + scratch, "push", "--quiet", "--no-verify", "--porcelain", "--", remote.URL, ":" + ref},
		env:    remote.authEnv(),
		remote: remote,
	})
	if err != nil {
		return false, fmt.Errorf("deleting the checkpoint of ticket %d: %w", ticketID, err)
	}
	return true, nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if errors.Is(err, fs.ErrNotExist) {
		// A repository without an index yet: the private one starts empty.
		if err := os.Remove(to); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		return err
	}
	return dst.Close()
}
