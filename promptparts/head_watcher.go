package promptparts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/retry"
)

// notifyChannel is the PostgreSQL channel every save announces its revision
// on, in the saving transaction, so listeners hear it only once it commits.
// Channels are shared by the whole database, so the payload names the
// schema ("<schema>:<revision>"): deployments (or test runs) in other
// schemas of the same database do not move this one's head.
const notifyChannel = "superagent_prompt_revision"

// headWatcher spares PostgreSQL a round trip per model request: one
// connection per process LISTENs for saves and keeps the latest revision in
// memory. While it is not listening (SQLite, not started, connection lost)
// every read asks the database, so a save is never missed, only heard a
// moment later from another process.
type headWatcher struct {
	head      atomic.Int64
	listening atomic.Bool
	// pid is the listening connection's backend, for tests that cut it.
	pid atomic.Uint32
	// check bounds how long a silently broken connection could go
	// unnoticed: the watcher re-reads the head on its connection this often.
	check time.Duration

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	stmt    *sql.Stmt
	stopped bool
}

// advance records rev as the latest revision if it is newer.
func (w *headWatcher) advance(rev int64) {
	for {
		cur := w.head.Load()
		if rev <= cur || w.head.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// latestRevision returns the latest revision: from the watcher while it
// listens, else from the database.
func (s *Service) latestRevision(ctx context.Context) (int64, error) {
	if s.watch.listening.Load() {
		return s.watch.head.Load(), nil
	}
	if st := s.headStatement(ctx); st != nil { //nolint:sqlclosecheck // lives as long as the service; Stop closes it
		var head int64
		if err := st.QueryRowContext(ctx).Scan(&head); err != nil {
			return 0, fmt.Errorf("reading the latest prompt revision: %w", err)
		}
		return head, nil
	}
	head, err := s.store.head(ctx, s.db)
	if err == nil {
		// A listener that starts (or comes back) may not have read the
		// notification of a save a caller has already seen here: keep the
		// head from going back when calls switch to the listener.
		s.watch.advance(head)
	}
	return head, err
}

// headStatement is the head query prepared once on SQLite, where parsing it
// costs as much as running it. nil on PostgreSQL (pgx caches prepared
// statements itself) or when preparing failed.
func (s *Service) headStatement(ctx context.Context) *sql.Stmt {
	if s.db.Dialect() != db.SQLite {
		return nil
	}
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	if s.watch.stmt == nil && !s.watch.stopped {
		st, err := s.db.SQL.PrepareContext(ctx, headQuery)
		if err != nil {
			return nil
		}
		s.watch.stmt = st
	}
	return s.watch.stmt
}

// notify announces rev inside the saving transaction (PostgreSQL only).
func (s *Service) notify(ctx context.Context, tx *db.Tx, rev int64) error {
	if s.db.Dialect() != db.Postgres {
		return nil
	}
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, current_schema() || ':' || $2)`, notifyChannel, strconv.FormatInt(rev, 10))
	return err
}

// startWatching starts the listener on PostgreSQL; it stops when ctx ends or
// on Stop.
func (s *Service) startWatching(ctx context.Context) {
	pool := s.db.Pool()
	if pool == nil {
		return
	}
	w := &s.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil {
		return
	}
	ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		s.watchLoop(ctx, pool)
	}()
}

// Stop ends the PostgreSQL listener started by Start, waits for it and
// releases the prepared head query. The service keeps working, reading the
// head with a plain query per call.
func (s *Service) Stop() {
	w := &s.watch
	w.mu.Lock()
	cancel, done, stmt := w.cancel, w.done, w.stmt
	w.stmt, w.stopped = nil, true
	w.mu.Unlock()
	if stmt != nil {
		_ = stmt.Close()
	}
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

func (s *Service) watchLoop(ctx context.Context, pool *pgxpool.Pool) {
	backoff := 100 * time.Millisecond
	for {
		err := s.listenOnce(ctx, pool)
		s.watch.listening.Store(false)
		if ctx.Err() != nil {
			return
		}
		s.cfg.Logger.Warn("prompt revision listener lost its connection; reading the revision per request until it is back", "error", err)
		if retry.Sleep(ctx, backoff) != nil {
			return
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// listenOnce holds one connection: LISTEN, then read the head (in that
// order, so no save falls between), then follow notifications.
func (s *Service) listenOnce(ctx context.Context, pool *pgxpool.Pool) error {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection carries a LISTEN: never give it back to the pool.
	conn := pc.Hijack()
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()

	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	refresh := func() error {
		var head int64
		if err := conn.QueryRow(ctx, headQuery).Scan(&head); err != nil {
			return err
		}
		s.watch.advance(head)
		return nil
	}
	if err := refresh(); err != nil {
		return err
	}
	s.watch.pid.Store(conn.PgConn().PID())
	s.watch.listening.Store(true)
	check := s.watch.check
	if check <= 0 {
		check = 5 * time.Second
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, check)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if from, rev, ok := strings.Cut(n.Payload, ":"); ok && from == schema {
				if r, perr := strconv.ParseInt(rev, 10, 64); perr == nil {
					s.watch.advance(r)
				}
			}
		case ctx.Err() != nil:
			return ctx.Err()
		case (errors.Is(err, context.DeadlineExceeded) || isTimeout(err)) && !conn.PgConn().IsClosed():
			if err := refresh(); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
