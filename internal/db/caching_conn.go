package db

import (
	"container/list"
	"context"
	"database/sql/driver"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite"
)

// stmtCacheSize bounds the statements each SQLite connection keeps prepared.
// The service and River run a few dozen distinct texts; the rest of the room
// is for texts built at run time (IN lists, batch inserts) that come and go.
const stmtCacheSize = 256

// modernc.org/sqlite prepares a fresh statement for every QueryContext and
// ExecContext on a connection and finalizes it afterwards, so every query
// pays for SQLite's parser and planner: about a third of the CPU under load.
// cachingConn keeps the statements prepared instead, below database/sql, so
// that River, which shares the *sql.DB, benefits as well as our own stores.

// sqliteConn is what cachingConn needs of the connection it wraps: every
// optional interface modernc's connection implements and database/sql uses.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// sqliteStmt is a prepared statement run with a context.
type sqliteStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

var (
	_ driver.Connector = cachingConnector{}
	_ sqliteConn       = (*cachingConn)(nil)

	_ driver.Rows                           = (*cachedRows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*cachedRows)(nil)
	_ driver.RowsColumnTypeLength           = (*cachedRows)(nil)
	_ driver.RowsColumnTypeNullable         = (*cachedRows)(nil)
	_ driver.RowsColumnTypePrecisionScale   = (*cachedRows)(nil)
	_ driver.RowsColumnTypeScanType         = (*cachedRows)(nil)
)

// cachingConnector opens modernc connections wrapped in a statement cache of
// size entries.
type cachingConnector struct {
	inner driver.Connector
	size  int
	// sent counts the statements run on its connections (DB.Statements).
	sent *atomic.Int64
}

func newCachingConnector(dsn string, size int, sent *atomic.Int64) (cachingConnector, error) {
	inner, err := sqlite.NewConnector(dsn)
	if err != nil {
		return cachingConnector{}, fmt.Errorf("parsing SQLite DSN: %w", err)
	}
	return cachingConnector{inner: inner, size: size, sent: sent}, nil
}

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(sqliteConn)
	if !ok {
		// Only a modernc upgrade that drops an interface can get here.
		_ = conn.Close()
		return nil, fmt.Errorf("SQLite connection %T lacks the interfaces the statement cache forwards", conn)
	}
	return &cachingConn{inner: inner, size: c.size, sent: c.sent, byQuery: map[string]*list.Element{}, lru: list.New()}, nil
}

// Driver is modernc's, so sql.DB.Driver reports the same as with sql.Open.
func (c cachingConnector) Driver() driver.Driver { return c.inner.Driver() }

// cachingConn is a SQLite connection that keeps up to size statements
// prepared, by SQL text, least recently used first out.
//
// A cached statement has one cursor. While the Rows of a query on it are
// open the statement is busy, and another query of the same text (a caller
// iterating a result may query again) runs on a statement of its own, as it
// would without the cache. A busy statement pushed out of the cache is
// finalized when its Rows close.
//
// database/sql never uses a connection from two goroutines at once, Rows'
// Close included; the mutex costs nothing uncontended and keeps the cache
// sound should that ever change.
type cachingConn struct {
	inner sqliteConn
	size  int
	sent  *atomic.Int64

	mu      sync.Mutex
	byQuery map[string]*list.Element // of *cachedStmt
	lru     *list.List               // most recently used at the front
}

type cachedStmt struct {
	query   string
	stmt    sqliteStmt
	busy    bool // its Rows are open
	evicted bool // no longer in the cache: finalize once not busy
}

// Unwrap returns modernc's connection: sqlite.Limit and other functions that
// take the raw connection look through wrappers with it.
func (c *cachingConn) Unwrap() driver.Conn { return c.inner }

// acquire returns the cached statement for query, marked busy and prepared
// now if need be, or nil when the cached one is busy. A statement that fails
// to prepare is not cached.
func (c *cachingConn) acquire(ctx context.Context, query string) (*cachedStmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byQuery[query]; ok {
		cs := el.Value.(*cachedStmt)
		if cs.busy {
			return nil, nil
		}
		cs.busy = true
		c.lru.MoveToFront(el)
		return cs, nil
	}
	stmt, err := prepareSQLite(ctx, c.inner, query)
	if err != nil {
		return nil, err
	}
	cs := &cachedStmt{query: query, stmt: stmt, busy: true}
	c.byQuery[query] = c.lru.PushFront(cs)
	for c.lru.Len() > c.size {
		c.evict(c.lru.Back())
	}
	return cs, nil
}

// prepareSQLite prepares query as a statement that runs with a context.
func prepareSQLite(ctx context.Context, conn driver.ConnPrepareContext, query string) (sqliteStmt, error) {
	s, err := conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	stmt, ok := s.(sqliteStmt)
	if !ok {
		_ = s.Close()
		return nil, fmt.Errorf("SQLite statement %T cannot run with a context", s)
	}
	return stmt, nil
}

// evict removes el from the cache, finalizing its statement unless busy.
// Called with mu held.
func (c *cachingConn) evict(el *list.Element) {
	cs := c.lru.Remove(el).(*cachedStmt)
	delete(c.byQuery, cs.query)
	cs.evicted = true
	if !cs.busy {
		// Finalizing repeats the error of the statement's last run, if it
		// failed; that error was reported then.
		_ = cs.stmt.Close()
	}
}

// release marks cs idle again, finalizing it if it was evicted meanwhile.
func (c *cachingConn) release(cs *cachedStmt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs.busy = false
	if cs.evicted {
		_ = cs.stmt.Close()
	}
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.sent.Add(1)
	cs, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.inner.QueryContext(ctx, query, args)
	}
	rows, err := cs.stmt.QueryContext(ctx, args)
	if err != nil {
		c.release(cs)
		return nil, err
	}
	return &cachedRows{Rows: rows, conn: c, stmt: cs}, nil
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.sent.Add(1)
	cs, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.inner.ExecContext(ctx, query, args)
	}
	defer c.release(cs)
	return cs.stmt.ExecContext(ctx, args)
}

// Close finalizes the cached statements, then closes the connection.
// database/sql closes every Rows of a connection before the connection, so
// no statement is still busy here; one that were would be finalized by its
// Rows' Close, as an evicted one is.
func (c *cachingConn) Close() error {
	c.mu.Lock()
	for c.lru.Len() > 0 {
		c.evict(c.lru.Back())
	}
	c.mu.Unlock()
	return c.inner.Close()
}

// Statements prepared by the caller are the caller's to close: not cached.

func (c *cachingConn) Prepare(query string) (driver.Stmt, error) {
	return c.inner.PrepareContext(context.Background(), query)
}

func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.inner.PrepareContext(ctx, query)
}

func (c *cachingConn) Begin() (driver.Tx, error) {
	return c.inner.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.inner.BeginTx(ctx, opts)
}

func (c *cachingConn) Ping(ctx context.Context) error { return c.inner.Ping(ctx) }

func (c *cachingConn) ResetSession(ctx context.Context) error { return c.inner.ResetSession(ctx) }

func (c *cachingConn) IsValid() bool { return c.inner.IsValid() }

// cachedRows is the result of a query on a cached statement; closing it
// frees the statement for the next query of its text.
type cachedRows struct {
	driver.Rows
	conn   *cachingConn
	stmt   *cachedStmt
	closed bool
}

func (r *cachedRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	// modernc resets the statement here, even when it reports an error
	// (that of the statement's last step), so it is reusable either way.
	err := r.Rows.Close()
	r.conn.release(r.stmt)
	return err
}

// The column-type methods forward to modernc's rows, answering as
// database/sql does for a driver without them should they ever be missing.

func (r *cachedRows) ColumnTypeDatabaseTypeName(index int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(index)
	}
	return ""
}

func (r *cachedRows) ColumnTypeLength(index int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(index)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypeNullable(index int) (nullable, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(index)
	}
	return false, false
}

func (r *cachedRows) ColumnTypePrecisionScale(index int) (precision, scale int64, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(index)
	}
	return 0, 0, false
}

func (r *cachedRows) ColumnTypeScanType(index int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(index)
	}
	return reflect.TypeFor[any]()
}
