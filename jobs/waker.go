package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/tickets"
)

// Waker enqueues the wake jobs inside the caller's transaction, so a job
// exists exactly when what it should read was committed. Both roles share
// one: the main Session wakes Executors, and Executors wake the main
// Session when they report or hand work back.
type Waker struct {
	// Queue receives the jobs. Nil: nothing is enqueued (the stored rows
	// wait for a later wake), as in tests that run turns and jobs by hand.
	Queue *queue.Queue
	// Tickets stores Reports and hand-backs; required by Report and
	// HandBack.
	Tickets *tickets.Store
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// ScheduleTurn enqueues a main Session turn inside tx, unless one is
// already waiting: then that turn picks up what tx adds. The job is
// available at once, so a process starts it as soon as tx commits; the
// turn itself waits out the debounce after the last one that routed cards
// (see orchestrator.Config.Debounce), so whatever arrives meanwhile is
// one batch. Call it whenever a Report, hand-back, notice or candidate is
// stored.
//
// Within one transaction the turn is scheduled once: a batch of cards
// stored together needs one turn, and asking River again for each would
// find the same job.
func (w *Waker) ScheduleTurn(ctx context.Context, tx *db.Tx) error {
	if w == nil || w.Queue == nil {
		return nil
	}
	return tx.Once(turnScheduled{w}, func() error { return w.scheduleTurn(ctx, tx) })
}

// turnScheduled is what a transaction remembers once it scheduled a turn.
type turnScheduled struct{ w *Waker }

func (w *Waker) scheduleTurn(ctx context.Context, tx *db.Tx) error {
	// A turn that waits to start, or has started and not yet read, will
	// read what tx adds. Seeing it takes one indexed read; River's unique
	// insert would find it too, through a statement many times heavier,
	// once for every batch of cards. Under load one waits nearly always.
	waiting, err := turnWaiting(ctx, tx, w.now())
	if err != nil {
		return fmt.Errorf("scheduling a main Session turn: %w", err)
	}
	if waiting {
		return nil
	}
	if err := w.twoSlots(ctx, tx, time.Time{}, func(slot int) river.JobArgs { return RouteArgs{Slot: slot} }); err != nil {
		return fmt.Errorf("scheduling a main Session turn: %w", err)
	}
	return nil
}

func (w *Waker) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// ReadAheadTurn has tx read ahead, with its next statement, whether a
// main Session turn waits (see db.Tx.ReadAhead): what ScheduleTurn reads
// first. Only a turn tx schedules itself adds one, and ScheduleTurn
// schedules once per transaction, so the read stands until then.
func (w *Waker) ReadAheadTurn(tx *db.Tx) {
	if w == nil || w.Queue == nil {
		return
	}
	if _, scheduled := tx.Recall(turnScheduled{w}); !scheduled {
		tx.ReadAhead(turnAhead{}, waitingTurns, []any{queue.Routing, RouteArgs{}.Kind(), w.now().UTC()}, scanWaiting)
	}
}

// turnAhead is the key of the waiting turns read ahead.
type turnAhead struct{}

// waitingTurns counts the turns that will read what a transaction adds:
// jobs waiting to start, and the turn holding the main Session's lease
// while it has not yet read (routing_state.turn_due, the orchestrator's).
const waitingTurns = `SELECT
    (SELECT COUNT(*) FROM river_job WHERE state IN ('available', 'pending', 'scheduled', 'retryable') AND queue = $1 AND kind = $2) +
    (SELECT COUNT(*) FROM routing_state WHERE name = 'main' AND holder <> '' AND turn_due > $3)`

func scanWaiting(rows db.Rows) (any, error) {
	var n int
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
	}
	return n > 0, nil
}

// turnWaiting reports whether a main Session turn waits to start.
func turnWaiting(ctx context.Context, tx *db.Tx, now time.Time) (bool, error) {
	v, err := tx.Read(ctx, turnAhead{}, waitingTurns, []any{queue.Routing, RouteArgs{}.Kind(), now.UTC()}, scanWaiting)
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}

// WakeExecutor enqueues the Ticket's Executor inside tx. One job waits or
// runs per Ticket; a second waits behind a running one.
func (w *Waker) WakeExecutor(ctx context.Context, tx *db.Tx, ticketID int64) error {
	if w == nil || w.Queue == nil {
		return nil
	}
	if err := w.twoSlots(ctx, tx, time.Time{}, func(slot int) river.JobArgs { return ExecuteArgs{TicketID: ticketID, Slot: slot} }); err != nil {
		return fmt.Errorf("enqueueing the executor of ticket %d: %w", ticketID, err)
	}
	return nil
}

// ShowCard enqueues the update of the Ticket's status card in Feishu,
// inside tx, or on its own when tx is nil (a change already committed).
// One job waits per Ticket; a second waits behind a running one, so the
// last change is always shown.
func (w *Waker) ShowCard(ctx context.Context, tx *db.Tx, ticketID int64) error {
	if w == nil || w.Queue == nil {
		return nil
	}
	if err := w.twoSlots(ctx, tx, time.Time{}, func(slot int) river.JobArgs { return CardArgs{TicketID: ticketID, Slot: slot} }); err != nil {
		return fmt.Errorf("enqueueing the status card of ticket %d: %w", ticketID, err)
	}
	return nil
}

// twoSlots inserts the job of slot 0 and, only when that one's job is
// already running, the job of slot 1. at is the scheduled time, or zero
// for now; a nil tx inserts outside any transaction.
func (w *Waker) twoSlots(ctx context.Context, tx *db.Tx, at time.Time, args func(slot int) river.JobArgs) error {
	opts := &river.InsertOpts{ScheduledAt: at, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: queue.Unfinished()}}
	for slot := range 2 {
		var res *rivertype.JobInsertResult
		var err error
		if tx == nil {
			res, err = w.Queue.Insert(ctx, args(slot), opts)
		} else {
			res, err = w.Queue.InsertTx(ctx, tx, args(slot), opts)
		}
		if err != nil {
			return err
		}
		if !res.UniqueSkippedAsDuplicate || res.Job == nil || res.Job.State != rivertype.JobStateRunning {
			return nil
		}
	}
	return nil
}

// Report stores an Executor's Report in tx and schedules a turn, so the
// main Session reads it.
func (w *Waker) Report(ctx context.Context, tx *db.Tx, r tickets.Report) (tickets.Report, error) {
	r, err := w.Tickets.AddReport(ctx, tx, r)
	if err != nil {
		return tickets.Report{}, err
	}
	return r, w.ScheduleTurn(ctx, tx)
}

// HandBack stores an Executor's hand-back in tx; when it was the card's
// last owner, the card is a candidate again and a turn is scheduled.
func (w *Waker) HandBack(ctx context.Context, tx *db.Tx, h tickets.HandBack) (bool, error) {
	back, err := w.Tickets.AddHandBack(ctx, tx, h)
	if err != nil || !back {
		return back, err
	}
	return true, w.ScheduleTurn(ctx, tx)
}
