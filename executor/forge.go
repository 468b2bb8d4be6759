package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-github/v66/github"

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

// installationClient is a GitHub client acting as the installation that
// covers repo, scoped to it.
func (e *Executor) installationClient(ctx context.Context, repo string) (*github.Client, error) {
	s, err := e.scoped(ctx, repo)
	if err != nil {
		return nil, err
	}
	return s.GitHub, nil
}

// remote is the Ticket's repository as git reaches it, with a current
// installation token (which stays in git's environment).
func (e *Executor) remote(ctx context.Context, repo string) (workspace.Remote, error) {
	if e.deps.GitHub == nil {
		return workspace.Remote{}, errNoGitHub
	}
	s, err := e.scoped(ctx, repo)
	if err != nil {
		return workspace.Remote{}, err
	}
	owner, name, _ := strings.Cut(repo, "/")
	r, _, err := s.GitHub.Repositories.Get(ctx, owner, name)
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

// graphQL runs one GraphQL request as the installation covering repo and
// decodes its data into out.
func (e *Executor) graphQL(ctx context.Context, repo, query string, vars map[string]any, out any) error {
	sc, err := e.scoped(ctx, repo)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return fmt.Errorf("encoding a GraphQL request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.deps.GraphQLURL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building a GraphQL request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	// The installation client's transport adds the token, paces writes and
	// retries rate limits.
	resp, err := sc.GitHub.Client().Do(req)
	if err != nil {
		return fmt.Errorf("GraphQL request: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("reading a GraphQL answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GraphQL request: %s: %s", resp.Status, strings.TrimSpace(string(raw)))
	}
	var envelope struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(raw, &envelope); err != nil {
		return fmt.Errorf("decoding a GraphQL answer: %w", err)
	}
	if len(envelope.Errors) > 0 {
		msgs := make([]string, len(envelope.Errors))
		for i, m := range envelope.Errors {
			msgs[i] = m.Message
		}
		return fmt.Errorf("GraphQL: %s", strings.Join(msgs, "; "))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(envelope.Data, out); err != nil {
		return fmt.Errorf("decoding GraphQL data: %w", err)
	}
	return nil
}
