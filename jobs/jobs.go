// Package jobs holds the River job contracts every role enqueues and the
// wake operations that enqueue them.
//
// The job kinds (route_turn, execute_ticket, route_watchdog,
// feishu_status_card) are stored in
// River's rows, so they never change. The workers live with their roles:
// the main Session's turn and watchdog in package orchestrator, the
// Executor's in package executor. A role wakes another only through this
// package, so neither imports the other.
//
// Each wake is a two-slot unique insert: at most one job waits per slot,
// and a second slot exists only while the first one's job runs, because a
// running job may have taken its last look before the caller's transaction
// commits. The role's lease keeps the two slots from working at once.
package jobs

import (
	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/internal/queue"
)

// RouteArgs is the main Session's turn job. With unique insert options
// there is at most one waiting per slot across processes.
type RouteArgs struct {
	// Slot tells apart the two turn jobs that may exist at once: one
	// running, and one scheduled behind it for what arrived too late for
	// the running turn to see (see Waker.ScheduleTurn).
	Slot int `json:"slot,omitempty"`
}

// Kind names the job.
func (RouteArgs) Kind() string { return "route_turn" }

// InsertOpts puts turns on the routing queue.
func (RouteArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queue.Routing} }

// ExecuteArgs is a Ticket's Executor job, one per Ticket at a time.
type ExecuteArgs struct {
	TicketID int64 `json:"ticket_id"`
	// Slot tells apart a running job and the one queued behind it (see
	// Waker.WakeExecutor).
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

// InsertOpts puts it on the roles' upkeep queue, one waiting or running
// at a time.
func (ReviveArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue.Upkeep, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: queue.Unfinished()}}
}

// CardArgs brings a Ticket's status card in Feishu up to date: posted once
// in the thread the Ticket was asked in, patched after every change of
// state or Report. Its worker lives with the Executor.
type CardArgs struct {
	TicketID int64 `json:"ticket_id"`
	// Slot tells apart a running job and the one queued behind it (see
	// Waker.ShowCard).
	Slot int `json:"slot,omitempty"`
}

// Kind names the job.
func (CardArgs) Kind() string { return "feishu_status_card" }

// InsertOpts puts card updates on the roles' upkeep queue: only a process
// with the Executor works them.
func (CardArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queue.Upkeep} }
