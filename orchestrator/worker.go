package orchestrator

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/internal/queue"
)

// RouteArgs is the main Session's turn job. It has no fields: with unique
// insert options there is at most one waiting or running across processes.
type RouteArgs struct {
	// Slot tells apart the two turn jobs that may exist at once: one
	// running, and one scheduled behind it for what arrived too late for
	// the running turn to see (see ScheduleTurn).
	Slot int `json:"slot,omitempty"`
}

// Kind names the job.
func (RouteArgs) Kind() string { return "route_turn" }

// InsertOpts puts turns on the routing queue.
func (RouteArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queue.Routing} }

// RouteWorker runs turns.
type RouteWorker struct {
	river.WorkerDefaults[RouteArgs]
	o *Orchestrator
}

// Timeout bounds one turn.
func (w *RouteWorker) Timeout(*river.Job[RouteArgs]) time.Duration { return w.o.cfg.TurnTimeout }

// Work runs one turn under the lease. A job rescued after its process died
// keeps its id, so it takes its own lease back at once; another turn
// snoozes until the lease is free.
func (w *RouteWorker) Work(ctx context.Context, job *river.Job[RouteArgs]) error {
	res, err := w.o.Turn(ctx, "job:"+strconv.FormatInt(job.ID, 10))
	switch {
	case errors.Is(err, ErrLeaseHeld):
		return river.JobSnooze(w.o.cfg.Debounce)
	case err == nil && res.More:
		// Something arrived after the turn's last look, while this job
		// still ran and so absorbed its insert: run again.
		return river.JobSnooze(w.o.cfg.Debounce)
	}
	return err
}

// ExecuteArgs is a Ticket's Executor job, one per Ticket at a time.
type ExecuteArgs struct {
	TicketID int64 `json:"ticket_id"`
	// Slot tells apart a running job and the one queued behind it (see
	// EnqueueExecutor).
	Slot int `json:"slot,omitempty"`
}

// Kind names the job.
func (ExecuteArgs) Kind() string { return "execute_ticket" }

// InsertOpts puts Executors on the execution queue.
func (ExecuteArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queue.Execution} }

// ReviveArgs is the periodic job that restarts the main Session when the
// process running its turn died: River itself would wait for the turn's
// timeout, the lease tells much sooner.
type ReviveArgs struct{}

// Kind names the job.
func (ReviveArgs) Kind() string { return "route_watchdog" }

// InsertOpts puts it on the maintenance queue, one waiting or running at
// a time.
func (ReviveArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue.Maintenance, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: queue.Unfinished()}}
}

// ReviveWorker works ReviveArgs.
type ReviveWorker struct {
	river.WorkerDefaults[ReviveArgs]
	o *Orchestrator
}

// Timeout bounds one check.
func (w *ReviveWorker) Timeout(*river.Job[ReviveArgs]) time.Duration { return time.Minute }

// Work revives the main Session if its lease lapsed.
func (w *ReviveWorker) Work(ctx context.Context, _ *river.Job[ReviveArgs]) error {
	_, err := w.o.Revive(ctx)
	return err
}
