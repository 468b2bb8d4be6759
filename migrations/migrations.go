// Package migrations holds superagent's schema, one folder per dialect, and
// applies it: River's own migrations first, then the application's through
// goose over an embedded file system. Their version tables do not clash.
package migrations

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/superagent-dev/superagent/internal/db"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// Apply brings the database to the newest schema. It is safe to call on an
// up-to-date database. Two processes migrating one SQLite file at once race:
// migrate once (superagent migrate, or the first serve) before starting more.
func Apply(ctx context.Context, d *db.DB, logger *slog.Logger) error {
	if err := migrateRiver(ctx, d, logger); err != nil {
		return err
	}
	provider, err := newProvider(d)
	if err != nil {
		return err
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return fmt.Errorf("applying application migrations: %w", err)
	}
	for _, r := range results {
		logger.Info("applied migration", "version", r.Source.Version, "path", r.Source.Path, "duration", r.Duration)
	}
	return nil
}

// applyTo is Apply up to the application's migration version, for tests
// of what a migration does to data already stored.
func applyTo(ctx context.Context, d *db.DB, version int64) error {
	if err := migrateRiver(ctx, d, slog.New(slog.DiscardHandler)); err != nil {
		return err
	}
	provider, err := newProvider(d)
	if err != nil {
		return err
	}
	if _, err := provider.UpTo(ctx, version); err != nil {
		return fmt.Errorf("applying application migrations up to %d: %w", version, err)
	}
	return nil
}

// Pending reports whether any migration, River's or the application's, has
// not been applied yet.
func Pending(ctx context.Context, d *db.DB) (bool, error) {
	riverPending, err := riverPending(ctx, d)
	if err != nil || riverPending {
		return riverPending, err
	}
	provider, err := newProvider(d)
	if err != nil {
		return false, err
	}
	pending, err := provider.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("checking application migrations: %w", err)
	}
	return pending, nil
}

// Fingerprint is a digest of every migration Apply runs on the dialect,
// River's and the application's, in order. Databases migrated under one
// fingerprint have one schema, so a copy of a migrated database can stand in
// for migrating afresh (the test kit keeps such a copy).
func Fingerprint(dialect db.Dialect) (string, error) {
	h := sha256.New()
	cfg := &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)}
	var river []rivermigrate.Migration
	dir := "sqlite"
	if dialect == db.Postgres {
		m, err := rivermigrate.New(riverpgxv5.New(nil), cfg)
		if err != nil {
			return "", fmt.Errorf("listing River migrations: %w", err)
		}
		river, dir = m.AllVersions(), "postgres"
	} else {
		m, err := rivermigrate.New(riversqlite.New(nil), cfg)
		if err != nil {
			return "", fmt.Errorf("listing River migrations: %w", err)
		}
		river = m.AllVersions()
	}
	for _, m := range river {
		fmt.Fprintf(h, "river %d %s %d\n%s", m.Version, m.Name, len(m.SQLUp), m.SQLUp)
	}
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		return "", fmt.Errorf("listing embedded %s migrations: %w", dir, err)
	}
	for _, e := range entries {
		body, err := fs.ReadFile(files, dir+"/"+e.Name())
		if err != nil {
			return "", fmt.Errorf("reading embedded migration %s: %w", e.Name(), err)
		}
		fmt.Fprintf(h, "goose %s %d\n%s", e.Name(), len(body), body)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func newProvider(d *db.DB) (*goose.Provider, error) {
	dialect, dir := goose.DialectSQLite3, "sqlite"
	if d.Dialect() == db.Postgres {
		dialect, dir = goose.DialectPostgres, "postgres"
	}
	sub, err := fs.Sub(files, dir)
	if err != nil {
		return nil, fmt.Errorf("opening embedded %s migrations: %w", dir, err)
	}
	provider, err := goose.NewProvider(dialect, d.SQL, sub)
	if err != nil {
		return nil, fmt.Errorf("preparing %s migrations: %w", dir, err)
	}
	return provider, nil
}

func migrateRiver(ctx context.Context, d *db.DB, logger *slog.Logger) error {
	if _, err := riverMigrate(ctx, d, logger, nil); err != nil {
		return fmt.Errorf("applying River migrations: %w", err)
	}
	return nil
}

func riverPending(ctx context.Context, d *db.DB) (bool, error) {
	res, err := riverMigrate(ctx, d, slog.New(slog.DiscardHandler), &rivermigrate.MigrateOpts{DryRun: true})
	if err != nil {
		return false, fmt.Errorf("checking River migrations: %w", err)
	}
	return len(res.Versions) > 0, nil
}

// riverMigrate runs River's migrator up on whichever driver the database uses.
func riverMigrate(ctx context.Context, d *db.DB, logger *slog.Logger, opts *rivermigrate.MigrateOpts) (*rivermigrate.MigrateResult, error) {
	cfg := &rivermigrate.Config{Logger: logger}
	if d.Dialect() == db.Postgres {
		m, err := rivermigrate.New(riverpgxv5.New(d.Pool()), cfg)
		if err != nil {
			return nil, err
		}
		return m.Migrate(ctx, rivermigrate.DirectionUp, opts)
	}
	m, err := rivermigrate.New(riversqlite.New(d.SQL), cfg)
	if err != nil {
		return nil, err
	}
	return m.Migrate(ctx, rivermigrate.DirectionUp, opts)
}
