package githubapp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"

	"github.com/google/go-github/v66/github"
)

// InstallationFor returns the id of the active installation covering repo
// (owner/name), or 0, from the installations the webhooks recorded
// (github_installations and github_repositories). Every part that acts on
// a repository as the App asks here: the main Session's messages and route
// check, the Executors, and ingestion's permission lookup.
func InstallationFor(ctx context.Context, q db.Querier, repo string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `
SELECT r.installation_id FROM github_repositories r JOIN github_installations i ON i.id = r.installation_id
WHERE LOWER(r.full_name) = LOWER($1) AND r.active AND i.state = 'active' ORDER BY r.updated_at DESC LIMIT 1`, repo).Scan(&id)
	if err != nil {
		if errors.Is(err, db.ErrNoRows) {
			return 0, nil
		}
		return 0, fmt.Errorf("finding installation of %s: %w", repo, err)
	}
	return id, nil
}

// ErrNotInstalled is returned by ForRepo when no active installation
// covers the repository.
var ErrNotInstalled = errors.New("no active installation covers it")

// ForRepo returns repo (owner/name) as the active installation that
// covers it reaches it: the one way a role writes to a repository as the
// App.
func (c *Client) ForRepo(ctx context.Context, q db.Querier, repo string) (*Repo, error) {
	id, err := InstallationFor(ctx, q, repo)
	if err == nil && id == 0 {
		err = ErrNotInstalled
	}
	if err != nil {
		return nil, fmt.Errorf("finding the installation of %s (is the App installed there?): %w", repo, err)
	}
	return c.Repo(id, repo), nil
}

// Repo is repo (owner/name) as installation id reaches it, for a caller
// that knows the installation already.
func (c *Client) Repo(id int64, repo string) *Repo {
	r := c.repo(c.Installation(id), id, repo)
	return &r
}

// repo is repo (owner/name) reached through gh, installation id's client.
func (c *Client) repo(gh *github.Client, id int64, repo string) Repo {
	owner, name, _ := strings.Cut(repo, "/")
	return Repo{gh: gh, graphQL: c.GraphQLURL(), owner: owner, name: name, Installation: id}
}

// PullFiles lists up to limit files changed by pull request number of
// repo, through the installation that covers repo, following GitHub's
// pages (100 files each; GitHub lists at most 3000).
func (c *Client) PullFiles(ctx context.Context, q db.Querier, repo string, number, limit int) ([]*CommitFile, error) {
	r, err := c.ForRepo(ctx, q, repo)
	if err != nil {
		return nil, err
	}
	return r.PullFiles(ctx, number, limit)
}
