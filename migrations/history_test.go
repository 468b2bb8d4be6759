package migrations_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/migrations"
)

// Migration 9 records, for the revisions saved before it, the built-in
// texts it can know they were saved with, and marks the rest not recorded.
func TestHistoryBackfill(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		require.NoError(t, migrations.ApplyTo(ctx, d, 8))
		t0 := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
		at := t0.Add
		text := func(sha, key string, when time.Time) {
			_, err := d.Exec(ctx, `INSERT INTO prompt_default_texts (sha256, key, text, created_at) VALUES ($1, $2, $3, $4)`,
				sha, key, "text "+sha, when)
			require.NoError(t, err)
		}
		version := func(rev int64, when time.Time) {
			_, err := d.Exec(ctx, `INSERT INTO prompt_versions (revision, predecessor, created_at, origin, actor, note, request, config)
				VALUES ($1, $2, $3, 'panel', 'ada', '', '', '{}')`, rev, rev-1, when)
			require.NoError(t, err)
		}
		// Revision 1 was saved before any release stored its texts (it
		// cannot happen, but must not be guessed at).
		version(1, at(-time.Hour))
		// The first release: work a1, replies r1.
		text("a1", "runtime/work", at(0))
		text("r1", "runtime/replies", at(0))
		version(2, at(time.Minute+500*time.Millisecond))
		// The next release changed work and added a part; replies was stored
		// already.
		text("a2", "runtime/work", at(time.Hour))
		text("c1", "runtime/coding", at(time.Hour))
		version(3, at(2*time.Hour))

		require.NoError(t, migrations.ApplyTo(ctx, d, 9))
		sets := map[int64]map[string]*string{}
		rows, err := d.Query(ctx, `SELECT v.revision, s.parts FROM prompt_versions v JOIN prompt_builtin_sets s ON s.id = v.builtin_set`)
		require.NoError(t, err)
		for rows.Next() {
			var (
				rev   int64
				parts string
			)
			require.NoError(t, rows.Scan(&rev, &parts))
			var m map[string]*string
			require.NoError(t, json.Unmarshal([]byte(parts), &m), parts)
			sets[rev] = m
		}
		require.NoError(t, rows.Err())
		rows.Close()
		s := func(v string) *string { return &v }
		require.Equal(t, map[int64]map[string]*string{
			2: {"runtime/work": s("a1"), "runtime/replies": s("r1")},
			// Two texts of work were stored by then: which one the save
			// saw is not known.
			3: {"runtime/work": nil, "runtime/replies": s("r1"), "runtime/coding": s("c1")},
		}, sets)
		var unrecorded int
		require.NoError(t, d.QueryRow(ctx, `SELECT COUNT(*) FROM prompt_versions WHERE builtin_set IS NULL`).Scan(&unrecorded))
		require.Equal(t, 1, unrecorded, "revision 1 is marked not recorded")
		require.NoError(t, migrations.Apply(ctx, d, slog.New(slog.DiscardHandler)))
	}
	eachUnmigrated(t, run)
}

// eachUnmigrated runs fn on an empty SQLite database and an empty
// PostgreSQL schema, for tests that migrate step by step.
func eachUnmigrated(t *testing.T, fn func(t *testing.T, d *db.DB)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		d, err := db.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "old.db"), db.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		fn(t, d)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		schema := dbtest.NewSchema(t)
		d, err := db.Open(context.Background(), dbtest.PostgresURL(t), db.Options{SearchPath: schema, MaxConns: 4})
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		fn(t, d)
	})
}
