package tickets

import (
	"context"
	"fmt"

	"github.com/superagent-dev/superagent/internal/db"
)

// queryAll runs query and scans every row with scan. It returns an empty,
// non-nil slice when nothing matched; errors read "<what>: <cause>".
func queryAll[T any](ctx context.Context, q db.Querier, what string, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
