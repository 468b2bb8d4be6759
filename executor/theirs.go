package executor

import (
	"context"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/tickets"
)

// workBranch is the branch the Ticket's commits go to: a person's pull
// request's branch when the Ticket works on theirs, else its own.
func (e *Executor) workBranch(t tickets.Ticket) string {
	if t.Branch != "" {
		return t.Branch
	}
	return e.branch(t.ID)
}

// onTheirs reports whether the Ticket works on a person's pull request:
// its branch is theirs, not one of its own.
func (e *Executor) onTheirs(t tickets.Ticket) bool {
	return t.PullNumber != 0 && t.Branch != "" && t.Branch != e.branch(t.ID)
}

// workRemote is where the Ticket's branch is fetched from and pushed to:
// the repository, or the fork a person's pull request comes from when its
// author allows edits by maintainers (an App installed on the base
// repository may then push there).
func (e *Executor) workRemote(ctx context.Context, t tickets.Ticket) (workspace.Remote, error) {
	r, err := e.remote(ctx, t.Repo)
	if err != nil || !e.onTheirs(t) {
		return r, err
	}
	_, pr, err := e.pull(ctx, t)
	if err != nil {
		return workspace.Remote{}, err
	}
	if fork := pr.GetHead().GetRepo(); fork.GetFullName() != "" && !strings.EqualFold(fork.GetFullName(), t.Repo) {
		r.URL = fork.GetCloneURL()
		if b := fork.GetDefaultBranch(); b != "" {
			r.BaseBranch = b
		}
	}
	return r, nil
}

// adoptPull decides, before a Ticket's first workspace, where its work
// goes when its request was made on a person's pull request ("@bot fix
// the failing test"): on their branch, when the App may push to it (the
// same repository, or a fork whose author allows edits by maintainers),
// and the pull request becomes the Ticket's; otherwise the Ticket keeps
// its own branch, and the Session is told to say so and to offer a pull
// request onto theirs. Any other Ticket is returned as it is.
func (e *Executor) adoptPull(ctx context.Context, t tickets.Ticket, sid int64) (tickets.Ticket, error) {
	if t.SourceCardID == 0 || t.PullNumber != 0 {
		return t, nil
	}
	src, err := e.deps.Tickets.Card(ctx, e.deps.DB, t.SourceCardID)
	if err != nil || src.Source != tickets.SourceGitHub || src.Thread.Number == 0 || !strings.EqualFold(src.Thread.Repo, t.Repo) {
		return t, err
	}
	gh, err := e.installationClient(ctx, t.Repo)
	if err != nil {
		return t, err
	}
	pr, err := gh.PullRequest(ctx, src.Thread.Number)
	switch {
	case githubapp.IsNotFound(err):
		return t, nil // an issue
	case err != nil:
		return t, fmt.Errorf("reading pull request %s#%d: %w", t.Repo, src.Thread.Number, err)
	case pr.GetState() != "open" || e.isOwn(t, pr) || strings.HasSuffix(pr.GetUser().GetLogin(), "[bot]"):
		return t, nil
	}
	head := pr.GetHead()
	fork := head.GetRepo().GetFullName()
	who, number := pr.GetUser().GetLogin(), pr.GetNumber()
	if fork == "" || strings.EqualFold(fork, t.Repo) || pr.GetMaintainerCanModify() {
		err := e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
			if err := e.deps.Tickets.SetPullRequest(ctx, tx, t.ID, head.GetRef(), number); err != nil {
				return err
			}
			_, err := e.sessions.Append(ctx, tx, sid, fmt.Sprintf("host: the request is on %s's pull request %s#%d: this Ticket works on its branch %s "+
				"(in %s): commit and push there; its reviews and checks reach you. It is theirs: only they mark it ready, close or merge it.",
				who, t.Repo, number, head.GetRef(), or(fork, t.Repo)))
			return err
		})
		if err != nil {
			return t, err
		}
		e.cfg.Logger.Info("working on a person's pull request", "ticket", t.ID, "repo", t.Repo, "pr", number, "branch", head.GetRef(), "head_repo", or(fork, t.Repo))
		return e.deps.Tickets.Ticket(ctx, e.deps.DB, t.ID)
	}
	_, err = e.sessions.Append(ctx, e.deps.DB, sid, fmt.Sprintf("host: the request is on %s's pull request %s#%d from %s:%s, a fork whose author does not "+
		"allow edits by maintainers, so the App may not push to it. Say so in one sentence under the request, and offer a pull request with the fix "+
		"from this Ticket's branch %s, which they can merge into theirs (or they allow edits and ask again).",
		who, t.Repo, number, fork, head.GetRef(), e.branch(t.ID)))
	return t, err
}

func or(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}
