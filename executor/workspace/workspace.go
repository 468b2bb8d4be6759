package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Workspace is one Ticket's git checkout.
type Workspace struct {
	m     *Manager
	id    int64
	dir   string
	tools sandboxTools
	// extras are what With added to its commands.
	extras extras
	// buildLower is setup's build cache layer that With found beside the
	// setup cache, or "".
	buildLower string
}

// Dir returns the workspace's directory on the host.
func (w *Workspace) Dir() string { return w.dir }

// TicketID returns the Ticket the workspace belongs to.
func (w *Workspace) TicketID() int64 { return w.id }

// ErrNothingToCommit is returned by Commit when there are no changes to commit.
var ErrNothingToCommit = errors.New("nothing to commit")

func (w *Workspace) git(ctx context.Context, args ...string) (string, error) {
	return w.m.git.run(ctx, gitCmd{dir: w.dir, args: args})
}

// isAncestor reports whether a is an ancestor of b (or b itself).
func (w *Workspace) isAncestor(ctx context.Context, a, b string) bool {
	_, err := w.git(ctx, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

func (w *Workspace) refExists(ctx context.Context, ref string) bool {
	_, err := w.git(ctx, "rev-parse", "--verify", "-q", ref+"^{commit}")
	return err == nil
}

// checkoutBranch implements the branch half of Manager.Prepare.
func (w *Workspace) checkoutBranch(ctx context.Context, remote Remote, branch string) error {
	local := "refs/heads/" + branch
	tracking := "refs/remotes/origin/" + branch
	hasLocal := w.refExists(ctx, local)
	hasRemote := w.refExists(ctx, tracking)
	current, _ := w.git(ctx, "symbolic-ref", "-q", "HEAD")
	current = strings.TrimSpace(current)

	switch {
	case hasLocal:
		if current != local {
			if _, err := w.git(ctx, "checkout", "--quiet", branch, "--"); err != nil {
				return fmt.Errorf("checking out %s: %w", branch, err)
			}
		}
		if !hasRemote {
			return nil
		}
		if _, err := w.git(ctx, "branch", "--quiet", "--set-upstream-to=origin/"+branch, branch); err != nil {
			return fmt.Errorf("tracking origin/%s: %w", branch, err)
		}
		// Take commits pushed by others, but only when that loses nothing:
		// the local branch must be an ancestor of origin's.
		if !w.isAncestor(ctx, local, tracking) {
			return nil
		}
		if _, err := w.git(ctx, "merge", "--quiet", "--ff-only", "--no-edit", tracking); err != nil {
			return fmt.Errorf("fast-forwarding %s to origin: %w", branch, err)
		}
		return nil
	case hasRemote:
		if _, err := w.git(ctx, "checkout", "--quiet", "-b", branch, "--track", "origin/"+branch, "--"); err != nil {
			return fmt.Errorf("checking out origin/%s: %w", branch, err)
		}
		return nil
	default:
		base := "refs/remotes/origin/" + remote.BaseBranch
		if !w.refExists(ctx, base) {
			return fmt.Errorf("origin has no base branch %q", remote.BaseBranch)
		}
		if _, err := w.git(ctx, "checkout", "--quiet", "--no-track", "-b", branch, base, "--"); err != nil {
			return fmt.Errorf("creating %s from origin/%s: %w", branch, remote.BaseBranch, err)
		}
		return nil
	}
}

// Status returns the short status with a branch line, capped like command
// output.
func (w *Workspace) Status(ctx context.Context) (string, error) {
	out, err := w.gitCapped(ctx, "status", "--short", "--branch", "--ignore-submodules=all", "--untracked-files=all")
	if err != nil {
		return "", fmt.Errorf("workspace status: %w", err)
	}
	return out, nil
}

// Diff returns the unstaged diff, or the staged one, capped like command
// output.
func (w *Workspace) Diff(ctx context.Context, staged bool) (string, error) {
	args := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color", "--ignore-submodules=all"}
	if staged {
		args = append(args, "--cached")
	}
	out, err := w.gitCapped(ctx, args...)
	if err != nil {
		return "", fmt.Errorf("workspace diff: %w", err)
	}
	return out, nil
}

// gitCapped runs git with its stdout streamed through the output cap: the
// head and tail are kept, the rest is counted and dropped as it comes, so
// a diff of any size costs the service no more than the cap.
func (w *Workspace) gitCapped(ctx context.Context, args ...string) (string, error) {
	c := newCappedWriter(w.m.cfg.MaxOutputBytes)
	if _, err := w.m.git.run(ctx, gitCmd{dir: w.dir, args: args, stdout: c}); err != nil {
		return "", err
	}
	out, _ := c.result()
	return out, nil
}

func (w *Workspace) capOutput(s string) string {
	c := newCappedWriter(w.m.cfg.MaxOutputBytes)
	_, _ = c.Write([]byte(s))
	out, _ := c.result()
	return out
}

// Author is who a commit is attributed to, as both author and committer.
type Author struct {
	Name, Email string
}

// Commit stages paths (all changes when empty) and commits them as author. It
// returns ErrNothingToCommit when nothing is staged, and refuses when the
// workspace is over its size limit or holds a nested repository.
func (w *Workspace) Commit(ctx context.Context, message string, paths []string, author Author) (sha string, err error) {
	if strings.TrimSpace(message) == "" {
		return "", errors.New("committing: empty commit message")
	}
	if author.Name == "" || author.Email == "" || strings.ContainsAny(author.Name+author.Email, "<>\n") {
		return "", fmt.Errorf("committing: invalid author %q <%s>", author.Name, author.Email)
	}
	if err := w.underQuota(); err != nil {
		return "", fmt.Errorf("committing: %w", err)
	}
	if nested, err := w.nestedRepo(); err != nil {
		return "", fmt.Errorf("committing: %w", err)
	} else if nested != "" {
		return "", fmt.Errorf("committing: %s is a nested git repository; remove it (or its .git) first", nested)
	}
	var rels []string
	for _, p := range paths {
		rel, err := w.relPath(p)
		if err != nil {
			return "", fmt.Errorf("committing: %w", err)
		}
		rels = append(rels, rel)
	}
	// Git reads the work tree only in the sandbox (see stage); the host
	// then takes the index it wrote.
	stageCtx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	index, err := w.stage(stageCtx, rels)
	cancel()
	if refused := (*CheckpointRefusal)(nil); errors.As(err, &refused) {
		return "", fmt.Errorf("committing: %s", refused.Reason)
	} else if err != nil {
		return "", fmt.Errorf("staging changes: %w", err)
	}
	if err := os.Rename(index, filepath.Join(w.dir, ".git", "index")); err != nil {
		return "", fmt.Errorf("staging changes: %w", err)
	}
	if _, err := w.git(ctx, "diff", "--cached", "--quiet", "--ignore-submodules=all"); err == nil {
		return "", ErrNothingToCommit
	}
	_, err = w.m.git.run(ctx, gitCmd{
		dir:   w.dir,
		args:  []string{"commit", "--quiet", "--no-verify", "--file=-"},
		stdin: strings.NewReader(message),
		env: []string{
			"GIT_AUTHOR_NAME=" + author.Name, "GIT_AUTHOR_EMAIL=" + author.Email,
			"GIT_COMMITTER_NAME=" + author.Name, "GIT_COMMITTER_EMAIL=" + author.Email,
		},
	})
	if err != nil {
		return "", fmt.Errorf("committing: %w", err)
	}
	return w.Head(ctx)
}

// Push pushes HEAD to refs/heads/<branch> on remote, never forcing. The token
// goes to git through the environment only, and never appears in the error.
// With a finder, it first refuses (a *LeakError) when a file or a commit
// message the push would send holds a secret.
func (w *Workspace) Push(ctx context.Context, remote Remote, branch string, finder Finder) error {
	if err := remote.validate(); err != nil {
		return fmt.Errorf("pushing: %w", err)
	}
	if err := checkBranchName(branch); err != nil {
		return fmt.Errorf("pushing: %w", err)
	}
	if leak, err := w.findLeak(ctx, finder, "the branch", []string{"HEAD"}, ""); err != nil {
		return fmt.Errorf("pushing: %w", err)
	} else if leak != nil {
		return leak
	}
	if _, err := w.git(ctx, "remote", "set-url", "origin", "--", remote.URL); err != nil {
		return fmt.Errorf("pushing: setting origin URL: %w", err)
	}
	_, err := w.m.git.run(ctx, gitCmd{
		dir:    w.dir,
		args:   []string{"push", "--quiet", "--no-verify", "--porcelain", "origin", "HEAD:refs/heads/" + branch},
		env:    remote.authEnv(),
		remote: remote,
	})
	if err != nil {
		// run already scrubbed git's stderr.
		return fmt.Errorf("pushing %s: %w", branch, err)
	}
	return nil
}

// Head returns the sha of HEAD.
func (w *Workspace) Head(ctx context.Context) (string, error) {
	out, err := w.git(ctx, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", fmt.Errorf("reading HEAD: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// ChangedFiles lists the files changed between the merge base of origin/<base>
// and HEAD, and HEAD.
func (w *Workspace) ChangedFiles(ctx context.Context, base string) ([]string, error) {
	if err := checkBranchName(base); err != nil {
		return nil, fmt.Errorf("listing changed files: %w", err)
	}
	mb, err := w.git(ctx, "merge-base", "refs/remotes/origin/"+base, "HEAD")
	if err != nil {
		return nil, fmt.Errorf("listing changed files: finding merge base with origin/%s: %w", base, err)
	}
	out, err := w.git(ctx, "diff", "--name-only", "-z", "--no-renames", "--ignore-submodules=all", strings.TrimSpace(mb), "HEAD", "--")
	if err != nil {
		return nil, fmt.Errorf("listing changed files: %w", err)
	}
	files := []string{}
	for f := range strings.SplitSeq(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// underQuota returns an error when the workspace, with its scratch
// directory, is over its disk quota or file limit.
func (w *Workspace) underQuota() error {
	q := w.quota()
	used, err := q.measure()
	if err != nil {
		return err
	}
	if used.exceeds(q.maxBytes, q.maxFiles) {
		return fmt.Errorf("the workspace is over %s (its build caches count too); delete files first", q.overNote(used))
	}
	return nil
}

// nestedRepo returns the relative path of a directory below the top that has
// its own .git, or "". A child git run by the host in such a directory would
// read that repository's config, which the sandbox could have written.
func (w *Workspace) nestedRepo() (string, error) {
	var found string
	err := filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == w.dir {
			return nil
		}
		if d.Name() == ".git" {
			if filepath.Dir(p) == w.dir {
				return fs.SkipDir
			}
			found, _ = filepath.Rel(w.dir, filepath.Dir(p))
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("looking for nested repositories: %w", err)
	}
	return found, nil
}

// exists reports whether the workspace directory is there.
func (w *Workspace) exists() error {
	if _, err := os.Stat(filepath.Join(w.dir, ".git")); err != nil {
		return fmt.Errorf("workspace of ticket %d: %w", w.id, err)
	}
	return nil
}
