package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// SQLite has one writer, and superagent's SQLite database is one connection
// (River's SQLite driver asks for that too). database/sql queues the callers
// waiting for a pool's connections, but when one is freed it hands it to a
// waiter picked at random, not the one that has waited longest: under load a
// few unlucky callers wait many turns, and the p99 of every request that
// touches the database grows to several times its median.
//
// turnConnector keeps the one SQLite connection and serves it in turns, in
// the order they were asked for. database/sql gets as many connections as it
// wants, each a turnConn: a view that takes its turn at the first call of a
// checkout (a statement, a transaction, a dedicated sql.Conn) and gives it
// back when database/sql returns the view to its pool. A checkout therefore
// has the SQLite connection to itself from its first call to its end, exactly
// as with one pooled connection; only the order of the waiters changes.

// turnViews caps the views database/sql may open: more than the callers that
// ever wait at once, so that database/sql's own random wake-up, which begins
// when every view is out, is not reached.
const turnViews = 256

// errTurnClosed answers a call on a view after the database was closed.
var errTurnClosed = errors.New("sql: database is closed")

var (
	_ driver.Connector = (*turnConnector)(nil)
	_ io.Closer        = (*turnConnector)(nil)
	_ sqliteConn       = (*turnConn)(nil)
	_ sqliteStmt       = (*turnStmt)(nil)
)

// turnConnector opens views of one connection that open makes when first
// needed, and again when the connection was found unusable.
type turnConnector struct {
	open cachingConnector
	// turn is full while a view has the connection. Go queues the senders
	// blocked on a full channel and lets them in first come, first served.
	turn chan struct{}

	// waiting counts the callers waiting for the turn (tests watch it).
	waiting atomic.Int64

	// conn is the connection: read and written only with the turn held.
	conn *cachingConn

	mu     sync.Mutex
	closed bool // Close was called; whoever holds the turn closes conn
	// unfinalized are statements closed outside their view's turn, to be
	// finalized at the next turn.
	unfinalized []*turnStmt
}

func newTurnConnector(open cachingConnector) *turnConnector {
	return &turnConnector{open: open, turn: make(chan struct{}, 1)}
}

// Connect opens a view; the SQLite connection itself opens at the first
// turn.
func (t *turnConnector) Connect(context.Context) (driver.Conn, error) {
	return &turnConn{of: t}, nil
}

func (t *turnConnector) Driver() driver.Driver { return t.open.Driver() }

// Close closes the connection now if no view holds it, else when the view
// holding it gives its turn back. database/sql calls it from DB.Close.
func (t *turnConnector) Close() error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	select {
	case t.turn <- struct{}{}:
		return t.give(false)
	default:
		return nil
	}
}

// take waits for the turn, in arrival order, and returns the connection,
// opened now if there is none.
func (t *turnConnector) take(ctx context.Context) (*cachingConn, error) {
	select {
	case t.turn <- struct{}{}:
	default:
		t.waiting.Add(1)
		select {
		case t.turn <- struct{}{}:
			t.waiting.Add(-1)
		case <-ctx.Done():
			t.waiting.Add(-1)
			return nil, ctx.Err()
		}
	}
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		_ = t.give(false)
		return nil, errTurnClosed
	}
	t.finalize()
	if t.conn == nil {
		conn, err := t.open.Connect(ctx)
		if err != nil {
			_ = t.give(false)
			return nil, err
		}
		t.conn = conn.(*cachingConn)
	}
	return t.conn, nil
}

// finalize closes the statements left for this turn. One prepared on a
// connection closed since is gone with it. Called with the turn held.
func (t *turnConnector) finalize() {
	t.mu.Lock()
	stmts := t.unfinalized
	t.unfinalized = nil
	t.mu.Unlock()
	for _, s := range stmts {
		if s.on == t.conn {
			_ = s.sqliteStmt.Close()
		}
	}
}

// give ends the turn. The connection is closed first, to be opened afresh
// by the next turn, when drop is set, when it reports itself unusable (an
// interrupted statement is still unwinding), or when the database was
// closed.
func (t *turnConnector) give(drop bool) error {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	var err error
	if t.conn != nil && (drop || closed || !t.conn.IsValid()) {
		err = t.conn.Close()
		t.conn = nil
	}
	<-t.turn
	return err
}

// turnConn is database/sql's view of the shared connection. database/sql
// never uses one of its connections from two goroutines at once, so a view
// needs no lock of its own.
type turnConn struct {
	of     *turnConnector
	conn   *cachingConn // set while this view holds the turn
	closed bool
}

// hold returns the connection, taking the turn if this view does not hold it
// yet.
func (c *turnConn) hold(ctx context.Context) (*cachingConn, error) {
	if c.conn != nil {
		return c.conn, nil
	}
	if c.closed {
		return nil, driver.ErrBadConn
	}
	conn, err := c.of.take(ctx)
	if err != nil {
		return nil, err
	}
	c.conn = conn
	return conn, nil
}

// release gives the turn back, if held.
func (c *turnConn) release(drop bool) {
	if c.conn == nil {
		return
	}
	c.conn = nil
	_ = c.of.give(drop)
}

// IsValid is how a checkout ends: database/sql asks it of every connection
// it takes back into its pool, so the turn is given back here. The view
// itself stays valid; an unusable SQLite connection is replaced at the next
// turn instead.
func (c *turnConn) IsValid() bool {
	c.release(false)
	return !c.closed
}

// Close ends the view. A view closed while it holds the turn was discarded
// in the middle of a checkout, possibly inside a transaction (River discards
// a connection whose BEGIN failed): the SQLite connection is closed with it,
// rolling back whatever it had begun, and the next turn opens a new one.
func (c *turnConn) Close() error {
	c.closed = true
	c.release(true)
	return nil
}

// ResetSession needs nothing: the SQLite connection is checked when a turn
// ends.
func (c *turnConn) ResetSession(context.Context) error { return nil }

// Unwrap returns the caching connection, for functions that take the raw one
// (sqlite.Limit): the view takes its turn, held to the end of the checkout.
func (c *turnConn) Unwrap() driver.Conn {
	conn, err := c.hold(context.Background())
	if err != nil {
		return nil
	}
	return conn
}

func (c *turnConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	conn, err := c.hold(ctx)
	if err != nil {
		return nil, err
	}
	return conn.QueryContext(ctx, query, args)
}

func (c *turnConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	conn, err := c.hold(ctx)
	if err != nil {
		return nil, err
	}
	return conn.ExecContext(ctx, query, args)
}

func (c *turnConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext prepares query on the SQLite connection. database/sql may
// run the statement in a later checkout of this view (a pool-level Stmt), so
// the statement takes the view's turn whenever it runs.
func (c *turnConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	conn, err := c.hold(ctx)
	if err != nil {
		return nil, err
	}
	stmt, err := prepareSQLite(ctx, conn, query)
	if err != nil {
		return nil, err
	}
	return &turnStmt{sqliteStmt: stmt, view: c, on: conn}, nil
}

func (c *turnConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *turnConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	conn, err := c.hold(ctx)
	if err != nil {
		return nil, err
	}
	return conn.BeginTx(ctx, opts)
}

func (c *turnConn) Ping(ctx context.Context) error {
	conn, err := c.hold(ctx)
	if err != nil {
		return err
	}
	return conn.Ping(ctx)
}

// turnStmt is a statement prepared through a view: it runs in the view's
// turn, on the connection it was prepared on.
type turnStmt struct {
	sqliteStmt
	view *turnConn
	on   *cachingConn
}

// hold takes the view's turn for the statement. A statement whose connection
// was replaced since it was prepared reports a bad connection, so that
// database/sql prepares it again on a fresh view.
func (s *turnStmt) hold(ctx context.Context) error {
	conn, err := s.view.hold(ctx)
	if err != nil {
		return err
	}
	if conn != s.on {
		s.view.release(false)
		return driver.ErrBadConn
	}
	return nil
}

func (s *turnStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.hold(ctx); err != nil {
		return nil, err
	}
	return s.sqliteStmt.ExecContext(ctx, args)
}

func (s *turnStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.hold(ctx); err != nil {
		return nil, err
	}
	return s.sqliteStmt.QueryContext(ctx, args)
}

// Exec and Query are the context-free forms database/sql falls back to;
// they run with no deadline.

func (s *turnStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *turnStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

// Close finalizes the statement now if its view holds the turn on its
// connection, else at the next turn: database/sql may close a pool-level
// Stmt while another view has the connection.
func (s *turnStmt) Close() error {
	if s.view.conn == s.on {
		return s.sqliteStmt.Close()
	}
	t := s.view.of
	t.mu.Lock()
	t.unfinalized = append(t.unfinalized, s)
	t.mu.Unlock()
	return nil
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}
