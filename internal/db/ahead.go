package db

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
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

// sendAhead sends the queued reads alone, in one round trip.
func (t *Tx) sendAhead(ctx context.Context) error {
	br := t.batch(ctx, "", nil)
	return br.Close()
}

// batch sends the queued reads and, when query is not empty, query after
// them, all in one round trip; it reads the queued reads' results and
// leaves query's to the caller, who closes what is returned.
func (t *Tx) batch(ctx context.Context, query string, args []any) pgx.BatchResults {
	queued := t.queued
	t.queued = nil
	b := &pgx.Batch{}
	for _, r := range queued {
		b.Queue(r.query, r.args...)
	}
	if query != "" {
		b.Queue(query, args...)
	}
	br := t.pg.SendBatch(ctx, b)
	if t.read == nil {
		t.read = map[any]aheadResult{}
	}
	for _, r := range queued {
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
	return br
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

// queryAhead runs query after the queued reads.
func (t *Tx) queryAhead(ctx context.Context, query string, args []any) (Rows, error) {
	br := t.batch(ctx, query, args)
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (t *Tx) queryRowAhead(ctx context.Context, query string, args []any) Row {
	br := t.batch(ctx, query, args)
	return batchRow{row: br.QueryRow(), br: br}
}

func (t *Tx) execAhead(ctx context.Context, query string, args []any) (int64, error) {
	br := t.batch(ctx, query, args)
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
