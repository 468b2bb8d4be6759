package githubapp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// PermissionCache answers a person's permission level on a repository
// from the github_permissions table while fresh, else from the API
// through the repository's installation (and then caches it).
type PermissionCache struct {
	// DB holds the cache and the installations. Required.
	DB db.Querier
	// Client asks the API. Nil: every level is "unknown".
	Client *Client
	// TTL is how long a cached level is used. Default 10 minutes.
	TTL time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Level returns login's permission level on owner/name. installationID may
// be 0 (a repository webhook carries none): the recorded installation
// covering the repository is used, and without one the level is
// "unknown".
func (p *PermissionCache) Level(ctx context.Context, installationID int64, owner, name, login string) (string, error) {
	if p.Client == nil {
		return "unknown", nil
	}
	if installationID == 0 {
		id, err := InstallationFor(ctx, p.DB, owner+"/"+name)
		if err != nil || id == 0 {
			return "unknown", err
		}
		installationID = id
	}
	ttl := p.TTL
	if ttl <= 0 {
		ttl = 10 * time.Minute
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	repo := strings.ToLower(owner + "/" + name)
	key := strings.ToLower(login)
	var perm string
	var fetched time.Time
	err := p.DB.QueryRow(ctx, "SELECT permission, fetched_at FROM github_permissions WHERE repo = $1 AND login = $2", repo, key).Scan(&perm, &fetched)
	switch {
	case err == nil && now().UTC().Sub(fetched) < ttl:
		return perm, nil
	case err != nil && !errors.Is(err, db.ErrNoRows):
		return "", fmt.Errorf("reading cached permission of %s on %s: %w", login, repo, err)
	}
	perm, err = p.Client.Permission(ctx, installationID, owner, name, login)
	if err != nil {
		return "", err
	}
	if _, err := p.DB.Exec(ctx, `
INSERT INTO github_permissions (repo, login, permission, fetched_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (repo, login) DO UPDATE SET permission = excluded.permission, fetched_at = excluded.fetched_at`,
		repo, key, perm, now().UTC()); err != nil {
		return "", fmt.Errorf("caching permission of %s on %s: %w", login, repo, err)
	}
	return perm, nil
}
