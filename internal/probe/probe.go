// Package probe is a diagnostic job: it records when a worker starts and
// finishes it, so that `superagent doctor` and the multi-process tests can
// see that workers are alive and that each job completes exactly once.
package probe

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
)

// Args are a probe job's arguments.
type Args struct {
	// Sleep is how long the worker holds the job between start and finish.
	Sleep time.Duration `json:"sleep,omitempty"`
}

// Kind names the job in River.
func (Args) Kind() string { return "probe" }

// InsertOpts puts probes on the maintenance queue.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue.Maintenance, MaxAttempts: 5}
}

// Worker works probe jobs.
type Worker struct {
	river.WorkerDefaults[Args]
	d      *db.DB
	worker string
	now    func() time.Time
}

// NewWorker returns a worker that records rows under the given worker name.
func NewWorker(d *db.DB, worker string, now func() time.Time) *Worker {
	return &Worker{d: d, worker: worker, now: now}
}

// Timeout bounds one probe run. River rescues a job from a dead process
// only after its timeout has passed, so it is kept just above the sleep.
func (w *Worker) Timeout(job *river.Job[Args]) time.Duration { return job.Args.Sleep + 10*time.Second }

// Work records the start, holds the job for Args.Sleep, records completion.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	if err := w.record(ctx, job.ID, "started"); err != nil {
		return err
	}
	// The sleep stands for work in flight, which a graceful stop lets
	// finish: it ends with the job's context only, not at the stop (as
	// a wait between attempts does).
	t := time.NewTimer(job.Args.Sleep)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return w.record(ctx, job.ID, "completed")
}

func (w *Worker) record(ctx context.Context, jobID int64, event string) error {
	_, err := w.d.Exec(ctx,
		"INSERT INTO probes (job_id, event, worker, created_at) VALUES ($1, $2, $3, $4)",
		jobID, event, w.worker, w.now().UTC())
	if err != nil {
		return fmt.Errorf("recording probe %d %s: %w", jobID, event, err)
	}
	return nil
}
