package db_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/superagent-dev/superagent/internal/db"
)

// openNumbers opens a SQLite database holding nums(n) = 1..count.
func openNumbers(t *testing.T, count int) *db.DB {
	t.Helper()
	ctx := context.Background()
	d, err := db.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "cache.db"), db.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	_, err = d.Exec(ctx, "CREATE TABLE nums (n INTEGER PRIMARY KEY, label TEXT NOT NULL)")
	require.NoError(t, err)
	for n := 1; n <= count; n++ {
		_, err := d.Exec(ctx, "INSERT INTO nums (n, label) VALUES ($1, $2)", n, fmt.Sprintf("n%d", n))
		require.NoError(t, err)
	}
	return d
}

// cachedQueries lists the statement cache of d's one connection.
func cachedQueries(t *testing.T, d *sql.DB) []string {
	t.Helper()
	conn, err := d.Conn(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	queries, err := db.CachedQueries(conn)
	require.NoError(t, err)
	return queries
}

// labelsUpTo reads the labels of 1..upTo through q.
func labelsUpTo(t *testing.T, q db.Querier, upTo int) []string {
	t.Helper()
	rows, err := q.Query(context.Background(), "SELECT label FROM nums WHERE n <= $1 ORDER BY n", upTo)
	require.NoError(t, err)
	defer rows.Close()
	var labels []string
	for rows.Next() {
		var l string
		require.NoError(t, rows.Scan(&l))
		labels = append(labels, l)
	}
	require.NoError(t, rows.Err())
	return labels
}

func TestCachedStatementsAnswerEachCallWithItsOwnArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openNumbers(t, 50)

	for n := 1; n <= 50; n++ {
		var label string
		require.NoError(t, d.QueryRow(ctx, "SELECT label FROM nums WHERE n = $1", n).Scan(&label))
		require.Equal(t, fmt.Sprintf("n%d", n), label)

		affected, err := d.Exec(ctx, "UPDATE nums SET label = $2 WHERE n <= $1", n, fmt.Sprintf("upto%d", n))
		require.NoError(t, err)
		require.EqualValues(t, n, affected, "rows affected are this call's")

		require.Len(t, labelsUpTo(t, d, n), n)
	}
	err := d.QueryRow(ctx, "SELECT label FROM nums WHERE n = $1", 51).Scan(new(string))
	require.ErrorIs(t, err, db.ErrNoRows)

	queries := cachedQueries(t, d.SQL)
	require.Contains(t, queries, "SELECT label FROM nums WHERE n = $1")
	require.Contains(t, queries, "INSERT INTO nums (n, label) VALUES ($1, $2)")
}

// A caller iterating a result may run the same query again: the second runs
// on a statement of its own, and neither disturbs the other.
func TestNestedQueryOfTheSameTextWhileItsRowsAreOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openNumbers(t, 8)

	require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
		rows, err := tx.Query(ctx, "SELECT label FROM nums WHERE n <= $1 ORDER BY n", 8)
		require.NoError(t, err)
		defer rows.Close()
		outer := 0
		for rows.Next() {
			outer++
			var l string
			require.NoError(t, rows.Scan(&l))
			require.Equal(t, fmt.Sprintf("n%d", outer), l)
			require.Len(t, labelsUpTo(t, tx, outer), outer)
		}
		require.NoError(t, rows.Err())
		require.Equal(t, 8, outer)
		return nil
	}))
	require.Len(t, labelsUpTo(t, d, 8), 8, "the cached statement is free again")
}

// A statement pushed out of the cache while its rows are open keeps serving
// them, and is finalized only once they close.
func TestEvictedBusyStatementFinishesItsRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqlDB, err := db.OpenCachingSQLite(filepath.Join(t.TempDir(), "evict.db"), 2)
	require.NoError(t, err)
	defer sqlDB.Close()
	_, err = sqlDB.ExecContext(ctx, "CREATE TABLE nums (n INTEGER PRIMARY KEY)")
	require.NoError(t, err)
	for n := 1; n <= 10; n++ {
		_, err := sqlDB.ExecContext(ctx, "INSERT INTO nums (n) VALUES ($1)", n)
		require.NoError(t, err)
	}

	conn, err := sqlDB.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	const outerQuery = "SELECT n FROM nums ORDER BY n"
	rows, err := conn.QueryContext(ctx, outerQuery)
	require.NoError(t, err)
	defer rows.Close()
	var got []int
	next := func() {
		t.Helper()
		require.True(t, rows.Next(), rows.Err())
		var n int
		require.NoError(t, rows.Scan(&n))
		got = append(got, n)
	}
	next()
	for i := range 5 {
		var v int
		require.NoError(t, conn.QueryRowContext(ctx, fmt.Sprintf("SELECT n + %d FROM nums WHERE n = $1", i), 1).Scan(&v))
		require.Equal(t, 1+i, v)
		next()
	}
	cached, err := db.CachedQueries(conn)
	require.NoError(t, err)
	require.Len(t, cached, 2)
	require.NotContains(t, cached, outerQuery)

	for rows.Next() {
		var n int
		require.NoError(t, rows.Scan(&n))
		got = append(got, n)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, got)

	var count int
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT count(*) FROM ("+outerQuery+")").Scan(&count))
	require.Equal(t, 10, count)
	var first int
	require.NoError(t, conn.QueryRowContext(ctx, outerQuery).Scan(&first))
	require.Equal(t, 1, first)
}

// countTo counts to $1 slowly enough that a large $1 runs until interrupted.
const countTo = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $1) SELECT count(*) FROM c"

// modernc interrupts a statement whose context ends. On a connection held
// across calls (a transaction, River's sql.Conn) the interrupted statement
// stays cached and must answer the next call correctly; through the pool,
// modernc reports an interrupted connection invalid and database/sql replaces
// it, cache and all.
func TestCancelledQueryLeavesItsCachedStatementReusable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openNumbers(t, 3)
	const forever = int64(1) << 62

	t.Run("held connection", func(t *testing.T) {
		conn, err := d.SQL.Conn(ctx)
		require.NoError(t, err)
		defer conn.Close()

		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		err = conn.QueryRowContext(short, countTo, forever).Scan(new(int64))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		cached, err := db.CachedQueries(conn)
		require.NoError(t, err)
		require.Contains(t, cached, countTo)
		var n int64
		require.NoError(t, conn.QueryRowContext(ctx, countTo, 10).Scan(&n))
		require.EqualValues(t, 10, n)

		short, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		_, err = conn.ExecContext(short, countTo, forever)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, conn.QueryRowContext(ctx, countTo, 7).Scan(&n))
		require.EqualValues(t, 7, n)
	})

	t.Run("through the pool", func(t *testing.T) {
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		err := d.QueryRow(short, countTo, forever).Scan(new(int64))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		short, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		_, err = d.Exec(short, countTo, forever)
		require.ErrorIs(t, err, context.DeadlineExceeded)

		var n int64
		require.NoError(t, d.QueryRow(ctx, countTo, 10).Scan(&n))
		require.EqualValues(t, 10, n)
	})

	t.Run("while iterating", func(t *testing.T) {
		const steps = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $1) SELECT x FROM c"
		iterating, cancel := context.WithCancel(ctx)
		rows, err := d.Query(iterating, steps, forever)
		require.NoError(t, err)
		require.True(t, rows.Next())
		cancel()
		for rows.Next() { // drained until the cancellation ends it
		}
		require.ErrorIs(t, rows.Err(), context.Canceled)
		rows.Close()

		rows, err = d.Query(ctx, steps, 4)
		require.NoError(t, err)
		defer rows.Close()
		var xs []int
		for rows.Next() {
			var x int
			require.NoError(t, rows.Scan(&x))
			xs = append(xs, x)
		}
		require.NoError(t, rows.Err())
		require.Equal(t, []int{1, 2, 3, 4}, xs)
	})
}

// SQLite re-prepares a statement whose schema changed, so a cached SELECT *
// sees a column added after it was prepared.
func TestCachedSelectStarSeesAnAddedColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openNumbers(t, 1)
	const star = "SELECT * FROM nums WHERE n = $1"
	columns := func() ([]string, []any) {
		t.Helper()
		rows, err := d.SQL.QueryContext(ctx, star, 1)
		require.NoError(t, err)
		defer rows.Close()
		cols, err := rows.Columns()
		require.NoError(t, err)
		values := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range values {
			ptrs[i] = &values[i]
		}
		require.True(t, rows.Next())
		require.NoError(t, rows.Scan(ptrs...))
		require.NoError(t, rows.Err())
		return cols, values
	}

	cols, values := columns()
	require.Equal(t, []string{"n", "label"}, cols)
	require.Equal(t, []any{int64(1), "n1"}, values)

	_, err := d.Exec(ctx, "ALTER TABLE nums ADD COLUMN colour TEXT NOT NULL DEFAULT 'blue'")
	require.NoError(t, err)
	cols, values = columns()
	require.Equal(t, []string{"n", "label", "colour"}, cols)
	require.Equal(t, []any{int64(1), "n1", "blue"}, values)
}

func TestTransactionsRunThroughTheCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openNumbers(t, 0)
	const insert = "INSERT INTO nums (n, label) VALUES ($1, $2)"
	count := func(q db.Querier) int {
		t.Helper()
		var n int
		require.NoError(t, q.QueryRow(ctx, "SELECT count(*) FROM nums").Scan(&n))
		return n
	}

	require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
		for n := 1; n <= 3; n++ {
			_, err := tx.Exec(ctx, insert, n, "committed")
			require.NoError(t, err)
		}
		require.Equal(t, 3, count(tx))
		return nil
	}))

	rolledBack := errors.New("roll back")
	require.ErrorIs(t, d.InTx(ctx, func(tx *db.Tx) error {
		for n := 4; n <= 6; n++ {
			_, err := tx.Exec(ctx, insert, n, "rolled back")
			require.NoError(t, err)
		}
		require.Equal(t, 6, count(tx))
		return rolledBack
	}), rolledBack)

	require.Equal(t, 3, count(d))
	require.Equal(t, []string{"committed", "committed", "committed"}, labelsUpTo(t, d, 10))
	_, err := d.Exec(ctx, insert, 4, "after")
	require.NoError(t, err)
	require.Equal(t, 4, count(d))
}

func TestStatementsThatFailToPrepareAreNotCached(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openNumbers(t, 0)
	for range 2 {
		_, err := d.Exec(ctx, "SELEC 1")
		require.ErrorContains(t, err, "syntax error")
		_, err = d.Query(ctx, "SELECT * FROM nowhere")
		require.ErrorContains(t, err, "no such table")
	}
	cached := cachedQueries(t, d.SQL)
	require.NotContains(t, cached, "SELEC 1")
	require.NotContains(t, cached, "SELECT * FROM nowhere")
}

// Migrations run scripts of several statements; modernc parses a script
// statement by statement as it runs, so a cached one still runs them all,
// and an error in a later statement still surfaces, every time.
func TestScriptsRunWholeEveryTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openNumbers(t, 0)
	const good = "INSERT INTO nums (label) VALUES ('a'); INSERT INTO nums (label) VALUES ('b')"
	const bad = "INSERT INTO nums (label) VALUES ('c'); INSERT INTO nowhere VALUES (1)"
	for range 2 {
		_, err := d.Exec(ctx, good)
		require.NoError(t, err)
		_, err = d.Exec(ctx, bad)
		require.ErrorContains(t, err, "no such table: nowhere")
	}
	var labels string
	require.NoError(t, d.QueryRow(ctx, "SELECT group_concat(label, '') FROM (SELECT label FROM nums ORDER BY n)").Scan(&labels))
	require.Equal(t, "abcabc", labels)
}

// Many goroutines share the one connection; run under -race this checks
// that the cache is only touched by whoever holds the connection.
func TestConcurrentQueriesShareTheCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openNumbers(t, 20)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				upTo := 1 + (g+i)%20
				var sum int
				if err := d.QueryRow(ctx, "SELECT sum(n) FROM nums WHERE n <= $1", upTo).Scan(&sum); err != nil {
					errs <- err
					return
				}
				if sum != upTo*(upTo+1)/2 {
					errs <- fmt.Errorf("sum to %d: got %d", upTo, sum)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// Functions that take modernc's own connection reach it through the
// wrapper, and database/sql still sees the column types modernc reports.
func TestWrappedConnectionKeepsModerncsExtras(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openNumbers(t, 1)
	conn, err := d.SQL.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()

	columns, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_COLUMN, -1)
	require.NoError(t, err)
	require.Positive(t, columns)

	rows, err := conn.QueryContext(ctx, "SELECT n, label FROM nums")
	require.NoError(t, err)
	defer rows.Close()
	types, err := rows.ColumnTypes()
	require.NoError(t, err)
	require.Equal(t, "INTEGER", types[0].DatabaseTypeName())
	require.Equal(t, "TEXT", types[1].DatabaseTypeName())
	require.Equal(t, reflect.TypeFor[string](), types[1].ScanType())
	require.NoError(t, rows.Err())
}
