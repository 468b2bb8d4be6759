package db

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// checkpointInterval is how often the WAL is folded back into the database
// file. A passive checkpoint copies what no reader still needs and never
// blocks the writer, so a short interval keeps the WAL small at little cost.
const checkpointInterval = 250 * time.Millisecond

// checkpointer folds SQLite's write-ahead log into the database file from a
// second connection, so that no request pays for it. The service's own
// connection has automatic checkpoints turned off.
type checkpointer struct {
	conn     *sql.DB
	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func startCheckpointer(dsn, path string) (*checkpointer, error) {
	conn, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening checkpoint connection to %s: %w", path, err)
	}
	conn.SetMaxOpenConns(1)
	c := &checkpointer{conn: conn, quit: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			// Errors (a busy database) are transient: the next tick retries.
			_, _ = c.conn.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
			cancel()
		}
	}
}

// stop ends the checkpointer after a last full checkpoint. It may be called
// more than once (a DB closed twice) and is a no-op on a nil receiver
// (PostgreSQL).
func (c *checkpointer) stop() {
	if c == nil {
		return
	}
	c.stopOnce.Do(func() {
		close(c.quit)
		<-c.done
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = c.conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
		_ = c.conn.Close()
	})
}
