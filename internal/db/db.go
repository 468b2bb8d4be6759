// Package db opens superagent's database, SQLite (the embedded default) or
// PostgreSQL, behind one small query interface so that every store writes its
// SQL once with $N placeholders and runs unchanged on both.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Dialect names the database family a DB talks to.
type Dialect string

// The two dialects superagent supports.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// ErrNoRows is returned by Row.Scan when a query matched nothing, on either
// database.
var ErrNoRows = errors.New("no rows in result set")

// Querier runs statements. Both *DB and *Tx implement it, so store methods
// take a Querier and work inside or outside a transaction.
type Querier interface {
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Rows iterates over a query's result.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is the result of QueryRow; Scan returns ErrNoRows when nothing matched.
type Row interface {
	Scan(dest ...any) error
}

// DB is an open database. Exactly one of its two handles is set, by dialect.
type DB struct {
	dialect Dialect
	sqlite  *sql.DB
	pool    *pgxpool.Pool
	// SQL is a database/sql view of the same database, for libraries that
	// want one (goose, River's SQLite driver). On SQLite it is the only handle.
	SQL *sql.DB

	checkpointer *checkpointer
	// statements counts what was sent to the database (Statements).
	statements *atomic.Int64
}

// Statements is how many statements (queries and commands, River's among
// them; not BEGIN or COMMIT) this handle has sent since it was opened: what
// a change that saves round trips is measured by, independent of how busy
// the machine is. On PostgreSQL, a pipelined batch counts once, BEGIN or
// COMMIT among its statements included (see lazyTx and Tx.ExecLater).
func (d *DB) Statements() int64 { return d.statements.Load() }

// countStatements is pgx's query tracer that feeds DB.Statements.
type countStatements struct{ n *atomic.Int64 }

// TraceBatchStart counts a batch once: it is one round trip.
func (c countStatements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (countStatements) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (countStatements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (c countStatements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	// pgx sends a transaction's BEGIN, COMMIT and ROLLBACK as queries;
	// database/sql's driver does not, and neither counts them.
	if !strings.HasPrefix(data.SQL, "begin") && data.SQL != "commit" && data.SQL != "rollback" {
		c.n.Add(1)
	}
	return ctx
}

func (countStatements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

var (
	_ Querier = (*DB)(nil)
	_ Querier = (*Tx)(nil)
)

// Options tune Open. The zero value is the documented default.
type Options struct {
	// MaxConns caps PostgreSQL connections. Default: the URL's
	// pool_max_conns, else 10. SQLite always uses one
	// connection: River's SQLite driver requires it and SQLite has one writer.
	MaxConns int32
	// SearchPath, when set, becomes the PostgreSQL search_path of every
	// connection (tests use one schema each).
	SearchPath string
}

// DefaultURL is the database used when none is configured: a SQLite file in
// the data directory.
func DefaultURL(dataDir string) string {
	return "sqlite://" + filepath.Join(dataDir, "superagent.db")
}

// Open connects to the database named by rawURL: postgres:// or postgresql://
// selects PostgreSQL, sqlite:// (or a bare file path) selects SQLite.
func Open(ctx context.Context, rawURL string, opts Options) (*DB, error) {
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		return openPostgres(ctx, rawURL, opts, nil)
	case strings.HasPrefix(rawURL, "sqlite://"), strings.HasPrefix(rawURL, "file:"), !strings.Contains(rawURL, "://"):
		return openSQLite(ctx, rawURL)
	default:
		return nil, fmt.Errorf("unsupported database URL scheme in %q: use postgres:// or sqlite://", redactURL(rawURL))
	}
}

// openPostgres opens the pool; tweak, when not nil, adjusts its
// configuration last (tests).
func openPostgres(ctx context.Context, rawURL string, opts Options, tweak func(*pgxpool.Config)) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parsing PostgreSQL URL: %w", err)
	}
	// The URL's own pool_max_conns (pgx's parameter) wins over the
	// default; a caller's MaxConns over both.
	if u, err := url.Parse(rawURL); err != nil || !u.Query().Has("pool_max_conns") {
		cfg.MaxConns = 10
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.SearchPath != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opts.SearchPath
	}
	sent := new(atomic.Int64)
	cfg.ConnConfig.Tracer = countStatements{sent}
	if tweak != nil {
		tweak(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w", redactURL(rawURL), err)
	}
	return &DB{dialect: Postgres, pool: pool, SQL: stdlib.OpenDBFromPool(pool), statements: sent}, nil
}

// sqliteDSN turns sqlite:///path, sqlite://path or a bare path into a
// modernc DSN with the settings River and concurrent readers need.
func sqliteDSN(rawURL string) (path, dsn string, err error) {
	path = strings.TrimPrefix(strings.TrimPrefix(rawURL, "sqlite://"), "file:")
	var query url.Values
	if p, options, ok := strings.Cut(path, "?"); ok {
		if query, err = url.ParseQuery(options); err != nil {
			return "", "", fmt.Errorf("parsing SQLite URL options: %w", err)
		}
		path = p
	}
	if path == "" {
		return "", "", errors.New("SQLite URL names no file")
	}
	if query == nil {
		query = url.Values{}
	}
	// Immediate transactions take the write lock at BEGIN, so two writers
	// queue on busy_timeout instead of failing with SQLITE_BUSY on upgrade.
	query.Set("_txlock", "immediate")
	query.Set("_time_format", "sqlite")
	// Checkpoints run on a connection of their own (see checkpointer), not
	// inside whichever write happens to cross the WAL threshold: that write
	// would wait for megabytes to be copied, and everything queued behind it.
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(ON)", "wal_autocheckpoint(0)"} {
		query.Add("_pragma", p)
	}
	return path, "file:" + path + "?" + query.Encode(), nil
}

func openSQLite(ctx context.Context, rawURL string) (*DB, error) {
	path, dsn, err := sqliteDSN(rawURL)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating directory for SQLite database %s: %w", path, err)
	}
	// The database holds conversations and tokens' metadata: keep it private.
	if f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600); err == nil {
		_ = f.Close()
	}
	sent := new(atomic.Int64)
	connector, err := newCachingConnector(dsn, stmtCacheSize, sent)
	if err != nil {
		return nil, fmt.Errorf("opening SQLite database %s: %w", path, err)
	}
	// One connection: SQLite has one writer, and River's SQLite driver
	// asks for one.
	sqlDB := sql.OpenDB(connector)
	sqlDB.SetMaxOpenConns(1)
	sqlDB.SetMaxIdleConns(1)
	sqlDB.SetConnMaxIdleTime(0)
	sqlDB.SetConnMaxLifetime(0)
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("opening SQLite database %s: %w", path, err)
	}
	cp, err := startCheckpointer(dsn, path)
	if err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	return &DB{dialect: SQLite, sqlite: sqlDB, SQL: sqlDB, checkpointer: cp, statements: sent}, nil
}

// Dialect reports which database family this is.
func (d *DB) Dialect() Dialect { return d.dialect }

// Pool is the pgx pool on PostgreSQL and nil on SQLite.
func (d *DB) Pool() *pgxpool.Pool { return d.pool }

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error {
	if d.pool != nil {
		return d.pool.Ping(ctx)
	}
	return d.sqlite.PingContext(ctx)
}

// Close releases every connection.
func (d *DB) Close() error {
	if d.pool != nil {
		err := d.SQL.Close()
		d.pool.Close()
		return err
	}
	// The service's connection first: a transaction still open keeps it
	// until it ends, and the last checkpoint then waits for that end.
	err := d.sqlite.Close()
	d.checkpointer.stop()
	return err
}

// Exec runs a statement and returns the number of rows it affected.
func (d *DB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if d.pool != nil {
		return pgExec(ctx, d.pool, query, args)
	}
	return sqlExec(ctx, d.sqlite, query, args)
}

// Query runs a query returning rows.
func (d *DB) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	if d.pool != nil {
		return pgQuery(ctx, d.pool, query, args)
	}
	return sqlQuery(ctx, d.sqlite, query, args)
}

// QueryRow runs a query expected to return at most one row.
func (d *DB) QueryRow(ctx context.Context, query string, args ...any) Row {
	if d.pool != nil {
		return pgRow{d.pool.QueryRow(ctx, query, args...)}
	}
	return sqlRow{d.sqlite.QueryRowContext(ctx, query, args...)}
}

// Tx is a transaction on either database. Native exposes the driver's own
// transaction for River's InsertTx.
type Tx struct {
	pg  *lazyTx
	sql *sql.Tx
	// after runs once the transaction has committed.
	after []func()
	// memo holds what the transaction remembered (see Remember).
	memo map[any]any
	// queued are the reads ahead waiting for the next statement, read
	// what they returned (see ReadAhead).
	queued []aheadRead
	read   map[any]aheadResult
}

// Remember keeps v under key until the transaction ends: what every card
// of a batch would otherwise read or write again in the same transaction
// (their Thread, the turn they schedule) is done once and recalled. Keys
// are compared as map keys; use a type of the caller's own, as with
// context values.
func (t *Tx) Remember(key, v any) {
	if t.memo == nil {
		t.memo = map[any]any{}
	}
	t.memo[key] = v
}

// Recall returns what was remembered under key in this transaction.
func (t *Tx) Recall(key any) (any, bool) {
	v, ok := t.memo[key]
	return v, ok
}

// Forget drops what was remembered under key, when the transaction has
// just changed what it stood for.
func (t *Tx) Forget(key any) { delete(t.memo, key) }

// Once runs fn the first time it is called with key in the transaction
// and does nothing on later calls; a call that fails is not remembered.
// Without a transaction (nil) fn always runs.
func (t *Tx) Once(key any, fn func() error) error {
	if t == nil {
		return fn()
	}
	if _, ok := t.Recall(key); ok {
		return nil
	}
	if err := fn(); err != nil {
		return err
	}
	t.Remember(key, struct{}{})
	return nil
}

// AfterCommit has fn run once the transaction commits, and never if it
// rolls back: for what must only be said of work that is stored, such as
// a lifecycle log line.
func (t *Tx) AfterCommit(fn func()) { t.after = append(t.after, fn) }

// Begin starts a transaction.
func (d *DB) Begin(ctx context.Context) (*Tx, error) {
	if d.pool != nil {
		// BEGIN travels with the first statement (see lazyTx).
		tx, err := beginLazy(ctx, d.pool)
		if err != nil {
			return nil, fmt.Errorf("beginning transaction: %w", err)
		}
		return &Tx{pg: tx}, nil
	}
	tx, err := d.sqlite.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("beginning transaction: %w", err)
	}
	return &Tx{sql: tx}, nil
}

// InTx runs fn in a transaction, committing when it returns nil and rolling
// back otherwise (and on panic).
func (d *DB) InTx(ctx context.Context, fn func(tx *Tx) error) (err error) {
	tx, err := d.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// PgxTx is the underlying pgx transaction (nil on SQLite).
func (t *Tx) PgxTx() pgx.Tx {
	if t.pg == nil {
		return nil
	}
	return t.pg
}

// SQLTx is the underlying database/sql transaction (nil on PostgreSQL).
func (t *Tx) SQLTx() *sql.Tx { return t.sql }

// Commit commits the transaction.
func (t *Tx) Commit(ctx context.Context) error {
	var err error
	if t.pg != nil {
		// Writes queued go with the COMMIT; reads nobody asked for are
		// not worth a round trip.
		err = t.commitQueued(ctx)
	} else {
		err = t.sql.Commit()
	}
	if err != nil {
		return fmt.Errorf("committing transaction: %w", err)
	}
	after := t.after
	t.after = nil
	for _, fn := range after {
		fn()
	}
	return nil
}

// Rollback abandons the transaction; it is a no-op after Commit.
func (t *Tx) Rollback(ctx context.Context) error {
	t.queued, t.read = nil, nil
	if t.pg != nil {
		if err := t.pg.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			return err
		}
		return nil
	}
	if err := t.sql.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

// Exec runs a statement inside the transaction.
func (t *Tx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if len(t.queued) > 0 {
		return t.execAhead(ctx, query, args)
	}
	if t.pg != nil {
		return pgExec(ctx, t.pg, query, args)
	}
	return sqlExec(ctx, t.sql, query, args)
}

// Query runs a query inside the transaction.
func (t *Tx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	if len(t.queued) > 0 {
		return t.queryAhead(ctx, query, args)
	}
	if t.pg != nil {
		return pgQuery(ctx, t.pg, query, args)
	}
	return sqlQuery(ctx, t.sql, query, args)
}

// QueryRow runs a single-row query inside the transaction.
func (t *Tx) QueryRow(ctx context.Context, query string, args ...any) Row {
	if len(t.queued) > 0 {
		return t.queryRowAhead(ctx, query, args)
	}
	if t.pg != nil {
		return pgRow{t.pg.QueryRow(ctx, query, args...)}
	}
	return sqlRow{t.sql.QueryRowContext(ctx, query, args...)}
}

// IsUniqueViolation reports whether err is a unique or primary-key
// constraint failure on either database.
func IsUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}
