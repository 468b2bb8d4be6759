package githubapp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/fresh"
)

// PermissionCache answers a person's permission level on a repository
// from the github_permissions table while fresh, else from the API
// through the repository's installation (and then caches it).
//
// A level this process read or fetched is also kept in memory, for as long
// as it is fresh by the time GitHub gave it: a busy author's comments then
// cost no read at all, and nothing is believed longer than TTL after
// GitHub said it, in memory or in the table. (Another process's newer
// answer is seen once this one's expires.)
type PermissionCache struct {
	// DB holds the cache and the installations. Required.
	DB db.Querier
	// Client asks the API. Nil: every level is "unknown".
	Client *Client
	// TTL is how long a cached level is used. Default 10 minutes.
	TTL time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time

	mem fresh.Memory[permKey, string]
}

// permKey is a login on a repository, both lower-case.
type permKey struct{ repo, login string }

func keyOf(owner, name, login string) permKey {
	return permKey{strings.ToLower(owner + "/" + name), strings.ToLower(login)}
}

func (p *PermissionCache) recall(k permKey, now time.Time) (string, bool) {
	return p.mem.Recall(k, p.ttl(), now)
}

// remember keeps level in memory as GitHub gave it at fetched.
func (p *PermissionCache) remember(k permKey, level string, fetched, now time.Time) {
	p.mem.Remember(k, level, fetched, p.ttl(), now)
}

// Remembered reports whether login's level on owner/name is known in this
// process, without reading the database or asking GitHub: whether a card
// by them can be counted on to be made at once.
func (p *PermissionCache) Remembered(owner, name, login string) bool {
	if p.Client == nil {
		return true
	}
	_, ok := p.recall(keyOf(owner, name, login), p.now().UTC())
	return ok
}

func (p *PermissionCache) ttl() time.Duration {
	if p.TTL <= 0 {
		return 10 * time.Minute
	}
	return p.TTL
}

// Level returns login's permission level on owner/name. installationID may
// be 0 (a repository webhook carries none): the recorded installation
// covering the repository is used, and without one the level is
// "unknown".
func (p *PermissionCache) Level(ctx context.Context, installationID int64, owner, name, login string) (string, error) {
	perm, ok, installationID, err := p.cached(ctx, p.DB, installationID, owner, name, login)
	if err != nil || ok {
		return perm, err
	}
	k := keyOf(owner, name, login)
	perm, err = p.Client.Permission(ctx, installationID, owner, name, login)
	if err != nil {
		return "", err
	}
	now := p.now().UTC()
	if _, err := p.DB.Exec(ctx, `
INSERT INTO github_permissions (repo, login, permission, fetched_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (repo, login) DO UPDATE SET permission = excluded.permission, fetched_at = excluded.fetched_at`,
		k.repo, k.login, perm, now); err != nil {
		return "", fmt.Errorf("caching permission of %s on %s: %w", login, k.repo, err)
	}
	p.remember(k, perm, now, now)
	return perm, nil
}

// Cached answers Level from what q holds, without asking GitHub: ok is
// false when the level is not cached or no longer fresh. Reading through
// q lets a caller ask inside its own transaction.
func (p *PermissionCache) Cached(ctx context.Context, q db.Querier, installationID int64, owner, name, login string) (perm string, ok bool, err error) {
	perm, ok, _, err = p.cached(ctx, q, installationID, owner, name, login)
	return perm, ok, err
}

// cached is Cached that also returns the installation to ask through when
// the level is not cached: installationID, or the recorded one when it is 0.
func (p *PermissionCache) cached(ctx context.Context, q db.Querier, installationID int64, owner, name, login string) (perm string, ok bool, through int64, err error) {
	if p.Client == nil {
		return "unknown", true, 0, nil
	}
	if installationID == 0 {
		if installationID, err = InstallationFor(ctx, q, owner+"/"+name); err != nil {
			return "", false, 0, err
		}
		if installationID == 0 {
			return "unknown", true, 0, nil
		}
	}
	now := p.now().UTC()
	k := keyOf(owner, name, login)
	if perm, ok := p.recall(k, now); ok {
		return perm, true, installationID, nil
	}
	var fetched time.Time
	err = q.QueryRow(ctx, "SELECT permission, fetched_at FROM github_permissions WHERE repo = $1 AND login = $2", k.repo, k.login).Scan(&perm, &fetched)
	switch {
	case errors.Is(err, db.ErrNoRows):
		return "", false, installationID, nil
	case err != nil:
		return "", false, 0, fmt.Errorf("reading cached permission of %s on %s: %w", login, k.repo, err)
	case now.Sub(fetched) >= p.ttl():
		return "", false, installationID, nil
	}
	p.remember(k, perm, fetched, now)
	return perm, true, installationID, nil
}

func (p *PermissionCache) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}
