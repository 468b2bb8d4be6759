package githubapp

import (
	"context"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
)

// Repository is an installed repository as the webhooks reported it.
// DefaultBranch and Description are empty until an event about the
// repository carried them (installation events do not).
type Repository struct {
	FullName      string `json:"name"`
	DefaultBranch string `json:"default_branch,omitempty"`
	Description   string `json:"description,omitempty"`
	Private       bool   `json:"private,omitempty"`
}

// Repositories lists up to limit repositories covered by an active
// installation, by name, whose name or description contains search (any
// case; empty matches all), and reports whether more matched.
func Repositories(ctx context.Context, q db.Querier, search string, limit int) ([]Repository, bool, error) {
	pattern := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(strings.ToLower(search)) + "%"
	rows, err := q.Query(ctx, `
SELECT r.full_name, r.default_branch, r.description, r.private
FROM github_repositories r JOIN github_installations i ON i.id = r.installation_id
WHERE r.active AND i.state = 'active'
  AND (LOWER(r.full_name) LIKE $1 ESCAPE '\' OR LOWER(r.description) LIKE $1 ESCAPE '\')
ORDER BY LOWER(r.full_name) LIMIT $2`, pattern, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("listing repositories: %w", err)
	}
	defer rows.Close()
	var out []Repository
	for rows.Next() {
		var r Repository
		if err := rows.Scan(&r.FullName, &r.DefaultBranch, &r.Description, &r.Private); err != nil {
			return nil, false, fmt.Errorf("listing repositories: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("listing repositories: %w", err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// RecordRepository keeps the default branch and description an event's
// payload carried for repository id; it changes nothing when they are
// already known, or when the repository is not an installed one.
func RecordRepository(ctx context.Context, q db.Querier, id int64, defaultBranch, description string) error {
	_, err := q.Exec(ctx, `
UPDATE github_repositories SET default_branch = $2, description = $3
WHERE id = $1 AND (default_branch <> $2 OR description <> $3)`, id, defaultBranch, description)
	if err != nil {
		return fmt.Errorf("recording repository %d: %w", id, err)
	}
	return nil
}
