package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/tickets"
)

// errNoGitHub refuses GitHub work where the App is not set up.
var errNoGitHub = errors.New("the GitHub App is not configured")

// toolPermissions are what the Executor's tools need of a repository:
// push and read code, pull requests, comments and reactions, check runs,
// and Actions' job logs.
var toolPermissions = map[string]string{
	"contents": "write", "pull_requests": "write", "issues": "write", "checks": "write", "actions": "read", "metadata": "read",
}

// scoped is the installation that covers repo, narrowed to repo and to
// toolPermissions: an Executor's token reaches nothing else.
func (e *Executor) scoped(ctx context.Context, repo string) (*githubapp.Scoped, error) {
	if e.deps.GitHub == nil {
		return nil, errNoGitHub
	}
	return e.deps.GitHub.ForRepoScoped(ctx, e.deps.DB, repo, toolPermissions)
}

// installationClient is repo as the installation that covers it reaches
// it, scoped to it.
func (e *Executor) installationClient(ctx context.Context, repo string) (*githubapp.Repo, error) {
	s, err := e.scoped(ctx, repo)
	if err != nil {
		return nil, err
	}
	return &s.Repo, nil
}

// remote is the Ticket's repository as git reaches it, with a current
// installation token (which stays in git's environment).
func (e *Executor) remote(ctx context.Context, repo string) (workspace.Remote, error) {
	if r, ok := e.localRemote(repo); ok {
		return r, nil
	}
	if e.deps.GitHub == nil {
		return workspace.Remote{}, errNoGitHub
	}
	s, err := e.scoped(ctx, repo)
	if err != nil {
		return workspace.Remote{}, err
	}
	r, err := s.Repository(ctx)
	if err != nil {
		return workspace.Remote{}, fmt.Errorf("reading repository %s: %w", repo, err)
	}
	token, err := s.Token(ctx)
	if err != nil {
		return workspace.Remote{}, err
	}
	return workspace.Remote{URL: r.GetCloneURL(), Token: token, BaseBranch: r.GetDefaultBranch()}, nil
}

// prepare makes the Ticket's workspace ready on its branch, and brings
// back its checkpoint when the workspace is new or older than it; it
// reports whether it did.
func (e *Executor) prepare(ctx context.Context, t tickets.Ticket) (*workspace.Workspace, bool, error) {
	r, err := e.workRemote(ctx, t)
	if err != nil {
		return nil, false, fmt.Errorf("preparing the workspace of ticket %d: %w", t.ID, err)
	}
	ws, err := e.deps.Workspaces.Prepare(ctx, t.ID, r, e.workBranch(t))
	if err != nil {
		return nil, false, fmt.Errorf("preparing the workspace of ticket %d: %w", t.ID, err)
	}
	if t.Branch == "" {
		if err := e.deps.Tickets.SetBranch(ctx, e.deps.DB, t.ID, e.branch(t.ID)); err != nil {
			return nil, false, err
		}
	}
	restored, err := e.restore(ctx, t, ws)
	if err != nil {
		return nil, false, err
	}
	return ws, restored, nil
}
