package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/lease"
	"github.com/superagent-dev/superagent/internal/retry"
	"github.com/superagent-dev/superagent/jobs"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// Worker runs a Ticket's Executor for jobs.ExecuteArgs.
type Worker struct {
	river.WorkerDefaults[jobs.ExecuteArgs]
	e *Executor
}

// Timeout bounds one job: the Session's wall time and a margin to prepare
// the workspace and wrap up.
func (w *Worker) Timeout(*river.Job[jobs.ExecuteArgs]) time.Duration {
	return w.e.cfg.Session.MaxWallTime + 10*time.Minute
}

// Work runs the Executor under the Ticket's lease; when another job holds
// it, this one waits its turn. The holder names the attempt, so a job
// rescued after its process died waits for the dead attempt's lease to
// lapse rather than working beside it.
func (w *Worker) Work(ctx context.Context, job *river.Job[jobs.ExecuteArgs]) error {
	holder := fmt.Sprintf("job:%d:%d", job.ID, job.Attempt)
	err := w.e.Execute(ctx, job.Args.TicketID, holder)
	w.e.metrics.runs.WithLabelValues(outcome(err)).Inc()
	switch {
	case errors.Is(err, ErrBusy):
		return river.JobSnooze(w.e.cfg.Snooze)
	case err != nil && job.Attempt >= maxAttempts && ctx.Err() == nil && !errors.Is(err, retry.ErrStopping):
		// Retrying has not helped (a repository that cannot be cloned, a
		// model that keeps failing): a person hears of it, once.
		if rerr := w.e.giveUp(context.WithoutCancel(ctx), job.Args.TicketID, fmt.Sprintf("job:%d", job.ID), err); rerr != nil {
			return errors.Join(err, rerr)
		}
		// The progress comment and the status card say so too.
		if rerr := w.e.syncProgress(context.WithoutCancel(ctx), job.Args.TicketID, true); rerr != nil {
			w.e.cfg.Logger.Warn("updating the progress on GitHub", "ticket", job.Args.TicketID, "error", w.e.deps.Scrubber.Scrub(rerr.Error()))
		}
		// No more writes come from this job: a stop is said now.
		if rerr := w.e.releaseHeld(context.WithoutCancel(ctx), job.Args.TicketID); rerr != nil {
			return errors.Join(err, rerr)
		}
		return river.JobCancel(err)
	}
	return err
}

// maxAttempts is how many times a failing Executor job runs (River backs
// off between them, about 16 minutes in all) before it reports blocked.
const maxAttempts = 5

// giveUp reports the Ticket blocked by an error the Executor could not get
// past, and tells its requester; key names the job that gave up.
func (e *Executor) giveUp(ctx context.Context, ticketID int64, key string, cause error) error {
	msg := e.deps.Scrubber.Scrub(cause.Error())
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	e.cfg.Logger.Error("giving up on an executor job", "ticket", ticketID, "error", msg)
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, ticketID)
	if err != nil {
		return err
	}
	work := e.state(ctx, t).describe(e, t)
	r := hostReport{
		Summary:  fmt.Sprintf("The Executor failed %d times in a row and stopped: %s. A person must fix the cause, then retry it; a new message in the Ticket's Threads also starts it again.", maxAttempts, msg),
		Sentence: fmt.Sprintf("The agent stopped work on %q because its job failed %d times in a row (%s)", t.Title, maxAttempts, oneLine(msg, 160)),
	}
	if work != "" {
		r.Summary += " Work: " + work + "."
		r.Sentence += "; " + work
	}
	r.Sentence += "; a person must fix the cause and say retry."
	return e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		if err := e.deps.Tickets.SetTicketState(ctx, tx, ticketID, tickets.TicketWaiting); err != nil && !errors.Is(err, tickets.ErrPaused) {
			return err
		}
		// A person's retry runs it again.
		if err := e.deps.Tickets.Fail(ctx, tx, ticketID, msg); err != nil {
			return err
		}
		if err := e.reportForHost(ctx, tx, t, 0, key, r); err != nil {
			return err
		}
		if e.deps.Feishu == nil {
			return nil
		}
		return e.deps.Wake.ShowCard(ctx, tx, ticketID)
	})
}

// ErrBusy is returned by Execute when another holder runs the Ticket's
// Executor.
var ErrBusy = errors.New("another job runs this ticket's executor")

// Execute runs the Ticket's Executor until nothing is left for it: it
// gives the Session what reached the Ticket, runs it, and repeats while
// more arrives. A paused or ended Ticket stops it at the next step.
func (e *Executor) Execute(ctx context.Context, ticketID int64, holder string) error {
	ok, err := e.acquire(ctx, ticketID, holder)
	if err != nil {
		return err
	}
	if !ok {
		return ErrBusy
	}
	defer e.release(context.WithoutCancel(ctx), ticketID, holder)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go lease.Keep(ctx, cancel, e.cfg.LeaseTTL/3, func(ctx context.Context) (bool, error) {
		return e.renew(ctx, ticketID, holder)
	}, e.cfg.Logger, fmt.Sprintf("executor of ticket %d", ticketID))

	err = e.execute(ctx, ticketID)
	if cause := context.Cause(ctx); errors.Is(cause, lease.ErrLost) {
		return fmt.Errorf("executing ticket %d: %w", ticketID, cause)
	}
	if err != nil {
		return err
	}
	// The job's work ended (done, waiting, paused, stopped, or nothing to
	// do): GitHub says so. A failure fails the job, so River tries again.
	if err := e.syncProgress(ctx, ticketID, true); err != nil {
		return fmt.Errorf("updating the progress of ticket %d on GitHub: %w", ticketID, err)
	}
	// Everything this job wrote is written: a stop may now be said.
	return e.releaseHeld(ctx, ticketID)
}

// releaseHeld lets the messages held for the Ticket be sent (a person's
// stop, acknowledged only after the Executor's last write) and schedules
// the main Session's turn that sends them.
func (e *Executor) releaseHeld(ctx context.Context, ticketID int64) error {
	return e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		n, err := e.deps.Tickets.ReleaseOutgoing(ctx, tx, ticketID)
		if err != nil || n == 0 {
			return err
		}
		tx.AfterCommit(func() { e.cfg.Logger.Info("stop acknowledgement released", "ticket", ticketID, "messages", n) })
		return e.deps.Wake.ScheduleTurn(ctx, tx)
	})
}

func (e *Executor) execute(ctx context.Context, ticketID int64) error {
	st := e.deps.Tickets
	t, err := st.Ticket(ctx, e.deps.DB, ticketID)
	if err != nil {
		return err
	}
	if tickets.Ended(t.State) {
		return e.cleanUp(ctx, t.ID)
	}
	// A live Ticket holds a stop's message only when a person continued
	// it since: the job that held the lease before this one made the
	// stopped work's last writes, so the stop is said before the new work
	// writes anything.
	if err := e.releaseHeld(ctx, t.ID); err != nil {
		return err
	}
	switch {
	case t.Pause != nil || t.Proposal:
		// A person holds it, or nobody has accepted it yet: the resume or
		// the acceptance enqueues the Executor again.
		return nil
	}
	// This job is now the Ticket's last: a failure recorded before is
	// not its last job's any more.
	if err := st.ClearFailure(ctx, e.deps.DB, t.ID); err != nil {
		return err
	}
	sid, err := e.session(ctx, t.ID)
	if err != nil {
		return err
	}
	if t.Continue != nil {
		if sid, err = e.continueSession(ctx, t, sid); err != nil {
			return err
		}
	}
	if t.Repo != "" {
		if err := e.prepareFor(ctx, t, sid); err != nil {
			return err
		}
		if err := e.setUp(ctx, t, sid); err != nil {
			return err
		}
	}
	if t.State == tickets.TicketOpen || t.State == tickets.TicketWaiting {
		if err := st.SetTicketState(ctx, e.deps.DB, t.ID, tickets.TicketWorking); err != nil && !errors.Is(err, tickets.ErrPaused) {
			return err
		}
	}
	e.showProgress(ctx, t.ID)
	var servers *mcpServers
	if t.Repo != "" {
		if servers, err = e.startMCP(ctx, t, sid); err != nil {
			return err
		}
		// The repository's MCP servers end with the job.
		defer servers.close()
	}
	tools, err := e.registry(servers.tools()...)
	if err != nil {
		return err
	}
	opts := session.RunOptions{
		StopCheck: st.StopCheck(e.deps.DB, t.ID),
		BeforeStep: func(ctx context.Context, sid int64) error {
			_, err := e.deliver(ctx, t.ID, sid)
			return err
		},
		Unfinished: e.unfinished,
		HandoffFacts: func(ctx context.Context, s *session.Session) (string, error) {
			return e.handoffFacts(ctx, s.TicketID)
		},
	}
	e.cfg.Logger.Info("executor started", "ticket", t.ID, "session", sid, "repo", t.Repo)
	last, why, err := e.work(ctx, t, sid, tools, opts)
	if err != nil {
		why = "error"
	}
	if now, rerr := st.Ticket(ctx, e.deps.DB, t.ID); rerr == nil {
		t = now // repository_set may have given it its repository
	}
	e.cfg.Logger.Info("executor stopped", "ticket", t.ID, "session", last, "repo", t.Repo, "why", why)
	return err
}

// work runs the Ticket's Session until it has nothing more to do; it
// returns the last Session and why the work stopped.
func (e *Executor) work(ctx context.Context, t tickets.Ticket, sid int64, tools *session.Registry, opts session.RunOptions) (int64, string, error) {
	st := e.deps.Tickets
	var err error
	for {
		if t, err = st.Ticket(ctx, e.deps.DB, t.ID); err != nil {
			return sid, "", err
		}
		if t.Pause != nil || tickets.Ended(t.State) {
			why := "ticket " + t.State
			if t.Pause != nil {
				why = "paused"
			}
			return sid, why, e.settle(ctx, t.ID, &session.Session{State: session.StateStopped, StateReason: "paused"})
		}
		s, err := e.sessions.Store().Latest(ctx, e.deps.DB, sid)
		if err != nil {
			return sid, "", err
		}
		if s.State == session.StateStopped && !pausedReason(s.StateReason) {
			// Stopped at a limit: a person's message continues the Ticket
			// in a new Session; anything else waits in the inbox for
			// that, rather than going to a Session that will not read it.
			next, err := e.continueOnMessage(ctx, t, s.ID)
			if err != nil {
				return s.ID, "", err
			}
			if next != 0 {
				sid = next
				continue
			}
			if waiting, err := st.Inbox(ctx, e.deps.DB, t.ID, 1); err == nil && len(waiting) > 0 {
				e.cfg.Logger.Info("cards wait for a stopped executor", "ticket", t.ID, "session", s.ID, "reason", s.StateReason)
			}
			return s.ID, cmp.Or(s.StateReason, string(s.State)), e.settle(ctx, t.ID, s)
		}
		if _, err := e.deliver(ctx, t.ID, sid); err != nil {
			return sid, "", err
		}
		if s, err = e.sessions.Store().Latest(ctx, e.deps.DB, sid); err != nil {
			return sid, "", err
		}
		if s.State == session.StateStopped && pausedReason(s.StateReason) {
			// Stopped by a pause that a person has lifted since (a job
			// runs only for a Ticket nobody holds): continue the work.
			if err := e.sessions.Store().Reopen(ctx, e.deps.DB, s.ID); err != nil {
				return s.ID, "", err
			}
		} else if s.State != session.StateActive {
			return s.ID, cmp.Or(s.StateReason, string(s.State)), e.settle(ctx, t.ID, s)
		}
		out, err := e.sessions.Run(ctx, s.ID, tools, opts)
		if fault := (*session.FaultError)(nil); errors.As(err, &fault) {
			// The model kept answering unusably: this job fails (River
			// tries again later), and the Ticket's page says why.
			e.modelFault(ctx, t, fault)
		}
		if err != nil {
			return out.SessionID, "", fmt.Errorf("running the executor of ticket %d: %w", t.ID, err)
		}
		sid = out.SessionID
		if out.State == session.StateStopped {
			s, err := e.sessions.Store().Get(ctx, e.deps.DB, sid)
			if err != nil {
				return sid, "", err
			}
			return sid, s.StateReason, e.settle(ctx, t.ID, s)
		}
	}
}

// prepareFor makes the Ticket's workspace ready for Session sid. A
// workspace cloned afresh for a Session that has already worked (the
// Ticket's last job ran on another machine, or the clone was removed) is
// brought to the Ticket's checkpoint; without one (or when the pushed
// branch won over it) it has only what was pushed, and the Session is
// told so before its next step.
func (e *Executor) prepareFor(ctx context.Context, t tickets.Ticket, sid int64) error {
	if t.Branch == "" {
		adopt := e.adoptPull
		if tickets.IsReview(t) {
			adopt = e.adoptReview
		}
		var err error
		if t, err = adopt(ctx, t, sid); err != nil {
			return err
		}
	}
	_, err := e.deps.Workspaces.Open(t.ID)
	fresh := errors.Is(err, fs.ErrNotExist)
	_, restored, err := e.prepare(ctx, t)
	if err != nil || !fresh || restored {
		// A restored workspace is where the Session left it.
		return err
	}
	totals, err := e.sessions.Store().TicketTotals(ctx, e.deps.DB, t.ID)
	if err != nil || totals.Requests == 0 {
		return err
	}
	_, err = e.sessions.Append(ctx, e.deps.DB, sid, fmt.Sprintf("host: your workspace was cloned again from %s, branch %s: "+
		"it holds what was pushed, and nothing that was only committed or changed locally before. Check git_status and git_diff before going on.",
		t.Repo, e.workBranch(t)))
	return err
}

// pausedReason tells a Session stopped by a pause (or the Ticket's end)
// from one stopped by a limit.
func pausedReason(reason string) bool {
	return len(reason) > 6 && reason[:6] == "paused"
}

// settle ends a job whose Session has nothing more to do: an ended Ticket
// frees its workspace; a Session stopped by a limit reports the Ticket
// blocked once, so a person hears of it.
func (e *Executor) settle(ctx context.Context, ticketID int64, s *session.Session) error {
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, ticketID)
	if err != nil {
		return err
	}
	if tickets.Ended(t.State) {
		return e.cleanUp(ctx, ticketID)
	}
	if s.State != session.StateStopped || t.Pause != nil || pausedReason(s.StateReason) || strings.HasPrefix(s.StateReason, reportedReason) {
		return nil
	}
	r := e.stoppedReport(ctx, t, s)
	err = e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		if err := e.deps.Tickets.SetTicketState(ctx, tx, ticketID, tickets.TicketWaiting); err != nil && !errors.Is(err, tickets.ErrPaused) {
			return err
		}
		if err := e.sessions.Store().Stop(ctx, tx, s.ID, reportedReason+": "+s.StateReason); err != nil {
			return err
		}
		return e.reportForHost(ctx, tx, t, s.ID, fmt.Sprintf("session:%d", s.ID), r)
	})
	if err == nil {
		e.cfg.Logger.Info("report", "ticket", ticketID, "session", s.ID, "state", tickets.ReportBlocked, "by", "host", "why", s.StateReason)
	}
	return err
}

// cleanUp removes an ended Ticket's workspace and its checkpoint. A
// checkpoint that cannot be deleted now is left to the watchdog's sweep.
func (e *Executor) cleanUp(ctx context.Context, ticketID int64) error {
	if err := e.deps.Workspaces.Remove(ticketID); err != nil {
		return fmt.Errorf("removing the workspace of ticket %d: %w", ticketID, err)
	}
	var repo string
	err := e.deps.DB.QueryRow(ctx, `SELECT wip_repo FROM executions WHERE ticket_id = $1`, ticketID).Scan(&repo)
	if err == nil && repo != "" {
		err = e.dropCheckpoint(ctx, ticketID, repo)
	}
	if err != nil && !errors.Is(err, db.ErrNoRows) {
		e.cfg.Logger.Warn("deleting the checkpoint of an ended ticket", "ticket", ticketID, "error", err)
	}
	return nil
}

// modelFault records why the model failed the job on the Ticket, where
// its page shows it, and logs it.
func (e *Executor) modelFault(ctx context.Context, t tickets.Ticket, fault *session.FaultError) {
	msg := e.deps.Scrubber.Scrub(fault.Error())
	e.cfg.Logger.Warn("model fault persists", "ticket", t.ID, "session", fault.SessionID, "repo", t.Repo,
		"model", fault.Model, "fault", fault.Kind, "attempts", fault.Attempts, "error", msg)
	if err := e.deps.Tickets.Fail(context.WithoutCancel(ctx), e.deps.DB, t.ID, msg); err != nil {
		e.cfg.Logger.Warn("recording a model fault", "ticket", t.ID, "error", err)
	}
}
