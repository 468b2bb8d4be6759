package db

import (
	"cmp"
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A read ahead is a query a transaction will want the answer to soon,
// queued so that it travels with the transaction's next statement: on
// PostgreSQL every statement is a round trip to the server, and a round
// trip, not the work in it, is most of what a small statement costs, so a
// batch that first looks up a card's Thread, its author and the main
// Session's turn, then stores its deliveries, sends all of it at once. On
// SQLite a statement is a function call, nothing is queued, and Ahead
// finds nothing: the caller reads as it always does.
//
// What is read ahead is what the database held when the batch ran, inside
// the transaction: the caller decides for how long after that it still
// stands (see Ahead).
//
// A write queued by ExecLater waits in the same queue, with no key and no
// scan, so what the transaction sends keeps its order.
type aheadRead struct {
	key   any
	query string
	args  []any
	scan  func(Rows) (any, error)
}

type aheadResult struct {
	v   any
	err error
}

// ReadAhead queues query, to be sent with the transaction's next
// statement, or when Ahead asks for key; scan turns its rows into what
// Ahead returns. A second read under a key already queued or read
// replaces it. On SQLite it does nothing.
func (t *Tx) ReadAhead(key any, query string, args []any, scan func(Rows) (any, error)) {
	if t.pg == nil {
		return
	}
	delete(t.read, key)
	for i, r := range t.queued {
		if r.key == key {
			t.queued = append(t.queued[:i], t.queued[i+1:]...)
			break
		}
	}
	t.queued = append(t.queued, aheadRead{key: key, query: query, args: args, scan: scan})
}

// Ahead returns what was read ahead under key, and forgets it, so that a
// read stands for one use; a read still queued is sent now, with any
// other queued reads. ok is false when nothing was read ahead under key,
// always on SQLite. err is the read's own error: the transaction is then
// unusable, as after any failed statement.
func (t *Tx) Ahead(ctx context.Context, key any) (v any, ok bool, err error) {
	if r, ok := t.read[key]; ok {
		delete(t.read, key)
		return r.v, true, r.err
	}
	for _, r := range t.queued {
		if r.key == key {
			if err := t.sendAhead(ctx); err != nil {
				return nil, true, err
			}
			r := t.read[key]
			delete(t.read, key)
			return r.v, true, r.err
		}
	}
	return nil, false, nil
}

// Read returns what was read ahead under key (see Ahead) or, when
// nothing was, runs the read now: what a store calls where it reads what
// it may have had read ahead.
func (t *Tx) Read(ctx context.Context, key any, query string, args []any, scan func(Rows) (any, error)) (any, error) {
	if v, ok, err := t.Ahead(ctx, key); ok {
		return v, err
	}
	return ReadNow(ctx, t, query, args, scan)
}

// ReadNow runs query through q and turns its rows into a value with scan,
// as a read ahead would.
func ReadNow(ctx context.Context, q Querier, query string, args []any, scan func(Rows) (any, error)) (any, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	v, err := scan(rows)
	if err != nil {
		return nil, err
	}
	return v, rows.Err()
}

// ExecLater has statement run in the transaction, sent with its next
// statement or its COMMIT, on PostgreSQL, instead of as a round trip of
// its own: for a write whose answer nobody waits for, such as a card's
// row whose id is already known. Its failure fails the statement it
// travels with (or the commit), and so the transaction. On SQLite it runs
// at once.
func (t *Tx) ExecLater(ctx context.Context, statement string, args ...any) error {
	if t.pg == nil {
		_, err := sqlExec(ctx, t.sql, statement, args)
		return err
	}
	t.queued = append(t.queued, aheadRead{query: statement, args: args})
	return nil
}

// Flush sends what is queued (reads ahead, later writes) now, for what
// runs statements on the transaction without it (River's inserts), so
// that they come after what the transaction did before them.
func (t *Tx) Flush(ctx context.Context) error {
	if len(t.queued) == 0 {
		return nil
	}
	return t.sendAhead(ctx)
}

// sendAhead sends the queued reads and writes alone, in one round trip.
func (t *Tx) sendAhead(ctx context.Context) error {
	br, err := t.batch(ctx, "", nil)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// batch sends the queued reads and writes and, when query is not empty,
// query after them, all in one round trip; it reads what was queued and
// leaves query's answer to the caller, who closes what is returned. err
// is the first queued write's failure: query then failed too.
func (t *Tx) batch(ctx context.Context, query string, args []any) (br pgx.BatchResults, err error) {
	queued := t.queued
	t.queued = nil
	b := &pgx.Batch{}
	for _, r := range queued {
		b.Queue(r.query, r.args...)
	}
	if query != "" {
		b.Queue(query, args...)
	}
	br = t.pg.SendBatch(ctx, b)
	err = t.readQueued(br, queued)
	return br, err
}

// readQueued reads the answers of queued, sent first in br: a read's
// into t.read, a write's failure as the error returned.
func (t *Tx) readQueued(br pgx.BatchResults, queued []aheadRead) error {
	if t.read == nil {
		t.read = map[any]aheadResult{}
	}
	var failed error
	for _, r := range queued {
		if r.scan == nil {
			if _, err := br.Exec(); err != nil && failed == nil {
				failed = err
			}
			continue
		}
		var res aheadResult
		rows, err := br.Query()
		if err != nil {
			res.err = err
		} else {
			res.v, res.err = r.scan(rows)
			rows.Close()
			if res.err == nil {
				res.err = rows.Err()
			}
		}
		t.read[r.key] = res
	}
	return failed
}

// commitQueued commits, sending the queued writes with the COMMIT; the
// reads nobody asked for are not sent.
func (t *Tx) commitQueued(ctx context.Context) error {
	var writes []aheadRead
	for _, r := range t.queued {
		if r.scan == nil {
			writes = append(writes, r)
		}
	}
	t.queued, t.read = nil, nil
	if len(writes) == 0 {
		return t.pg.Commit(ctx)
	}
	b := &pgx.Batch{}
	for _, w := range writes {
		b.Queue(w.query, w.args...)
	}
	return t.pg.commitAfter(ctx, b, func(br pgx.BatchResults) error { return t.readQueued(br, writes) })
}

// batchRows are a statement's rows read from a batch, which closes with
// them.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if err := r.br.Close(); err != nil && r.err == nil {
		r.err = err
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// batchRow is a single-row statement's answer read from a batch, which
// closes once it is scanned. raw keeps pgx's own ErrNoRows, for pgx's
// callers (River); ours get ErrNoRows.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
	raw bool
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); cerr != nil && (err == nil || errors.Is(err, pgx.ErrNoRows)) {
		err = cerr
	}
	if !r.raw && errors.Is(err, pgx.ErrNoRows) {
		return ErrNoRows
	}
	return err
}

// queryAhead, queryRowAhead and execAhead run query after what is
// queued, in one round trip.
func (t *Tx) queryAhead(ctx context.Context, query string, args []any) (Rows, error) {
	rows, err := queryIn(t.batch(ctx, query, args)) //nolint:sqlclosecheck // returned to the caller, who closes it
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (t *Tx) queryRowAhead(ctx context.Context, query string, args []any) Row {
	br, failed := t.batch(ctx, query, args)
	return queryRowIn(br, failed, false)
}

func (t *Tx) execAhead(ctx context.Context, query string, args []any) (int64, error) {
	tag, err := execIn(t.batch(ctx, query, args))
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// queryIn, queryRowIn and execIn read the answer of the statement next in
// br, which closes with it; failed, an earlier failure in the batch, is
// the error then, as it made the statement fail too.
func queryIn(br pgx.BatchResults, failed error) (pgx.Rows, error) {
	rows, err := br.Query()
	if failed != nil || err != nil {
		if rows != nil {
			rows.Close()
		}
		_ = br.Close()
		return nil, cmp.Or(failed, err)
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// queryRowIn's raw keeps pgx's ErrNoRows (see batchRow).
func queryRowIn(br pgx.BatchResults, failed error, raw bool) pgx.Row {
	if failed != nil {
		_ = br.Close()
		return errRow{failed}
	}
	return batchRow{row: br.QueryRow(), br: br, raw: raw}
}

func execIn(br pgx.BatchResults, failed error) (pgconn.CommandTag, error) {
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, cmp.Or(failed, err)
}
