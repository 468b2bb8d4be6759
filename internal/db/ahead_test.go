package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

type aheadKey struct{ name string }

// inTx runs fn in a transaction that commits when fn returns nil and is
// rolled back however fn ends, a failed assertion included, so a failing
// test does not leave its connection busy.
func inTx(t *testing.T, d *db.DB, fn func(tx *db.Tx) error) {
	t.Helper()
	ctx := context.Background()
	tx, err := d.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.NoError(t, fn(tx))
	require.NoError(t, tx.Commit(ctx))
}

func scanCount(rows db.Rows) (any, error) {
	var n int
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// TestReadsAheadTravelWithTheNextStatement: on PostgreSQL a read queued
// with ReadAhead is sent in the same round trip as the transaction's next
// statement, whichever kind that is, reads what the database held before
// that statement, and answers Ahead once; on SQLite nothing is queued and
// Read runs the query when asked, so both answer alike.
func TestReadsAheadTravelWithTheNextStatement(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		_, err := d.Exec(ctx, "CREATE TABLE ahead (n INTEGER NOT NULL)")
		require.NoError(t, err)
		pg := d.Dialect() == db.Postgres
		count := "SELECT COUNT(*) FROM ahead"

		for _, next := range []string{"exec", "query", "queryrow"} {
			inTx(t, d, func(tx *db.Tx) error {
				var before int
				require.NoError(t, tx.QueryRow(ctx, count).Scan(&before))
				sent := d.Statements()
				tx.ReadAhead(aheadKey{"count"}, count, nil, scanCount)
				tx.ReadAhead(aheadKey{"one"}, "SELECT 1", nil, scanCount)
				require.Equal(t, sent, d.Statements(), "a read ahead waits for a statement")

				switch next {
				case "exec":
					n, err := tx.Exec(ctx, "INSERT INTO ahead (n) VALUES (1), (2)")
					require.NoError(t, err)
					require.Equal(t, int64(2), n)
				case "query":
					rows, err := tx.Query(ctx, "INSERT INTO ahead (n) VALUES (1), (2) RETURNING n")
					require.NoError(t, err)
					var got []int
					for rows.Next() {
						var n int
						require.NoError(t, rows.Scan(&n))
						got = append(got, n)
					}
					rows.Close()
					require.NoError(t, rows.Err())
					require.Equal(t, []int{1, 2}, got)
				case "queryrow":
					var n int
					require.NoError(t, tx.QueryRow(ctx, "INSERT INTO ahead (n) VALUES (1), (2) RETURNING 7").Scan(&n))
					require.Equal(t, 7, n)
				}
				if pg {
					require.Equal(t, int64(1), d.Statements()-sent, "%s: the reads and the statement are one round trip", next)
				}
				sent = d.Statements()

				v, err := tx.Read(ctx, aheadKey{"count"}, count, nil, scanCount)
				require.NoError(t, err)
				if pg {
					require.Equal(t, before, v, "%s: read before the statement it travelled with", next)
					require.Equal(t, sent, d.Statements(), "an answered read costs nothing")
				} else {
					require.Equal(t, before+2, v, "SQLite reads when asked")
				}
				_, ok, err := tx.Ahead(ctx, aheadKey{"count"})
				require.NoError(t, err)
				require.False(t, ok, "a read ahead answers once")
				return nil
			})
		}
		inTx(t, d, func(tx *db.Tx) error {
			tx.ReadAhead(aheadKey{"one"}, "SELECT 1", nil, scanCount)
			var n int
			require.ErrorIs(t, tx.QueryRow(ctx, "SELECT n FROM ahead WHERE n < 0").Scan(&n), db.ErrNoRows, "no row is no row after reads ahead")
			return nil
		})
	})
}

// TestReadAheadAskedForBeforeAnyStatement: asking for a read still queued
// sends every queued read at once; what nobody asks for is never sent.
func TestReadAheadAskedForBeforeAnyStatement(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		pg := d.Dialect() == db.Postgres
		inTx(t, d, func(tx *db.Tx) error {
			var n int
			require.NoError(t, tx.QueryRow(ctx, "SELECT 1").Scan(&n))
			sent := d.Statements()
			tx.ReadAhead(aheadKey{"a"}, "SELECT 2", nil, scanCount)
			tx.ReadAhead(aheadKey{"b"}, "SELECT 3", nil, scanCount)
			tx.ReadAhead(aheadKey{"a"}, "SELECT 4", nil, scanCount) // replaces the first
			a, ok, err := tx.Ahead(ctx, aheadKey{"a"})
			require.NoError(t, err)
			require.Equal(t, pg, ok)
			if pg {
				require.Equal(t, 4, a)
				require.Equal(t, sent+1, d.Statements())
				b, ok, err := tx.Ahead(ctx, aheadKey{"b"})
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, 3, b)
				require.Equal(t, sent+1, d.Statements(), "b came with a")
			}
			tx.ReadAhead(aheadKey{"never"}, "SELECT 5", nil, scanCount)
			return nil
		})
		sent := d.Statements()
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			tx.ReadAhead(aheadKey{"never"}, "SELECT 5", nil, scanCount)
			return nil
		}))
		require.Equal(t, sent, d.Statements(), "a read nobody asked for is not sent")
	})
}

// TestFailedReadAheadFailsTheTransaction: a read ahead that fails answers
// its error, and the statement it travelled with fails too, as any
// statement after a failed one in a PostgreSQL transaction; nothing the
// transaction wrote is kept.
func TestFailedReadAheadFailsTheTransaction(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	ctx := context.Background()
	_, err := d.Exec(ctx, "CREATE TABLE ahead_failed (n INTEGER NOT NULL)")
	require.NoError(t, err)
	var readErr, stmtErr error
	err = d.InTx(ctx, func(tx *db.Tx) error {
		tx.ReadAhead(aheadKey{"bad"}, "SELECT 1 / (SELECT COUNT(*) FROM ahead_failed)", nil, scanCount)
		_, stmtErr = tx.Exec(ctx, "INSERT INTO ahead_failed (n) VALUES (1)")
		_, _, readErr = tx.Ahead(ctx, aheadKey{"bad"})
		return errors.Join(stmtErr, readErr)
	})
	require.Error(t, err)
	require.ErrorContains(t, readErr, "division by zero")
	require.Error(t, stmtErr)
	var n int
	require.NoError(t, d.QueryRow(ctx, "SELECT COUNT(*) FROM ahead_failed").Scan(&n))
	require.Zero(t, n)
}
