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
	if job.Attempt == 1 {
		w.o.settle(ctx)
	}
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

// settle lets a burst finish arriving before a turn reads it: it returns
// once no card was made for Settle, or after ten Settles. A turn that was
// debounced finds the burst in already and returns after one Settle.
func (o *Orchestrator) settle(ctx context.Context) {
	deadline := time.Now().Add(10 * o.cfg.Settle)
	last, err := o.latestCard(ctx)
	for err == nil && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(o.cfg.Settle):
		}
		var now int64
		if now, err = o.latestCard(ctx); now == last {
			return
		}
		last = now
	}
}

func (o *Orchestrator) latestCard(ctx context.Context) (int64, error) {
	var id int64
	err := o.deps.DB.QueryRow(ctx, "SELECT COALESCE(MAX(id), 0) FROM cards").Scan(&id)
	return id, err
}
