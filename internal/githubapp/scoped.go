package githubapp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"

	"github.com/superagent-dev/superagent/internal/db"
)

// Scoped is a repository and a git token of an installation narrowed to
// that repository and a set of permissions: what an Executor gets for its
// Ticket, so that neither its API calls nor its git pushes can reach the
// installation's other repositories or do more than its tools need.
type Scoped struct {
	// Repo makes the calls; its tokens carry the scope.
	Repo
	tr *ghinstallation.Transport
}

// Token returns a current token of the scope, for git over HTTPS. Never
// show it to a model or write it to a transcript.
func (s *Scoped) Token(ctx context.Context) (string, error) {
	tok, err := s.tr.Token(ctx)
	if err != nil {
		return "", fmt.Errorf("getting a scoped token of installation %d: %w", s.Installation, err)
	}
	return tok, nil
}

// ForRepoScoped is ForRepo narrowed to repo alone and to the permissions
// in want (name → "read" or "write") that the installation was granted,
// each at the lower of the two levels: an installation whose owner has not
// yet accepted a permission the App added keeps working without it.
// Clients are kept per installation, repository and permissions; they
// share the installation's write pacing.
func (c *Client) ForRepoScoped(ctx context.Context, q db.Querier, repo string, want map[string]string) (*Scoped, error) {
	id, err := InstallationFor(ctx, q, repo)
	if err == nil && id == 0 {
		err = ErrNotInstalled
	}
	if err != nil {
		return nil, fmt.Errorf("finding the installation of %s (is the App installed there?): %w", repo, err)
	}
	owner, name, _ := strings.Cut(repo, "/")
	key := fmt.Sprintf("%d/%s/%v", id, strings.ToLower(name), want)
	c.mu.Lock()
	s, ok := c.scoped[key]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	perms, err := c.grantedOf(ctx, id, want)
	if err != nil {
		return nil, err
	}
	base := c.installation(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.scoped[key]; ok {
		return s, nil
	}
	tr := ghinstallation.NewFromAppsTransport(c.apps, id)
	tr.BaseURL = c.apps.BaseURL
	tr.InstallationTokenOptions = &github.InstallationTokenOptions{Repositories: []string{name}, Permissions: perms}
	top := &installationTransport{label: formatInstallation(id), next: tr, wait: c.cfg.Wait, metrics: c.metrics, writes: base.writes}
	s = &Scoped{Repo: c.repo(c.newGitHub(top), id, owner+"/"+name), tr: tr}
	c.scoped[key] = s
	return s, nil
}

// grantedOf is want narrowed to what installation id was granted, as the
// token request's permissions.
func (c *Client) grantedOf(ctx context.Context, id int64, want map[string]string) (*github.InstallationPermissions, error) {
	inst, _, err := c.app.Apps.GetInstallation(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reading the permissions of installation %d: %w", id, err)
	}
	raw, err := json.Marshal(inst.GetPermissions())
	if err != nil {
		return nil, err
	}
	var granted map[string]string
	if err := json.Unmarshal(raw, &granted); err != nil {
		return nil, err
	}
	narrowed := map[string]string{}
	for name, level := range want {
		switch granted[name] {
		case "write", "admin":
			narrowed[name] = level
		case "read":
			narrowed[name] = "read"
		}
	}
	raw, err = json.Marshal(narrowed)
	if err != nil {
		return nil, err
	}
	var perms github.InstallationPermissions
	if err := json.Unmarshal(raw, &perms); err != nil {
		return nil, err
	}
	return &perms, nil
}
