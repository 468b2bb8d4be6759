package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/tickets"
)

// WatchArgs is the periodic job that restarts Executors whose process
// died. River itself rescues a running job only after the job's own
// timeout (hours, for an Executor); the lease says much sooner that its
// holder is gone.
type WatchArgs struct{}

// Kind names the job.
func (WatchArgs) Kind() string { return "executor_watchdog" }

// InsertOpts puts it on the maintenance queue, one waiting or running at
// a time.
func (WatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue.Maintenance, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: queue.Unfinished()}}
}

// Watchdog is the worker for WatchArgs.
type Watchdog struct {
	river.WorkerDefaults[WatchArgs]
	e *Executor
}

// Timeout bounds one sweep.
func (w *Watchdog) Timeout(*river.Job[WatchArgs]) time.Duration { return time.Minute }

// Work restarts the Executors whose lease lapsed, removes this machine's
// workspaces of Tickets that ended, and deletes their checkpoints.
func (w *Watchdog) Work(ctx context.Context, _ *river.Job[WatchArgs]) error {
	if _, err := w.e.Revive(ctx); err != nil {
		return err
	}
	if _, err := w.e.SweepWorkspaces(ctx); err != nil {
		return err
	}
	_, err := w.e.SweepCheckpoints(ctx)
	return err
}

// SweepWorkspaces removes this machine's workspaces of Tickets that ended
// (or no longer exist) while no Executor of theirs ran here, such as a
// Ticket the main Session stopped. Each process calls it at start; the
// watchdog calls it on the machine it runs on.
func (e *Executor) SweepWorkspaces(ctx context.Context) (int, error) {
	var lookupErr error
	n, err := e.deps.Workspaces.Sweep(func(ticketID int64) bool {
		t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, ticketID)
		switch {
		case errors.Is(err, tickets.ErrNotFound):
			return false
		case err != nil:
			lookupErr = err
			return true
		}
		return !tickets.Ended(t.State)
	})
	if err == nil {
		err = lookupErr
	}
	if err != nil {
		return n, fmt.Errorf("sweeping workspaces: %w", err)
	}
	return n, nil
}

// Revive frees the leases whose holder stopped renewing them (its process
// died) and enqueues those Tickets' Executors again; the Session resumes
// where it stopped. It returns how many it revived.
func (e *Executor) Revive(ctx context.Context) (int, error) {
	now := e.cfg.Now().UTC()
	rows, err := e.deps.DB.Query(ctx, `SELECT ticket_id, holder FROM executions WHERE holder <> '' AND lease_until < $1`, now)
	if err != nil {
		return 0, fmt.Errorf("listing lapsed executor leases: %w", err)
	}
	type lapsed struct {
		ticket int64
		holder string
	}
	var found []lapsed
	for rows.Next() {
		var l lapsed
		if err := rows.Scan(&l.ticket, &l.holder); err != nil {
			rows.Close()
			return 0, fmt.Errorf("listing lapsed executor leases: %w", err)
		}
		found = append(found, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("listing lapsed executor leases: %w", err)
	}
	revived := 0
	for _, l := range found {
		err := e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
			n, err := tx.Exec(ctx, `UPDATE executions SET holder = '', lease_until = NULL
WHERE ticket_id = $1 AND holder = $2 AND lease_until < $3`, l.ticket, l.holder, now)
			if err != nil || n == 0 {
				return err
			}
			t, err := e.deps.Tickets.Ticket(ctx, tx, l.ticket)
			if err != nil {
				return err
			}
			if t.Pause != nil || t.Proposal || tickets.Ended(t.State) {
				return nil
			}
			revived++
			e.cfg.Logger.Warn("restarting an executor whose process stopped renewing its lease", "ticket", l.ticket, "holder", l.holder)
			return e.deps.Wake.WakeExecutor(ctx, tx, l.ticket)
		})
		if err != nil {
			return revived, fmt.Errorf("reviving the executor of ticket %d: %w", l.ticket, err)
		}
	}
	return revived, nil
}
