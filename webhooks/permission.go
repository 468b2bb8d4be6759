package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// permission returns login's permission level on owner/name, from the
// cache when fresh, else from the API through the installation (and then
// cached). Without a GitHub client or an installation it is "unknown".
func (s *Service) permission(ctx context.Context, installationID int64, owner, name, login string) (string, error) {
	if s.gh == nil {
		return "unknown", nil
	}
	if installationID == 0 {
		// Repository webhooks carry no installation; the stored list may.
		id, err := s.InstallationFor(ctx, owner+"/"+name)
		if err != nil || id == 0 {
			return "unknown", err
		}
		installationID = id
	}
	repo := strings.ToLower(owner + "/" + name)
	key := strings.ToLower(login)
	var perm string
	var fetched time.Time
	err := s.d.QueryRow(ctx, "SELECT permission, fetched_at FROM github_permissions WHERE repo = $1 AND login = $2", repo, key).Scan(&perm, &fetched)
	switch {
	case err == nil && s.now().Sub(fetched) < s.cfg.PermissionTTL:
		return perm, nil
	case err != nil && !errors.Is(err, db.ErrNoRows):
		return "", fmt.Errorf("reading cached permission of %s on %s: %w", login, repo, err)
	}
	perm, err = s.gh.Permission(ctx, installationID, owner, name, login)
	if err != nil {
		return "", err
	}
	if _, err := s.d.Exec(ctx, `
INSERT INTO github_permissions (repo, login, permission, fetched_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (repo, login) DO UPDATE SET permission = excluded.permission, fetched_at = excluded.fetched_at`,
		repo, key, perm, s.now()); err != nil {
		return "", fmt.Errorf("caching permission of %s on %s: %w", login, repo, err)
	}
	return perm, nil
}
