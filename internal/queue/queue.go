// Package queue runs superagent's River client on either database. It hides
// that River's client is generic over the driver's transaction type, so the
// rest of the service enqueues jobs inside its own db.Tx on SQLite and
// PostgreSQL alike.
package queue

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"

	"github.com/superagent-dev/superagent/internal/db"
)

// The queues the product uses. Each has its own concurrency so that a burst
// of webhooks never waits behind a long Executor Session.
const (
	// Ingestion turns stored deliveries into Trigger cards.
	Ingestion = "ingestion"
	// Routing runs the main Session's turns.
	Routing = "routing"
	// Execution runs Executor Sessions.
	Execution = "execution"
	// Upkeep runs the roles' own housekeeping (their watchdogs, Feishu
	// status cards): like Routing and Execution, only a process with a
	// model works it.
	Upkeep = "upkeep"
	// Maintenance runs diagnostics and housekeeping any process can work.
	Maintenance = river.QueueDefault
)

// Roles are the queues only a process with a model works: their jobs wait
// while no such process runs.
var Roles = []string{Routing, Execution, Upkeep}

// WaitingForRoles counts the jobs waiting in the Roles queues: what waits
// for a process with a model.
func WaitingForRoles(ctx context.Context, q db.Querier) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM river_job WHERE queue IN ($1, $2, $3)
AND state IN ('available', 'scheduled', 'retryable', 'pending')`, Routing, Execution, Upkeep).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting the jobs waiting for a process with a model: %w", err)
	}
	return n, nil
}

// Config tunes the client. The zero value is the documented default.
type Config struct {
	// ID names this process in River's job rows. Default: host name and pid.
	ID string
	// Ingestion, Routing, Execution, Upkeep and Maintenance are the number
	// of jobs of each queue this process works at once. Defaults: 8, 1, 2,
	// 2 and 2. A process fetches only the queues it has a worker for.
	Ingestion, Routing, Execution, Upkeep, Maintenance int
	// RescueAfter is how long a job may run before River presumes its process
	// dead and makes it available again. Default: one hour. Every worker's own
	// timeout is shorter than this.
	RescueAfter time.Duration
	// FetchPollInterval is how often an idle client looks for new jobs when no
	// notification arrives. Default: River's (one second on PostgreSQL, where
	// LISTEN/NOTIFY wakes it sooner; SQLite is polled every 50 ms by River).
	FetchPollInterval time.Duration
	// FetchCooldown is the least time between two fetches. Default: River's.
	FetchCooldown time.Duration
	// InsertOnly builds a client that enqueues but never works jobs.
	InsertOnly bool
	// Logger receives River's logs, its INFO lines at DEBUG, and a line
	// for every failed attempt of a job (WARN) and every job given up
	// (ERROR). Default: discarded.
	Logger *slog.Logger
	// Registerer receives job metrics. Default: none.
	Registerer prometheus.Registerer
}

// Queue is the River client of one process.
type Queue struct {
	d   *db.DB
	cfg Config
	// log is Config.Logger as given, for the jobs' failures; River's own
	// lines go through cfg.Logger, demoted.
	log     *slog.Logger
	workers *river.Workers
	// worked are the queues this process has a worker for: the ones it
	// fetches.
	worked map[string]bool
	// stopping is closed when Stop begins: the jobs' waits between
	// attempts end (see retry.WithStop).
	stopping chan struct{}
	stopOnce sync.Once
	// periodic are the jobs River's leader enqueues on a schedule.
	periodic []*river.PeriodicJob
	pg       *river.Client[pgx.Tx]
	lite     *river.Client[*sql.Tx]
	metrics  *metrics
}

// ErrNotInitialized is returned when a job is inserted before Init.
var ErrNotInitialized = errors.New("queue used before Init")

// New prepares a queue. Register workers with AddWorker, then call Init.
func New(d *db.DB, cfg Config) *Queue {
	if cfg.ID == "" {
		host, _ := os.Hostname()
		cfg.ID = host + "-" + strconv.Itoa(os.Getpid())
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	q := &Queue{d: d, log: cfg.Logger, workers: river.NewWorkers(), worked: map[string]bool{}, stopping: make(chan struct{})}
	cfg.Logger = quiet(cfg.Logger)
	q.cfg = cfg
	return q
}

// AddWorker registers a worker, and has this process fetch the queue its
// job kind is inserted in. It must be called before Init.
func AddWorker[T river.JobArgs](q *Queue, w river.Worker[T]) {
	river.AddWorker(q.workers, w)
	var args T
	name := river.QueueDefault
	if o, ok := any(args).(river.JobArgsWithInsertOpts); ok && o.InsertOpts().Queue != "" {
		name = o.InsertOpts().Queue
	}
	q.worked[name] = true
}

// Works reports whether this process fetches the queue name.
func (q *Queue) Works(name string) bool { return q.worked[name] }

// Unfinished lists the job states in which a unique job counts as already
// there: waiting or running. Unlike River's default, a completed job does
// not keep the next one out.
func Unfinished() []rivertype.JobState {
	return []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
		rivertype.JobStateScheduled, rivertype.JobStateRetryable,
	}
}

// AddPeriodic has River enqueue args every interval (and once at start),
// from whichever process leads. It must be called before Init.
func AddPeriodic(q *Queue, interval time.Duration, args river.JobArgs) {
	q.periodic = append(q.periodic, river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return args, nil }, &river.PeriodicJobOpts{RunOnStart: true}))
}

// ID is the name this process gives River.
func (q *Queue) ID() string { return q.cfg.ID }

// Init builds the River client once every worker is registered.
func (q *Queue) Init() error {
	rc := &river.Config{
		ID:                   q.cfg.ID,
		Logger:               q.cfg.Logger,
		JobTimeout:           -1, // every worker sets its own Timeout
		RescueStuckJobsAfter: cmp.Or(q.cfg.RescueAfter, time.Hour),
		FetchPollInterval:    q.cfg.FetchPollInterval,
		FetchCooldown:        q.cfg.FetchCooldown,
		Workers:              q.workers,
	}
	if q.cfg.InsertOnly {
		// An insert-only client may enqueue kinds it has no worker for.
		rc.Workers = nil
	} else {
		rc.PeriodicJobs = q.periodic
		rc.Middleware = []rivertype.Middleware{&attempts{q: q}}
		// A queue is fetched only where its jobs can be worked: a process
		// without a model leaves the roles' jobs waiting for one with it,
		// rather than failing them as kinds it does not know.
		rc.Queues = map[string]river.QueueConfig{}
		for name, n := range map[string]int{
			Ingestion:   cmp.Or(q.cfg.Ingestion, 8),
			Routing:     cmp.Or(q.cfg.Routing, 1),
			Execution:   cmp.Or(q.cfg.Execution, 2),
			Upkeep:      cmp.Or(q.cfg.Upkeep, 2),
			Maintenance: cmp.Or(q.cfg.Maintenance, 2),
		} {
			if q.worked[name] {
				rc.Queues[name] = river.QueueConfig{MaxWorkers: n}
			}
		}
	}
	var err error
	if q.d.Dialect() == db.Postgres {
		q.pg, err = river.NewClient(riverpgxv5.New(q.d.Pool()), rc)
	} else {
		q.lite, err = river.NewClient(riversqlite.New(q.d.SQL), rc)
	}
	if err != nil {
		return fmt.Errorf("creating River client: %w", err)
	}
	if q.cfg.Registerer != nil {
		q.metrics, err = newMetrics(q.cfg.Registerer)
		if err != nil {
			return err
		}
	}
	return nil
}

// InsertTx enqueues a job inside tx: it becomes visible only if tx commits.
func (q *Queue) InsertTx(ctx context.Context, tx *db.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	switch {
	case q.pg != nil:
		if err := tx.Flush(ctx); err != nil {
			return nil, err
		}
		return q.pg.InsertTx(ctx, tx.PgxTx(), args, opts)
	case q.lite != nil:
		return q.lite.InsertTx(ctx, tx.SQLTx(), args, opts)
	}
	return nil, ErrNotInitialized
}

// InsertManyTx enqueues several jobs inside tx with one statement, which is
// far cheaper than as many InsertTx calls. Results are in the order given.
func (q *Queue) InsertManyTx(ctx context.Context, tx *db.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	switch {
	case q.pg != nil:
		if err := tx.Flush(ctx); err != nil {
			return nil, err
		}
		return q.pg.InsertManyTx(ctx, tx.PgxTx(), params)
	case q.lite != nil:
		return q.lite.InsertManyTx(ctx, tx.SQLTx(), params)
	}
	return nil, ErrNotInitialized
}

// Insert enqueues a job in its own transaction. On SQLite, never call it
// while holding a transaction: the single connection is taken.
func (q *Queue) Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	switch {
	case q.pg != nil:
		return q.pg.Insert(ctx, args, opts)
	case q.lite != nil:
		return q.lite.Insert(ctx, args, opts)
	}
	return nil, ErrNotInitialized
}

// JobGet reads a job by id.
func (q *Queue) JobGet(ctx context.Context, id int64) (*rivertype.JobRow, error) {
	switch {
	case q.pg != nil:
		return q.pg.JobGet(ctx, id)
	case q.lite != nil:
		return q.lite.JobGet(ctx, id)
	}
	return nil, ErrNotInitialized
}

// JobCancel cancels a job; a running one sees its context cancelled.
func (q *Queue) JobCancel(ctx context.Context, id int64) error {
	var err error
	switch {
	case q.pg != nil:
		_, err = q.pg.JobCancel(ctx, id)
	case q.lite != nil:
		_, err = q.lite.JobCancel(ctx, id)
	default:
		err = ErrNotInitialized
	}
	return err
}

// Start begins working jobs. Cancelling ctx does not stop the client: River
// would cancel running jobs at once. Call Stop for a graceful shutdown.
func (q *Queue) Start(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	var events <-chan *river.Event
	var cancel func()
	kinds := []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled, river.EventKindJobSnoozed}
	var err error
	switch {
	case q.pg != nil:
		if q.metrics != nil {
			events, cancel = q.pg.Subscribe(kinds...)
		}
		err = q.pg.Start(ctx)
	case q.lite != nil:
		if q.metrics != nil {
			events, cancel = q.lite.Subscribe(kinds...)
		}
		err = q.lite.Start(ctx)
	default:
		return ErrNotInitialized
	}
	if err != nil {
		if cancel != nil {
			cancel()
		}
		return fmt.Errorf("starting River client: %w", err)
	}
	if events != nil {
		go q.metrics.consume(events)
	}
	return nil
}

// Stop stops fetching jobs and waits for running ones until ctx ends; then it
// cancels whatever still runs and waits for it to return. A job waiting to
// try something again (a backoff) stops waiting at once: it is put back to
// run again, elsewhere or after the restart (see retry.WithStop).
func (q *Queue) Stop(ctx context.Context) error {
	q.stopOnce.Do(func() { close(q.stopping) })
	stop, stopAndCancel := q.stopFuncs()
	if stop == nil {
		return nil
	}
	err := stop(ctx)
	if err == nil {
		return nil
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("stopping River client: %w", err)
	}
	q.cfg.Logger.Warn("jobs still running at shutdown deadline; cancelling them")
	cancelCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := stopAndCancel(cancelCtx); err != nil {
		return fmt.Errorf("cancelling running jobs: %w", err)
	}
	return nil
}

func (q *Queue) stopFuncs() (stop, stopAndCancel func(context.Context) error) {
	switch {
	case q.pg != nil:
		return q.pg.Stop, q.pg.StopAndCancel
	case q.lite != nil:
		return q.lite.Stop, q.lite.StopAndCancel
	}
	return nil, nil
}
