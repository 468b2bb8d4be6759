package db_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

// countingWrites opens a PostgreSQL database of the test's own on one
// connection whose writes to the server are counted in writes.
func countingWrites(t *testing.T, writes *atomic.Int64) *db.DB {
	t.Helper()
	d, err := db.OpenPostgresCountingWrites(context.Background(), dbtest.PostgresDatabaseURL(t), writes)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// TestPostgresTransactionsSpendNoRoundTripOnBegin: on PostgreSQL a
// transaction's BEGIN is written to the server with its first statement,
// one write for both; one that sends nothing writes nothing, not even at
// its end. The transaction is a real one all the same: its statements see
// one transaction id, a failure rolls all of them back, and a savepoint
// inside it rolls back alone.
func TestPostgresTransactionsSpendNoRoundTripOnBegin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var writes atomic.Int64
	d := countingWrites(t, &writes)
	_, err := d.Exec(ctx, "CREATE TABLE lazy (n INTEGER NOT NULL)")
	require.NoError(t, err)

	counted := func(fn func(tx *db.Tx) error) (int64, error) {
		before := writes.Load()
		err := d.InTx(ctx, fn)
		return writes.Load() - before, err
	}
	var first, second int64
	twice := func(tx *db.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT txid_current()").Scan(&first); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT txid_current()").Scan(&second)
	}
	// The first run prepares the statement, as pgx does once per
	// connection; the second is counted.
	_, err = counted(twice)
	require.NoError(t, err)
	n, err := counted(twice)
	require.NoError(t, err)
	require.Equal(t, first, second, "one transaction")
	require.Equal(t, int64(3), n, "BEGIN with the first statement, the second, COMMIT")

	n, err = counted(func(*db.Tx) error { return nil })
	require.NoError(t, err)
	require.Zero(t, n, "a transaction that sends nothing")

	for _, first := range []string{"exec", "query"} {
		failed := errors.New("fail")
		_, err = counted(func(tx *db.Tx) error {
			switch first {
			case "exec":
				if _, err := tx.Exec(ctx, "INSERT INTO lazy (n) VALUES (1)"); err != nil {
					return err
				}
			case "query":
				rows, err := tx.Query(ctx, "INSERT INTO lazy (n) VALUES (1) RETURNING n")
				if err != nil {
					return err
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					return err
				}
			}
			return failed
		})
		require.ErrorIs(t, err, failed)
	}
	var rows int
	require.NoError(t, d.QueryRow(ctx, "SELECT COUNT(*) FROM lazy").Scan(&rows))
	require.Zero(t, rows, "rolled back with the transaction its BEGIN came with")

	// A savepoint, as River's driver takes one, through the pgx.Tx.
	require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO lazy (n) VALUES (1)"); err != nil {
			return err
		}
		nested, err := tx.PgxTx().Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := nested.Exec(ctx, "INSERT INTO lazy (n) VALUES (2)"); err != nil {
			return err
		}
		return nested.Rollback(ctx)
	}))
	var kept []int
	got, err := d.Query(ctx, "SELECT n FROM lazy ORDER BY n")
	require.NoError(t, err)
	for got.Next() {
		var n int
		require.NoError(t, got.Scan(&n))
		kept = append(kept, n)
	}
	got.Close()
	require.Equal(t, []int{1}, kept)

	// After its end the transaction refuses statements, begun or not.
	tx, err := d.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	_, err = tx.PgxTx().Exec(ctx, "SELECT 1")
	require.ErrorIs(t, err, pgx.ErrTxClosed)
	require.NoError(t, tx.Rollback(ctx), "a rollback after the commit is a no-op")
}

// TestCancelledFirstStatementLeavesThePoolUsable: a transaction whose
// first statement, the one carrying its BEGIN, is sent with an ended
// context reports the error, and its connection goes back to the pool in
// a state the next transaction can use.
func TestCancelledFirstStatementLeavesThePoolUsable(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for range 10 { // more than the pool holds
		err := d.InTx(ctx, func(tx *db.Tx) error {
			_, err := tx.Exec(cancelled, "SELECT 1")
			return err
		})
		require.ErrorIs(t, err, context.Canceled)
	}
	for range 10 {
		var n int
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error { return tx.QueryRow(ctx, "SELECT 1").Scan(&n) }))
		require.Equal(t, 1, n)
	}
}

// TestLaterWritesTravelWithTheNextStatementOrTheCommit: on PostgreSQL a
// write queued with ExecLater is sent with the transaction's next
// statement, which sees it, or with its COMMIT, all in one write to the
// server; a queued write that fails fails the commit and keeps nothing.
// On SQLite it runs at once.
func TestLaterWritesTravelWithTheNextStatementOrTheCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var writes atomic.Int64
	d := countingWrites(t, &writes)
	_, err := d.Exec(ctx, "CREATE TABLE later (n INTEGER NOT NULL CHECK (n > 0))")
	require.NoError(t, err)
	count := func(q db.Querier) int {
		var n int
		require.NoError(t, q.QueryRow(ctx, "SELECT COUNT(*) FROM later").Scan(&n))
		return n
	}
	insertTwoAndCommit := func(second int) (int64, error) {
		before := writes.Load()
		err := d.InTx(ctx, func(tx *db.Tx) error {
			require.NoError(t, tx.ExecLater(ctx, "INSERT INTO later (n) VALUES ($1)", 1))
			require.NoError(t, tx.ExecLater(ctx, "INSERT INTO later (n) VALUES ($1)", second))
			return nil
		})
		return writes.Load() - before, err
	}
	_, err = insertTwoAndCommit(2) // prepares the statement
	require.NoError(t, err)
	n, err := insertTwoAndCommit(2)
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "BEGIN, both writes and COMMIT in one")
	require.Equal(t, 4, count(d))

	_, err = insertTwoAndCommit(-1)
	require.ErrorContains(t, err, "later_n_check")
	require.Equal(t, 4, count(d), "a failed later write keeps nothing")

	require.ErrorContains(t, d.InTx(ctx, func(tx *db.Tx) error {
		require.NoError(t, tx.ExecLater(ctx, "INSERT INTO later (n) VALUES (3)"))
		require.Equal(t, 5, count(tx), "the next statement sees what went before it")
		require.NoError(t, tx.ExecLater(ctx, "INSERT INTO later (n) VALUES (-3)"))
		err := tx.Flush(ctx)
		require.ErrorContains(t, err, "later_n_check", "a flush answers the failure")
		return err
	}), "later_n_check")
	require.Equal(t, 4, count(d))
}

// TestLaterWritesOnSQLiteRunAtOnce: SQLite has no round trips to save.
func TestLaterWritesOnSQLiteRunAtOnce(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	ctx := context.Background()
	_, err := d.Exec(ctx, "CREATE TABLE later (n INTEGER NOT NULL CHECK (n > 0))")
	require.NoError(t, err)
	require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
		require.NoError(t, tx.ExecLater(ctx, "INSERT INTO later (n) VALUES (1)"))
		require.ErrorContains(t, tx.ExecLater(ctx, "INSERT INTO later (n) VALUES (-1)"), "CHECK")
		return nil
	}))
	var n int
	require.NoError(t, d.QueryRow(ctx, "SELECT COUNT(*) FROM later").Scan(&n))
	require.Equal(t, 1, n)
}
