// Package dbtest gives tests real, isolated, migrated databases: a SQLite
// file of their own and a PostgreSQL database of their own, each a copy of a
// template migrated once. Store tests run as one conformance suite on both
// through Each.
//
// PostgreSQL is used when SUPERAGENT_TEST_DATABASE_URL is set. Without it the
// PostgreSQL half is skipped, except under CI=true, where it fails: CI must
// run both. On that server the kit keeps its template between runs, named
// sa_tpl_<migrations fingerprint>, and names the tests' databases sa_t_*.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/migrations"
)

// URLEnv names the environment variable holding the PostgreSQL test URL.
const URLEnv = "SUPERAGENT_TEST_DATABASE_URL"

// Each runs fn twice, as subtests "sqlite" and "postgres", each with a fresh
// migrated database.
func Each(t *testing.T, fn func(t *testing.T, d *db.DB)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, Postgres(t)) })
}

var sqliteTemplate struct {
	once sync.Once
	path string
	err  error
}

// SQLite returns a migrated SQLite database in a file of the test's own,
// a copy of a template migrated once per migrations fingerprint.
func SQLite(t testing.TB) *db.DB {
	t.Helper()
	sqliteTemplate.once.Do(func() {
		sqliteTemplate.path, sqliteTemplate.err = sqliteTemplatePath()
	})
	if sqliteTemplate.err != nil {
		t.Fatalf("preparing SQLite template: %v", sqliteTemplate.err)
	}
	path := filepath.Join(t.TempDir(), "test.db")
	if err := copyFile(sqliteTemplate.path, path); err != nil {
		t.Fatalf("copying SQLite template: %v", err)
	}
	return open(t, "sqlite://"+path, db.Options{})
}

// sqliteTemplatePath returns the migrated template for the current
// migrations, building it when no earlier binary has. The template is kept
// in the temporary directory between runs, one file per fingerprint; it
// appears under its name only once complete, by rename, so binaries
// building it at once each rename a whole file.
func sqliteTemplatePath() (string, error) {
	fingerprint, err := migrations.Fingerprint(db.SQLite)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(os.TempDir(), "superagent-dbtest")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "sqlite-"+fingerprint[:16]+".db")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	build, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(build)
	built := filepath.Join(build, "template.db")
	if err := migrateSQLite(built); err != nil {
		return "", err
	}
	return path, os.Rename(built, path)
}

// SQLiteURL returns the URL of a fresh migrated SQLite file, for tests that
// start processes of their own.
func SQLiteURL(t testing.TB) string {
	t.Helper()
	d := SQLite(t)
	path := ""
	if err := d.QueryRow(context.Background(), "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&path); err != nil {
		t.Fatalf("finding SQLite file: %v", err)
	}
	_ = d.Close()
	return "sqlite://" + path
}

func migrateSQLite(path string) error {
	ctx := context.Background()
	d, err := db.Open(ctx, "sqlite://"+path, db.Options{})
	if err != nil {
		return err
	}
	if err := migrations.Apply(ctx, d, slog.New(slog.DiscardHandler)); err != nil {
		_ = d.Close()
		return err
	}
	// Fold the WAL into the main file so that copying the file copies it all.
	if _, err := d.Exec(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		return err
	}
	return dst.Close()
}

// PostgresURL returns the base test URL, skipping the test when none is set
// (failing it under CI).
func PostgresURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(URLEnv)
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: CI must run the PostgreSQL suite", URLEnv)
		}
		t.Skipf("%s is not set: skipping the PostgreSQL half", URLEnv)
	}
	return url
}

// Postgres returns a migrated PostgreSQL database of the test's own,
// dropped when the test ends. It is a copy of a template migrated once.
func Postgres(t testing.TB) *db.DB {
	t.Helper()
	return open(t, PostgresDatabaseURL(t), db.Options{MaxConns: 8})
}

// PostgresDatabaseURL returns the URL of a migrated PostgreSQL database of
// the test's own, dropped when the test ends, for tests that hand the
// database to a process or open it themselves.
func PostgresDatabaseURL(t testing.TB) string {
	t.Helper()
	return postgresServer(t).newDatabase(t)
}

// PostgresInSchema returns a PostgreSQL database confined to a new schema of
// the shared test database, migrated on the spot. It is slower than
// Postgres: use it for what schemas of one database share, such as NOTIFY
// channels.
func PostgresInSchema(t testing.TB) *db.DB {
	t.Helper()
	schema := NewSchema(t)
	d := open(t, PostgresURL(t), db.Options{SearchPath: schema, MaxConns: 8})
	if err := migrations.Apply(context.Background(), d, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("migrating schema %s: %v", schema, err)
	}
	return d
}

// NewSchema creates an empty PostgreSQL schema, dropped at the end of the
// test, and returns its name.
func NewSchema(t testing.TB) string {
	t.Helper()
	url := PostgresURL(t)
	ctx := context.Background()
	admin, err := db.Open(ctx, url, db.Options{MaxConns: 1})
	if err != nil {
		t.Fatalf("connecting to test PostgreSQL: %v", err)
	}
	schema := "t_" + randomHex(6)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		_ = admin.Close()
		t.Fatalf("creating schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
		_ = admin.Close()
	})
	return schema
}

// SchemaURL returns url with its search_path set to schema, for processes
// that open the database themselves.
func SchemaURL(url, schema string) string {
	sep := "?"
	for _, c := range url {
		if c == '?' {
			sep = "&"
		}
	}
	return fmt.Sprintf("%s%ssearch_path=%s", url, sep, schema)
}

func open(t testing.TB, url string, opts db.Options) *db.DB {
	t.Helper()
	d, err := db.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("opening test database: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
