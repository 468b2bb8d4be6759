package db

import (
	"cmp"
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// lazyTx is a PostgreSQL transaction whose BEGIN travels with its first
// statement, in one round trip (pgx's Batch.BeginTx), instead of costing
// one of its own; a transaction that sends nothing sends neither BEGIN nor
// COMMIT. Once begun it is pgx's own transaction; it is a pgx.Tx
// throughout, so River inserts jobs through it as through pgx's.
type lazyTx struct {
	conn *pgxpool.Conn
	// tx is the transaction once its first statement was sent; held
	// once the server is seen inside it.
	tx     pgx.Tx
	held   bool
	closed bool
}

// settle forgets a transaction whose BEGIN never took effect (its batch
// failed before reaching the server, say on an ended context), so the
// next statement begins it again, as it would have had BEGIN been sent
// on its own first.
func (t *lazyTx) settle() {
	if t.tx == nil || t.held {
		return
	}
	pc := t.conn.Conn().PgConn()
	if pc.IsBusy() {
		return
	}
	if pc.TxStatus() == 'I' && !pc.IsClosed() {
		t.tx = nil
		return
	}
	t.held = true
}

var _ pgx.Tx = (*lazyTx)(nil)

func beginLazy(ctx context.Context, pool *pgxpool.Pool) (*lazyTx, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &lazyTx{conn: conn}, nil
}

// SendBatch sends b, preceded by BEGIN when nothing was sent yet.
func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	t.settle()
	switch {
	case t.tx != nil:
		return t.tx.SendBatch(ctx, b)
	case t.closed:
		return pgx.FailedBatchResults(b, pgx.ErrTxClosed)
	}
	begin := &pgx.Batch{}
	begin.BeginTx(pgx.TxOptions{})
	begin.QueuedQueries = append(begin.QueuedQueries, b.QueuedQueries...)
	br := t.conn.SendBatch(ctx, begin)
	t.tx = br.Tx()
	// BEGIN's answer is the batch's first; the caller reads the rest.
	_, _ = br.Exec() // a failed BEGIN fails every statement after it
	return br
}

// begun returns the transaction, begun on its own for what cannot carry
// BEGIN.
func (t *lazyTx) begun(ctx context.Context) (pgx.Tx, error) {
	t.settle()
	if t.tx != nil {
		return t.tx, nil
	}
	if t.closed {
		return nil, pgx.ErrTxClosed
	}
	tx, err := t.conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	t.tx = tx
	return tx, nil
}

func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	t.settle()
	if t.tx != nil || t.closed {
		tx, err := t.begun(ctx)
		if err != nil {
			return pgconn.CommandTag{}, err
		}
		return tx.Exec(ctx, sql, args...)
	}
	return execIn(t.SendBatch(ctx, single(sql, args)), nil)
}

func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	t.settle()
	if t.tx != nil || t.closed {
		tx, err := t.begun(ctx)
		if err != nil {
			return nil, err
		}
		return tx.Query(ctx, sql, args...)
	}
	return queryIn(t.SendBatch(ctx, single(sql, args)), nil)
}

func (t *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	t.settle()
	if t.tx != nil || t.closed {
		tx, err := t.begun(ctx)
		if err != nil {
			return errRow{err}
		}
		return tx.QueryRow(ctx, sql, args...)
	}
	return queryRowIn(t.SendBatch(ctx, single(sql, args)), nil, true)
}

// single is a batch of one statement.
func single(sql string, args []any) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	return b
}

func (t *lazyTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	tx, err := t.begun(ctx)
	if err != nil {
		return 0, err
	}
	return tx.CopyFrom(ctx, table, columns, src)
}

func (t *lazyTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	tx, err := t.begun(ctx)
	if err != nil {
		return nil, err
	}
	return tx.Prepare(ctx, name, sql)
}

// LargeObjects is not offered before the transaction has begun: nothing
// here stores large objects.
func (t *lazyTx) LargeObjects() pgx.LargeObjects {
	if t.tx != nil {
		return t.tx.LargeObjects()
	}
	return pgx.LargeObjects{}
}

func (t *lazyTx) Conn() *pgx.Conn { return t.conn.Conn() }

// Begin starts a nested transaction (a savepoint) in the transaction.
func (t *lazyTx) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := t.begun(ctx)
	if err != nil {
		return nil, err
	}
	return tx.Begin(ctx)
}

// Commit commits what was sent, if anything, and gives the connection
// back to the pool (which closes one left inside a transaction).
func (t *lazyTx) Commit(ctx context.Context) error {
	return t.end(ctx, pgx.Tx.Commit)
}

// Rollback abandons what was sent, if anything, and gives the connection
// back to the pool.
func (t *lazyTx) Rollback(ctx context.Context) error {
	return t.end(ctx, pgx.Tx.Rollback)
}

func (t *lazyTx) end(ctx context.Context, how func(pgx.Tx, context.Context) error) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.settle()
	t.closed = true
	defer t.conn.Release()
	if t.tx == nil {
		return nil
	}
	return how(t.tx, ctx)
}

// commitAfter sends b, then COMMIT, in one round trip, and gives the
// connection back; read reads the answers of b's statements. When any of
// them fails the transaction is not committed, and the pool closes the
// connection, left inside it.
func (t *lazyTx) commitAfter(ctx context.Context, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	b.Queue("commit")
	br := t.SendBatch(ctx, b)
	t.closed = true
	defer t.conn.Release()
	err := read(br)
	tag, cerr := execIn(br, nil)
	if err = cmp.Or(err, cerr); err != nil {
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
