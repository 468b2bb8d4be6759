package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/migrations"
)

// target is one migrated database to measure on.
type target struct {
	name string
	db   *db.DB
	// servedGoal is issue 22's goal for the whole service's rate, in
	// percent of River's insert.
	servedGoal int
	close      func()
}

// openTargets opens SQLite and, when SUPERAGENT_TEST_DATABASE_URL is
// set, PostgreSQL; only, when not empty, keeps the one it names.
func openTargets(ctx context.Context, only string) ([]target, error) {
	switch only {
	case "", "sqlite", "postgresql":
	default:
		return nil, fmt.Errorf("-db %q: want sqlite or postgresql", only)
	}
	var targets []target
	if only != "postgresql" {
		t, err := openSQLite(ctx)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	}
	if only == "sqlite" {
		return targets, nil
	}
	url := os.Getenv("SUPERAGENT_TEST_DATABASE_URL")
	if url == "" {
		if only != "" {
			return nil, fmt.Errorf("-db postgresql needs SUPERAGENT_TEST_DATABASE_URL")
		}
		fmt.Println("(SUPERAGENT_TEST_DATABASE_URL is not set: PostgreSQL skipped)")
		return targets, nil
	}
	t, err := openPostgreSQL(ctx, url)
	if err != nil {
		for _, t := range targets {
			t.close()
		}
		return nil, err
	}
	return append(targets, t), nil
}

func openSQLite(ctx context.Context) (target, error) {
	dir, err := os.MkdirTemp("", "superagent-bench-")
	if err != nil {
		return target{}, err
	}
	lite, err := openMigrated(ctx, "sqlite://"+filepath.Join(dir, "bench.db"), db.Options{})
	if err != nil {
		_ = os.RemoveAll(dir)
		return target{}, err
	}
	return target{name: "SQLite", db: lite, servedGoal: 80, close: func() { _ = lite.Close(); _ = os.RemoveAll(dir) }}, nil
}

// openPostgreSQL migrates a schema of its own, dropped by close.
func openPostgreSQL(ctx context.Context, url string) (target, error) {
	admin, err := db.Open(ctx, url, db.Options{MaxConns: 1})
	if err != nil {
		return target{}, err
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "bench_" + hex.EncodeToString(b)
	drop := func() {
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		_ = admin.Close()
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		_ = admin.Close()
		return target{}, err
	}
	pg, err := openMigrated(ctx, url, db.Options{SearchPath: schema, MaxConns: 16})
	if err != nil {
		drop()
		return target{}, err
	}
	return target{name: "PostgreSQL", db: pg, servedGoal: 60, close: func() { _ = pg.Close(); drop() }}, nil
}

func openMigrated(ctx context.Context, url string, opts db.Options) (*db.DB, error) {
	d, err := db.Open(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	if err := migrations.Apply(ctx, d, slog.New(slog.DiscardHandler)); err != nil {
		_ = d.Close()
		return nil, err
	}
	return d, nil
}
