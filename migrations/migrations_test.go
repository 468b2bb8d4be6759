package migrations_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

// byDesign lists the columns whose types differ between the dialects on
// purpose, as "sqlite class / postgres class". All are River's and goose's:
// each of their drivers keeps its own schema, JSON and arrays in BLOBs on
// SQLite. A column of ours never belongs here.
var byDesign = map[string]string{
	"goose_db_version.is_applied": "integer / boolean",
	"river_job.args":              "bytes / json",
	"river_job.attempted_by":      "bytes / array",
	"river_job.errors":            "bytes / array",
	"river_job.metadata":          "bytes / json",
	"river_job.state":             "text / enum",
	"river_job.tags":              "bytes / array",
	"river_job.unique_states":     "integer / bits",
	"river_queue.metadata":        "bytes / json",
}

// The two dialects' migrations build the same tables with the same columns,
// of the same kind of type, River's and goose's included.
func TestSchemasMatch(t *testing.T) {
	t.Parallel()
	sqlite := sqliteColumns(t, dbtest.SQLite(t))
	postgres := postgresColumns(t, dbtest.Postgres(t))
	if diff := schemaDiff(sqlite, postgres); len(diff) > 0 {
		require.Fail(t, "the SQLite and PostgreSQL schemas differ", "\n"+strings.Join(diff, "\n"))
	}
}

// columns maps each table to its columns' type classes by name.
type columns map[string]map[string]string

func (c columns) add(table, column, class string) {
	if c[table] == nil {
		c[table] = map[string]string{}
	}
	if column != "" {
		c[table][column] = class
	}
}

// schemaDiff lists, one line each, what one schema has and the other has
// not, and the columns whose types are of different classes.
func schemaDiff(sqlite, postgres columns) []string {
	var out []string
	for _, table := range slices.Sorted(maps.Keys(union(sqlite, postgres))) {
		s, inS := sqlite[table]
		p, inP := postgres[table]
		switch {
		case !inP:
			out = append(out, "table "+table+": only in SQLite")
			continue
		case !inS:
			out = append(out, "table "+table+": only in PostgreSQL")
			continue
		}
		for _, column := range slices.Sorted(maps.Keys(union(s, p))) {
			name := table + "." + column
			sc, inS := s[column]
			pc, inP := p[column]
			switch {
			case !inP:
				out = append(out, "column "+name+": only in SQLite")
			case !inS:
				out = append(out, "column "+name+": only in PostgreSQL")
			case sc != pc && byDesign[name] != sc+" / "+pc:
				out = append(out, fmt.Sprintf("column %s: %s on SQLite, %s on PostgreSQL", name, sc, pc))
			}
		}
	}
	return out
}

func union[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func sqliteColumns(t *testing.T, d *db.DB) columns {
	t.Helper()
	// sqlite_sequence and the like are SQLite's own, created on demand.
	return readColumns(t, d, `
SELECT m.name, COALESCE(c.name, ''), COALESCE(c.type, ''), ''
FROM sqlite_master m LEFT JOIN pragma_table_info(m.name) c
WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\'`,
		func(typ, _ string) string { return sqliteClass(typ) })
}

func postgresColumns(t *testing.T, d *db.DB) columns {
	t.Helper()
	return readColumns(t, d, `
SELECT t.table_name, COALESCE(c.column_name, ''), COALESCE(c.data_type, ''), COALESCE(c.udt_name, '')
FROM information_schema.tables t
LEFT JOIN information_schema.columns c ON c.table_schema = t.table_schema AND c.table_name = t.table_name
WHERE t.table_schema = current_schema()`, postgresClass)
}

// readColumns runs a query returning table, column and two words on the
// column's type, which class sorts.
func readColumns(t *testing.T, d *db.DB, query string, class func(typ, detail string) string) columns {
	t.Helper()
	rows, err := d.Query(context.Background(), query)
	require.NoError(t, err)
	defer rows.Close()
	out := columns{}
	for rows.Next() {
		var table, column, typ, detail string
		require.NoError(t, rows.Scan(&table, &column, &typ, &detail))
		out.add(table, column, class(typ, detail))
	}
	require.NoError(t, rows.Err())
	return out
}

// sqliteClass sorts a declared SQLite type into a coarse class, after the
// names the migrations use rather than SQLite's affinity rules: those would
// call BOOLEAN and TIMESTAMP numeric.
func sqliteClass(typ string) string {
	typ = strings.ToUpper(typ)
	switch {
	case typ == "BOOLEAN" || typ == "BOOL":
		return "boolean"
	case strings.HasPrefix(typ, "TIMESTAMP") || typ == "DATETIME" || typ == "DATE":
		return "timestamp"
	case strings.HasPrefix(typ, "JSON"):
		return "json"
	case strings.Contains(typ, "INT"):
		return "integer"
	case strings.Contains(typ, "CHAR") || strings.Contains(typ, "TEXT") || strings.Contains(typ, "CLOB"):
		return "text"
	case typ == "BLOB":
		return "bytes"
	case typ == "REAL" || strings.HasPrefix(typ, "DOUBLE") || typ == "FLOAT":
		return "real"
	}
	return "sqlite " + typ
}

func postgresClass(dataType, udt string) string {
	switch dataType {
	case "ARRAY":
		return "array"
	case "USER-DEFINED":
		return "enum"
	}
	switch udt {
	case "bool":
		return "boolean"
	case "timestamptz", "timestamp", "date":
		return "timestamp"
	case "json", "jsonb":
		return "json"
	case "int2", "int4", "int8":
		return "integer"
	case "text", "varchar", "bpchar":
		return "text"
	case "bytea":
		return "bytes"
	case "float4", "float8", "numeric":
		return "real"
	case "bit", "varbit":
		return "bits"
	}
	return "postgres " + udt
}
