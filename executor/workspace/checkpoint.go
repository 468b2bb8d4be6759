package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	wipMarkFile  = "superagent-wip"
	wipIndexFile = "superagent-wip.index"
	wipAuthor    = "superagent"
	wipEmail     = "superagent@localhost"
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

// Checkpoint records the work in progress, commits and working tree, in
// WIPRef of remote, without touching the workspace's index or HEAD: the
// tree is written through a private index. It returns false, and pushes
// nothing, when neither HEAD nor the tree changed since the checkpoint
// this workspace last made or restored. remote is asked for only when
// there is something to push. The push forces with a lease on the value
// this workspace last saw, so a process that lost the Ticket cannot
// overwrite the checkpoint of the one that has it.
func (w *Workspace) Checkpoint(ctx context.Context, remote func(context.Context) (Remote, error)) (Checkpoint, bool, error) {
	var cp Checkpoint
	if nested, err := w.nestedRepo(); err != nil {
		return cp, false, fmt.Errorf("checkpointing: %w", err)
	} else if nested != "" {
		// A host git walking into it would read the sandbox's config.
		return cp, false, fmt.Errorf("checkpointing: %s is a nested git repository", nested)
	}
	size, err := w.size()
	if err != nil {
		return cp, false, fmt.Errorf("checkpointing: %w", err)
	}
	if size > w.m.cfg.MaxBytes {
		return cp, false, fmt.Errorf("checkpointing: workspace holds %d bytes, over the limit of %d", size, w.m.cfg.MaxBytes)
	}
	index := filepath.Join(w.dir, ".git", wipIndexFile)
	// Starting from the real index reuses its file stats, so only files
	// changed since the last commit or add are read again.
	if err := copyFile(filepath.Join(w.dir, ".git", "index"), index); err != nil {
		return cp, false, fmt.Errorf("checkpointing: copying the index: %w", err)
	}
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := w.m.git.run(ctx, gitCmd{dir: w.dir, args: []string{"add", "--all", "--", "."}, env: env}); err != nil {
		return cp, false, fmt.Errorf("checkpointing: staging the working tree: %w", err)
	}
	out, err := w.m.git.run(ctx, gitCmd{dir: w.dir, args: []string{"write-tree"}, env: env})
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
