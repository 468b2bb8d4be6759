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

func openTargets(ctx context.Context) ([]target, error) {
	dir, err := os.MkdirTemp("", "superagent-bench-")
	if err != nil {
		return nil, err
	}
	lite, err := openMigrated(ctx, "sqlite://"+filepath.Join(dir, "bench.db"), db.Options{})
	if err != nil {
		return nil, err
	}
	targets := []target{{name: "SQLite", db: lite, servedGoal: 80, close: func() { _ = lite.Close(); _ = os.RemoveAll(dir) }}}

	url := os.Getenv("SUPERAGENT_TEST_DATABASE_URL")
	if url == "" {
		fmt.Println("(SUPERAGENT_TEST_DATABASE_URL is not set: PostgreSQL skipped)")
		return targets, nil
	}
	admin, err := db.Open(ctx, url, db.Options{MaxConns: 1})
	if err != nil {
		return nil, err
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "bench_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, err
	}
	pg, err := openMigrated(ctx, url, db.Options{SearchPath: schema, MaxConns: 16})
	if err != nil {
		return nil, err
	}
	return append(targets, target{name: "PostgreSQL", db: pg, servedGoal: 60, close: func() {
		_ = pg.Close()
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		_ = admin.Close()
	}}), nil
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
