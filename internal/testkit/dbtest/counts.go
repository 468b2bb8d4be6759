package dbtest

import (
	"context"
	"testing"

	"github.com/superagent-dev/superagent/internal/db"
)

// RowCounts counts the rows of every table of d (River's and goose's
// included), by table name: for tests that something wrote nothing.
func RowCounts(t testing.TB, d *db.DB) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	list := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`
	if d.Dialect() == db.Postgres {
		list = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
	}
	rows, err := d.Query(ctx, list)
	if err != nil {
		t.Fatalf("listing tables: %v", err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatalf("listing tables: %v", err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatalf("listing tables: %v", err)
	}
	out := make(map[string]int64, len(tables))
	for _, name := range tables {
		var n int64
		if err := d.QueryRow(ctx, `SELECT COUNT(*) FROM "`+name+`"`).Scan(&n); err != nil {
			t.Fatalf("counting rows of %s: %v", name, err)
		}
		out[name] = n
	}
	return out
}
