package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/jobs"
	"github.com/superagent-dev/superagent/tickets"
)

// WatchArgs is the periodic job that restarts Executors whose process
// died. River itself rescues a running job only after the job's own
// timeout (hours, for an Executor); the lease says much sooner that its
// holder is gone.
type WatchArgs struct{}

// Kind names the job.
func (WatchArgs) Kind() string { return "executor_watchdog" }

// InsertOpts puts it on the roles' upkeep queue, one waiting or running
// at a time.
func (WatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue.Upkeep, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: queue.Unfinished()}}
}

// Watchdog is the worker for WatchArgs.
type Watchdog struct {
	river.WorkerDefaults[WatchArgs]
	e *Executor
}

// Timeout bounds one sweep.
func (w *Watchdog) Timeout(*river.Job[WatchArgs]) time.Duration { return time.Minute }

// Work restarts the Executors whose lease lapsed, removes this machine's
// workspaces of Tickets that ended, deletes their checkpoints, and sends
// the stop acknowledgements no job will release.
func (w *Watchdog) Work(ctx context.Context, _ *river.Job[WatchArgs]) error {
	if _, err := w.e.Revive(ctx); err != nil {
		return err
	}
	if _, err := w.e.SweepWorkspaces(ctx); err != nil {
		return err
	}
	if _, err := w.e.SweepCheckpoints(ctx); err != nil {
		return err
	}
	_, err := w.e.ReleaseOrphanedHolds(ctx)
	return err
}

// ReleaseOrphanedHolds sends the held messages (a stop's acknowledgement)
// of Tickets that no Executor job will release: none waits or runs for
// them, because the last one was discarded or cancelled. It returns how
// many Tickets it released.
func (e *Executor) ReleaseOrphanedHolds(ctx context.Context) (int, error) {
	held, err := e.deps.Tickets.TicketsWithHeldOutgoing(ctx, e.deps.DB)
	if err != nil || len(held) == 0 {
		return 0, err
	}
	live, err := e.ticketsWithJobs(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range held {
		if live[id] {
			continue
		}
		e.cfg.Logger.Warn("releasing a stop acknowledgement that no executor job will release", "ticket", id)
		if err := e.releaseHeld(ctx, id); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// ticketsWithJobs lists the Tickets whose Executor job waits or runs.
func (e *Executor) ticketsWithJobs(ctx context.Context) (map[int64]bool, error) {
	states := queue.Unfinished()
	args := make([]any, 0, len(states))
	marks := make([]string, 0, len(states))
	for i, st := range states {
		args = append(args, string(st))
		marks = append(marks, fmt.Sprintf("$%d", i+1))
	}
	// River keeps arguments as jsonb on PostgreSQL and as SQLite's binary
	// JSONB: both read back as JSON text.
	text := "args::text"
	if e.deps.DB.Dialect() == db.SQLite {
		text = "json(args)"
	}
	rows, err := e.deps.DB.Query(ctx, `SELECT `+text+` FROM river_job WHERE kind = 'execute_ticket' AND state IN (`+strings.Join(marks, ", ")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("listing executor jobs: %w", err)
	}
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("listing executor jobs: %w", err)
		}
		var a jobs.ExecuteArgs
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			return nil, fmt.Errorf("reading an executor job's arguments: %w", err)
		}
		out[a.TicketID] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing executor jobs: %w", err)
	}
	return out, nil
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
