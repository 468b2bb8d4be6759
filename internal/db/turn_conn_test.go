package db_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
)

// openLog opens a SQLite database holding an empty log(who).
func openLog(t *testing.T) (*db.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "turns.db")
	d, err := db.Open(context.Background(), "sqlite://"+path, db.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	_, err = d.Exec(context.Background(), "CREATE TABLE log (seq INTEGER PRIMARY KEY, who TEXT NOT NULL)")
	require.NoError(t, err)
	return d, path
}

// holdTheConnection begins a transaction that has written 'holder', so
// that it holds SQLite's connection until it ends.
func holdTheConnection(t *testing.T, d *db.DB) *db.Tx {
	t.Helper()
	ctx := context.Background()
	holder, err := d.Begin(ctx)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, "INSERT INTO log (who) VALUES ('holder')")
	require.NoError(t, err)
	return holder
}

// waitForWaiters returns once n callers wait for the connection.
func waitForWaiters(t *testing.T, d *db.DB, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for db.WaitingForTurn(d) < n {
		require.True(t, time.Now().Before(deadline), "%d callers waiting, want %d", db.WaitingForTurn(d), n)
		runtime.Gosched()
	}
}

func logged(t *testing.T, d *db.DB) []string {
	t.Helper()
	rows, err := d.Query(context.Background(), "SELECT who FROM log ORDER BY seq")
	require.NoError(t, err)
	defer rows.Close()
	var who []string
	for rows.Next() {
		var w string
		require.NoError(t, rows.Scan(&w))
		who = append(who, w)
	}
	require.NoError(t, rows.Err())
	return who
}

// Callers waiting for SQLite's one connection get it in the order they
// asked, whatever they run: statements, transactions, River-style dedicated
// connections. database/sql alone would wake them at random.
func TestCallersGetTheConnectionInTheOrderTheyAsked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openLog(t)
	holder := holdTheConnection(t, d)

	const callers = 24
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	var want []string
	for i := range callers {
		who := fmt.Sprintf("caller %02d", i)
		want = append(want, who)
		wg.Go(func() {
			var err error
			switch i % 3 {
			case 0:
				_, err = d.Exec(ctx, "INSERT INTO log (who) VALUES ($1)", who)
			case 1:
				err = d.InTx(ctx, func(tx *db.Tx) error {
					_, err := tx.Exec(ctx, "INSERT INTO log (who) VALUES ($1)", who)
					return err
				})
			default:
				var conn *sql.Conn
				if conn, err = d.SQL.Conn(ctx); err == nil {
					_, err = conn.ExecContext(ctx, "INSERT INTO log (who) VALUES ($1)", who)
					err = errors.Join(err, conn.Close())
				}
			}
			errs <- err
		})
		// The next caller asks only once this one waits.
		waitForWaiters(t, d, int64(i+1))
		time.Sleep(2 * time.Millisecond)
	}
	require.NoError(t, holder.Commit(ctx))
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, append([]string{"holder"}, want...), logged(t, d))
}

// A checkout keeps the connection from its first statement to its end: no
// other caller's statement runs inside another's transaction or between a
// dedicated connection's statements.
func TestACheckoutKeepsTheConnectionToItsEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openLog(t)

	conn, err := d.SQL.Conn(ctx)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "INSERT INTO log (who) VALUES ('dedicated')")
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := d.Exec(ctx, "INSERT INTO log (who) VALUES ('outsider')")
		done <- err
	}()
	waitForWaiters(t, d, 1)

	tx, err := conn.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "INSERT INTO log (who) VALUES ('rolled back')")
	require.NoError(t, err)
	require.NoError(t, tx.Rollback())
	_, err = conn.ExecContext(ctx, "INSERT INTO log (who) VALUES ('dedicated again')")
	require.NoError(t, err)
	select {
	case err := <-done:
		t.Fatalf("the outsider ran while the connection was held: %v", err)
	default:
	}
	require.NoError(t, conn.Close())
	require.NoError(t, <-done)
	require.Equal(t, []string{"dedicated", "dedicated again", "outsider"}, logged(t, d))
}

// A caller whose context ends while it waits leaves the queue with the
// context's error, and the callers behind it are not held up.
func TestAWaiterWhoseContextEndsLeavesTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openLog(t)
	holder := holdTheConnection(t, d)

	impatient, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := d.Exec(impatient, "INSERT INTO log (who) VALUES ('impatient')")
		gaveUp <- err
	}()
	waitForWaiters(t, d, 1)
	patient := make(chan error, 1)
	go func() {
		_, err := d.Exec(ctx, "INSERT INTO log (who) VALUES ('patient')")
		patient <- err
	}()
	waitForWaiters(t, d, 2)
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)

	require.NoError(t, holder.Commit(ctx))
	require.NoError(t, <-patient)
	require.Equal(t, []string{"holder", "patient"}, logged(t, d))
}

// River discards a dedicated connection whose BEGIN it does not trust; a
// connection discarded in the middle of a transaction takes the transaction
// with it, and the next caller starts clean on a fresh SQLite connection.
func TestAConnectionDiscardedMidTransactionRollsItBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openLog(t)

	conn, err := d.SQL.Conn(ctx)
	require.NoError(t, err)
	// A transaction begun in SQL, not through database/sql, which would
	// refuse to discard a connection its Tx still holds.
	_, err = conn.ExecContext(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "INSERT INTO log (who) VALUES ('discarded')")
	require.NoError(t, err)
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()

	// Were the transaction still open, BEGIN would fail inside it and the
	// row would be there.
	require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO log (who) VALUES ('next')")
		return err
	}))
	require.Equal(t, []string{"next"}, logged(t, d))
}

// A statement prepared on the pool runs in whichever checkout database/sql
// gives it, and only in its turn; closed while another caller holds the
// connection, it is finalized at the next turn.
func TestAPoolStatementRunsOnlyInItsTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openLog(t)

	insert, err := d.SQL.PrepareContext(ctx, "INSERT INTO log (who) VALUES ($1)") //nolint:sqlclosecheck // closed below, while another caller holds the connection
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		wg.Go(func() {
			_, err := insert.ExecContext(ctx, fmt.Sprintf("stmt %d", i))
			errs <- err
		})
		wg.Go(func() {
			errs <- d.InTx(ctx, func(tx *db.Tx) error {
				_, err := tx.Exec(ctx, "INSERT INTO log (who) VALUES ($1)", fmt.Sprintf("tx %d", i))
				if err != nil {
					return err
				}
				var n int
				return tx.QueryRow(ctx, "SELECT count(*) FROM log").Scan(&n)
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, logged(t, d), 40)

	holder, err := d.Begin(ctx)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, "DELETE FROM log")
	require.NoError(t, err)
	require.NoError(t, insert.Close())
	require.NoError(t, holder.Commit(ctx))
	_, err = d.Exec(ctx, "INSERT INTO log (who) VALUES ('after')")
	require.NoError(t, err)
	require.Equal(t, []string{"after"}, logged(t, d))
}

// Closing the database while a caller holds the connection closes it when
// that caller is done: the file is then free for another process to write.
func TestClosingWhileTheConnectionIsHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openLog(t)

	holder, err := d.SQL.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = holder.ExecContext(ctx, "INSERT INTO log (who) VALUES ('last')")
	require.NoError(t, err)
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	require.Eventually(t, func() bool { return db.TurnsClosed(d) }, time.Minute, time.Millisecond)
	require.NoError(t, holder.Commit())
	require.NoError(t, <-closed)

	again, err := db.Open(ctx, "sqlite://"+path, db.Options{})
	require.NoError(t, err)
	defer again.Close()
	_, err = again.Exec(ctx, "INSERT INTO log (who) VALUES ('next process')")
	require.NoError(t, err)
	require.Equal(t, []string{"last", "next process"}, logged(t, again))
}
