package dbtest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/migrations"
)

// Migrating a PostgreSQL database takes about a second, creating one from a
// template a fraction of that. So the kit keeps one migrated template per
// migration fingerprint on the server, shared by every test binary that
// wants that schema, and gives each test a database copied from it.
//
// Test binaries run side by side (go test ./... runs packages in parallel,
// and several worktrees may share one server), so the bookkeeping lives in
// PostgreSQL advisory locks held on a connection kept for the binary's life;
// a binary that dies loses its connection and with it its locks:
//
//   - each binary holds an exclusive lock named after its owner id, which
//     prefixes its test databases (sa_t_<owner>_<n>); a database whose
//     owner's lock is free was left by a killed run and is dropped;
//   - each binary holds a shared lock on its template's fingerprint; a
//     template of another fingerprint whose lock can be taken exclusively is
//     used by nobody and is dropped, so old schemas do not pile up;
//   - building a template takes a second, exclusive lock per fingerprint, so
//     binaries starting together build it once.
//
// The current template stays on the server between runs, as a cache: the
// next run starts without migrating.
const (
	templatePrefix = "sa_tpl_"
	databasePrefix = "sa_t_"
)

// maxDropping bounds the drops in flight, each holding a connection.
const maxDropping = 4

// server is the PostgreSQL side of the kit for one test binary. Between
// tests it runs no goroutines (the packages' leak checks would see them):
// its connections are plain pgconn ones, idle or waiting for the answer to
// a DROP DATABASE that nobody reads until the connection is wanted again.
type server struct {
	base     *url.URL
	life     *pgx.Conn // holds this binary's advisory locks until it exits
	owner    string
	template string
	next     atomic.Int64

	mu       sync.Mutex
	idle     []*pgconn.PgConn
	dropping []drop // oldest first
}

// drop is a DROP DATABASE sent on conn whose answer is still unread.
type drop struct {
	name   string
	conn   *pgconn.PgConn
	result *pgconn.MultiResultReader
}

var pg struct {
	once sync.Once
	srv  *server
	err  error
}

// postgresServer prepares the template on first use and returns the server
// every test of this binary shares.
func postgresServer(t testing.TB) *server {
	t.Helper()
	base := PostgresURL(t)
	pg.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pg.srv, pg.err = startServer(ctx, base)
	})
	if pg.err != nil {
		t.Fatalf("preparing the PostgreSQL template: %v", pg.err)
	}
	return pg.srv
}

func startServer(ctx context.Context, rawURL string) (*server, error) {
	base, err := url.Parse(rawURL)
	if err != nil || (base.Scheme != "postgres" && base.Scheme != "postgresql") {
		return nil, fmt.Errorf("%s must be a postgres:// URL", URLEnv)
	}
	fingerprint, err := migrations.Fingerprint(db.Postgres)
	if err != nil {
		return nil, err
	}
	s := &server{base: base, owner: randomHex(6), template: templatePrefix + fingerprint[:16]}
	// The connection outlives every test: the process's exit closes it,
	// which is what releases the locks.
	if s.life, err = pgx.Connect(ctx, rawURL); err != nil {
		return nil, fmt.Errorf("connecting to test PostgreSQL: %w", err)
	}
	err = s.lock(ctx, "pg_advisory_lock", ownerKey(s.owner))
	if err == nil {
		err = s.lock(ctx, "pg_advisory_lock_shared", templateKey(s.template))
	}
	if err == nil {
		err = s.ensureTemplate(ctx)
	}
	if err != nil {
		_ = s.life.Close(ctx)
		return nil, err
	}
	s.sweep(ctx)
	return s, nil
}

// ensureTemplate builds the template unless another binary already has.
// A finished template refuses connections (datallowconn is false): copying a
// database fails while anyone is connected to it, and the flag doubles as
// the mark that migrating completed. A template still accepting connections
// was left half-built by a killed run and is rebuilt.
func (s *server) ensureTemplate(ctx context.Context) error {
	key := buildKey(s.template)
	if err := s.lock(ctx, "pg_advisory_lock", key); err != nil {
		return err
	}
	defer func() { _ = s.lock(context.WithoutCancel(ctx), "pg_advisory_unlock", key) }()

	var allowConn bool
	err := s.life.QueryRow(ctx, "SELECT datallowconn FROM pg_database WHERE datname = $1", s.template).Scan(&allowConn)
	switch {
	case err == nil && !allowConn:
		return nil
	case err == nil:
		if err := s.drop(ctx, s.template); err != nil {
			return err
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("looking for template %s: %w", s.template, err)
	}
	if err := s.exec(ctx, "CREATE DATABASE "+s.template+" TEMPLATE template0"); err != nil {
		return err
	}
	d, err := db.Open(ctx, s.databaseURL(s.template), db.Options{MaxConns: 2})
	if err != nil {
		return err
	}
	err = migrations.Apply(ctx, d, slog.New(slog.DiscardHandler))
	_ = d.Close()
	if err != nil {
		return fmt.Errorf("migrating template %s: %w", s.template, err)
	}
	return s.exec(ctx, "ALTER DATABASE "+s.template+" WITH ALLOW_CONNECTIONS false")
}

// sweep drops the test databases of binaries that are gone and the
// templates nobody uses. It does its best: what it misses, the next binary
// sweeps.
func (s *server) sweep(ctx context.Context) {
	rows, err := s.life.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'sa\_t%' ORDER BY datname`)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dbtest: listing test databases: %v\n", err)
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		fmt.Fprintf(os.Stderr, "dbtest: listing test databases: %v\n", err)
		return
	}
	for _, name := range names {
		owner, _, _ := strings.Cut(strings.TrimPrefix(name, databasePrefix), "_")
		switch {
		case name == s.template:
		case strings.HasPrefix(name, templatePrefix):
			// Hold the lock while dropping, or a binary could start
			// copying the template meanwhile.
			key := templateKey(name)
			if s.tryLock(ctx, key) {
				if err := s.drop(ctx, name); err != nil {
					fmt.Fprintf(os.Stderr, "dbtest: dropping unused template: %v\n", err)
				}
				_ = s.lock(ctx, "pg_advisory_unlock", key)
			}
		case strings.HasPrefix(name, databasePrefix) && owner != s.owner:
			// A dead owner's id is never used again: no need to hold
			// its lock while dropping.
			if key := ownerKey(owner); s.tryLock(ctx, key) {
				_ = s.lock(ctx, "pg_advisory_unlock", key)
				if err := s.dropSoon(name); err != nil {
					fmt.Fprintf(os.Stderr, "dbtest: dropping leftover database: %v\n", err)
				}
			}
		}
	}
}

// tryLock reports whether it took the exclusive lock, which means nobody
// holds it in any mode.
func (s *server) tryLock(ctx context.Context, key int64) bool {
	var ok bool
	err := s.life.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok)
	return err == nil && ok
}

// newDatabase copies the template into a database of the test's own,
// dropped when the test ends, and returns its URL.
func (s *server) newDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("%s%s_%d", databasePrefix, s.owner, s.next.Add(1))
	if err := s.exec(context.Background(), "CREATE DATABASE "+name+" TEMPLATE "+s.template); err != nil {
		t.Fatalf("creating a test database: %v", err)
	}
	t.Cleanup(func() {
		if err := s.dropSoon(name); err != nil {
			t.Errorf("dropping test database: %v", err)
		}
	})
	return s.databaseURL(name)
}

// dropSoon sends the DROP DATABASE and returns without waiting for it:
// dropping waits for a checkpoint, up to a second on a busy server, and the
// next test need not. The server finishes a statement it has received even
// if the binary exits meanwhile, so the last test's database goes too.
func (s *server) dropSoon(name string) error {
	conn, err := s.conn(context.Background())
	if err != nil {
		return err
	}
	result := conn.Exec(context.Background(), dropStatement(name))
	s.mu.Lock()
	s.dropping = append(s.dropping, drop{name: name, conn: conn, result: result})
	s.mu.Unlock()
	return nil
}

// conn returns an idle connection, or a new one while few drops are in
// flight, or else the connection of the oldest drop once it has finished.
// A drop that failed is reported on stderr; its database is swept by a later
// binary.
func (s *server) conn(ctx context.Context) (*pgconn.PgConn, error) {
	s.mu.Lock()
	if n := len(s.idle); n > 0 {
		c := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		return c, nil
	}
	if len(s.dropping) < maxDropping {
		s.mu.Unlock()
		c, err := pgconn.Connect(ctx, s.base.String())
		if err != nil {
			return nil, fmt.Errorf("connecting to test PostgreSQL: %w", err)
		}
		return c, nil
	}
	d := s.dropping[0]
	s.dropping = s.dropping[1:]
	s.mu.Unlock()
	if _, err := d.result.ReadAll(); err != nil {
		fmt.Fprintf(os.Stderr, "dbtest: dropping %s: %v\n", d.name, err)
		_ = d.conn.Close(ctx)
		return s.conn(ctx)
	}
	return d.conn, nil
}

func (s *server) put(c *pgconn.PgConn) {
	s.mu.Lock()
	s.idle = append(s.idle, c)
	s.mu.Unlock()
}

// databaseURL is the base URL pointed at another database.
func (s *server) databaseURL(name string) string {
	u := *s.base
	u.Path = "/" + name
	return u.String()
}

func (s *server) drop(ctx context.Context, name string) error {
	return s.exec(ctx, dropStatement(name))
}

// dropStatement drops a database even while something is connected to it:
// a test may leave a connection behind, and a killed one surely did.
func dropStatement(name string) string {
	return "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"
}

// exec runs a statement on a connection of its own, as CREATE and DROP
// DATABASE need: they refuse to run inside a transaction.
func (s *server) exec(ctx context.Context, stmt string) error {
	c, err := s.conn(ctx)
	if err != nil {
		return err
	}
	if _, err := c.Exec(ctx, stmt).ReadAll(); err != nil {
		_ = c.Close(ctx)
		return fmt.Errorf("%s: %w", stmt, err)
	}
	s.put(c)
	return nil
}

func (s *server) lock(ctx context.Context, fn string, key int64) error {
	if _, err := s.life.Exec(ctx, "SELECT "+fn+"($1)", key); err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	return nil
}

// The advisory lock keys are hashes of names, in a space of their own so
// that they do not meet the application's locks by accident.
func ownerKey(owner string) int64   { return lockKey("owner " + owner) }
func templateKey(name string) int64 { return lockKey("template " + name) }
func buildKey(name string) int64    { return lockKey("build " + name) }

func lockKey(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("superagent dbtest " + name))
	return int64(h.Sum64()) //nolint:gosec // a lock key: wrapping is fine
}
