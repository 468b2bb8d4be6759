package orchestrator

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/jobs"
)

// RouteWorker runs turns (jobs.RouteArgs).
type RouteWorker struct {
	river.WorkerDefaults[jobs.RouteArgs]
	o *Orchestrator
}

// Timeout bounds one turn.
func (w *RouteWorker) Timeout(*river.Job[jobs.RouteArgs]) time.Duration { return w.o.cfg.TurnTimeout }

// Work runs one turn under the lease. A job rescued after its process died
// keeps its id, so it takes its own lease back at once; another turn
// snoozes until the lease is free.
func (w *RouteWorker) Work(ctx context.Context, job *river.Job[jobs.RouteArgs]) error {
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

// ReviveWorker works jobs.ReviveArgs.
type ReviveWorker struct {
	river.WorkerDefaults[jobs.ReviveArgs]
	o *Orchestrator
}

// Timeout bounds one check.
func (w *ReviveWorker) Timeout(*river.Job[jobs.ReviveArgs]) time.Duration { return time.Minute }

// Work revives the main Session if its lease lapsed.
func (w *ReviveWorker) Work(ctx context.Context, _ *river.Job[jobs.ReviveArgs]) error {
	_, err := w.o.Revive(ctx)
	return err
}
