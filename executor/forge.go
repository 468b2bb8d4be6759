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

// installation finds the App installation that covers repo.
func (e *Executor) installation(ctx context.Context, repo string) (int64, error) {
	id, err := githubapp.InstallationFor(ctx, e.deps.DB, repo)
	if err == nil && id == 0 {
		err = githubapp.ErrNotInstalled
	}
	if err != nil {
		return 0, fmt.Errorf("finding the installation of %s (is the App installed there?): %w", repo, err)
	}
	return id, nil
}

// installationClient is a GitHub client acting as the installation that
// covers repo.
func (e *Executor) installationClient(ctx context.Context, repo string) (*github.Client, error) {
	if e.deps.GitHub == nil {
		return nil, errNoGitHub
	}
	gh, _, err := e.deps.GitHub.ForRepo(ctx, e.deps.DB, repo)
	if err != nil {
		return nil, err
	}
	return gh, nil
}

// remote is the Ticket's repository as git reaches it, with a current
// installation token (which stays in git's environment).
func (e *Executor) remote(ctx context.Context, repo string) (workspace.Remote, error) {
	if e.deps.GitHub == nil {
		return workspace.Remote{}, errNoGitHub
	}
	id, err := e.installation(ctx, repo)
	if err != nil {
		return workspace.Remote{}, err
	}
	owner, name, _ := strings.Cut(repo, "/")
	r, _, err := e.deps.GitHub.Installation(id).Repositories.Get(ctx, owner, name)
	if err != nil {
		return workspace.Remote{}, fmt.Errorf("reading repository %s: %w", repo, err)
	}
	token, err := e.deps.GitHub.InstallationToken(ctx, id)
	if err != nil {
		return workspace.Remote{}, err
	}
	return workspace.Remote{URL: r.GetCloneURL(), Token: token, BaseBranch: r.GetDefaultBranch()}, nil
}

// prepare makes the Ticket's workspace ready on its branch.
func (e *Executor) prepare(ctx context.Context, t tickets.Ticket) (*workspace.Workspace, error) {
	r, err := e.workRemote(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("preparing the workspace of ticket %d: %w", t.ID, err)
	}
	ws, err := e.deps.Workspaces.Prepare(ctx, t.ID, r, e.workBranch(t))
	if err != nil {
		return nil, fmt.Errorf("preparing the workspace of ticket %d: %w", t.ID, err)
	}
	if t.Branch == "" {
		if err := e.deps.Tickets.SetBranch(ctx, e.deps.DB, t.ID, e.branch(t.ID)); err != nil {
			return nil, err
		}
	}
	return ws, nil
}

// graphQL runs one GraphQL request as the installation covering repo and
// decodes its data into out.
func (e *Executor) graphQL(ctx context.Context, repo, query string, vars map[string]any, out any) error {
	if e.deps.GitHub == nil {
		return errNoGitHub
	}
	id, err := e.installation(ctx, repo)
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
	resp, err := e.deps.GitHub.Installation(id).Client().Do(req)
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
