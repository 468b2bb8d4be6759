package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
)

// Installation is a GitHub App installation as the webhooks reported it.
type Installation struct {
	ID           int64
	AccountLogin string
	AccountType  string
	// State is active, suspended or deleted.
	State string
	// Repositories lists owner/name of the repositories it covers now.
	Repositories []string
}

func applyInstallChange(ctx context.Context, tx *db.Tx, ch installChange, now time.Time) error {
	if ch.State != "" {
		_, err := tx.Exec(ctx, `
INSERT INTO github_installations (id, account_login, account_id, account_type, selection, state, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO UPDATE SET account_login = excluded.account_login, account_id = excluded.account_id,
    account_type = excluded.account_type, selection = excluded.selection, state = excluded.state,
    updated_at = excluded.updated_at`,
			ch.ID, ch.AccountLogin, ch.AccountID, ch.AccountType, ch.Selection, ch.State, now)
		if err != nil {
			return fmt.Errorf("recording installation %d: %w", ch.ID, err)
		}
		if ch.State == "deleted" {
			if _, err := tx.Exec(ctx, "UPDATE github_repositories SET active = FALSE, updated_at = $2 WHERE installation_id = $1", ch.ID, now); err != nil {
				return fmt.Errorf("removing repositories of installation %d: %w", ch.ID, err)
			}
		}
	} else {
		// installation_repositories: the installation may be new to us.
		_, err := tx.Exec(ctx, `
INSERT INTO github_installations (id, account_login, account_id, account_type, selection, state, updated_at)
VALUES ($1, $2, $3, $4, $5, 'active', $6)
ON CONFLICT (id) DO UPDATE SET selection = excluded.selection, updated_at = excluded.updated_at`,
			ch.ID, ch.AccountLogin, ch.AccountID, ch.AccountType, ch.Selection, now)
		if err != nil {
			return fmt.Errorf("recording installation %d: %w", ch.ID, err)
		}
	}
	for _, list := range []struct {
		repos  []repoInfo
		active bool
	}{{ch.Added, true}, {ch.Removed, false}} {
		for _, r := range list.repos {
			_, err := tx.Exec(ctx, `
INSERT INTO github_repositories (id, installation_id, full_name, private, active, updated_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (id) DO UPDATE SET installation_id = excluded.installation_id, full_name = excluded.full_name,
    private = excluded.private, active = excluded.active, updated_at = excluded.updated_at`,
				r.ID, ch.ID, r.FullName, r.Private, list.active, now)
			if err != nil {
				return fmt.Errorf("recording repository %s of installation %d: %w", r.FullName, ch.ID, err)
			}
		}
	}
	return nil
}

// Installations lists the known installations with their active
// repositories.
func (s *Service) Installations(ctx context.Context) ([]Installation, error) {
	rows, err := s.d.Query(ctx, `
SELECT i.id, i.account_login, i.account_type, i.state, COALESCE(r.full_name, '')
FROM github_installations i LEFT JOIN github_repositories r ON r.installation_id = i.id AND r.active
ORDER BY i.id, r.full_name`)
	if err != nil {
		return nil, fmt.Errorf("listing installations: %w", err)
	}
	defer rows.Close()
	var out []Installation
	for rows.Next() {
		var in Installation
		var repo string
		if err := rows.Scan(&in.ID, &in.AccountLogin, &in.AccountType, &in.State, &repo); err != nil {
			return nil, fmt.Errorf("listing installations: %w", err)
		}
		if n := len(out); n == 0 || out[n-1].ID != in.ID {
			out = append(out, in)
		}
		if repo != "" {
			last := &out[len(out)-1]
			last.Repositories = append(last.Repositories, repo)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing installations: %w", err)
	}
	return out, nil
}

// InstallationFor returns the id of the active installation covering repo
// (owner/name), or 0.
func (s *Service) InstallationFor(ctx context.Context, repo string) (int64, error) {
	return githubapp.InstallationFor(ctx, s.d, repo)
}
