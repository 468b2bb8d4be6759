package orchestrator

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/internal/retry"
	"github.com/superagent-dev/superagent/jobs"
)

// RouteWorker runs turns (jobs.RouteArgs).
type RouteWorker struct {
	river.WorkerDefaults[jobs.RouteArgs]
	o *Orchestrator
}

// Timeout bounds one turn.
func (w *RouteWorker) Timeout(*river.Job[jobs.RouteArgs]) time.Duration { return w.o.cfg.TurnTimeout }

// Work runs turns under the lease until nothing waits. The job is
// available as soon as it is inserted; the turn itself waits out the
// debounce, holding the lease, so a due turn starts when due rather than
// when River next promotes scheduled jobs. A job rescued after its
// process died keeps its id, so it takes its own lease back at once;
// another job waits until the lease is free.
func (w *RouteWorker) Work(ctx context.Context, job *river.Job[jobs.RouteArgs]) error {
	holder := "job:" + strconv.FormatInt(job.ID, 10)
	for {
		res, err := w.o.timedTurn(ctx, holder, true)
		switch {
		case errors.Is(err, ErrLeaseHeld):
			if err := w.o.waitForLease(ctx); err != nil {
				return err
			}
		case err != nil:
			return err
		case !res.More:
			return nil
		}
		// Something arrived after the turn's last look, while this job
		// still ran and so absorbed its insert: run again.
	}
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
// once no card was made for Settle, or after ten Settles.
func (o *Orchestrator) settle(ctx context.Context) error {
	deadline := o.cfg.Now().Add(10 * o.cfg.Settle)
	last, err := o.latestCard(ctx)
	for err == nil && o.cfg.Now().Before(deadline) {
		if err := retry.Sleep(ctx, o.cfg.Settle); err != nil {
			return err
		}
		var now int64
		if now, err = o.latestCard(ctx); now == last {
			return nil
		}
		last = now
	}
	return err
}

func (o *Orchestrator) latestCard(ctx context.Context) (int64, error) {
	var id int64
	err := o.deps.DB.QueryRow(ctx, "SELECT COALESCE(MAX(id), 0) FROM cards").Scan(&id)
	return id, err
}
