package githubapp

import (
	"context"
	"errors"
	"fmt"

	"github.com/superagent-dev/superagent/internal/db"
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
