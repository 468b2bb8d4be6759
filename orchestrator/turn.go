package orchestrator

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/lease"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/retry"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// ErrLeaseHeld is returned by Turn while another turn holds the lease.
var ErrLeaseHeld = errors.New("another turn of the main Session is running")

// TurnResult says what one turn did.
type TurnResult struct {
	// SessionID is the main Session now (a successor after a rollover).
	SessionID int64
	// Batches is the number of times items were appended and the Session
	// ran; Candidates the candidates offered; Steps the model requests.
	Batches, Candidates, Steps int
	// More is true when items arrived after the turn's last look: the
	// caller runs another turn.
	More bool
}

// Turn runs the main Session until nothing waits: it appends the waiting
// candidates (at most MaxCandidates at a time), Reports and follow-up
// notices, runs the Session, and repeats. holder names the caller for the
// lease; a turn that died and runs again under the same holder takes its
// lease back. Items are marked offered in the transaction that appends
// them, so a turn cut short never appends them twice, and the Session
// resumes where it stopped.
func (o *Orchestrator) Turn(ctx context.Context, holder string) (TurnResult, error) {
	return o.timedTurn(ctx, holder, false)
}

// timedTurn is Turn; with wait, the turn holds the lease first and waits
// for a burst to finish arriving (the debounce after the last turn that
// routed cards, then Settle) before it reads, and whatever arrives
// meanwhile is its to read.
func (o *Orchestrator) timedTurn(ctx context.Context, holder string, wait bool) (TurnResult, error) {
	started := o.cfg.Now()
	res, err := o.turn(ctx, holder, wait)
	outcome := "done"
	switch {
	case errors.Is(err, ErrLeaseHeld):
		outcome = "lease_held"
	case err != nil:
		// The job's WARN line says it, with the cards it was given (see
		// queue.Note); a turn run by hand says it here.
		outcome = "error"
		if queue.Attrs(ctx) == nil {
			o.cfg.Logger.Warn("main Session turn failed", "cards", cardsOfTurn(ctx), "error", err)
		}
	}
	o.metrics.turns.WithLabelValues(outcome).Inc()
	if outcome != "lease_held" {
		o.metrics.latency.Observe(o.cfg.Now().Sub(started).Seconds())
	}
	return res, err
}

func (o *Orchestrator) turn(ctx context.Context, holder string, wait bool) (res TurnResult, err error) {
	ok, err := o.acquire(ctx, holder, wait)
	if err != nil {
		return res, err
	}
	if !ok {
		return res, ErrLeaseHeld
	}
	defer func() { o.release(context.WithoutCancel(ctx), holder, res.Candidates > 0) }()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go lease.Keep(ctx, cancel, o.cfg.LeaseTTL/3, func(ctx context.Context) (bool, error) {
		n, err := o.deps.DB.Exec(ctx, `UPDATE routing_state SET lease_until = $3 WHERE name = $1 AND holder = $2`,
			leaseName, holder, o.cfg.Now().UTC().Add(o.cfg.LeaseTTL))
		return n == 1, err
	}, o.cfg.Logger, "main Session")
	if wait {
		if err := o.waitForBurst(ctx, holder); err != nil {
			return res, err
		}
	}
	sid, err := o.mainSession(ctx)
	if err != nil {
		return res, err
	}
	tools, err := o.registry()
	if err != nil {
		return res, err
	}
	ctx, given := withTurnCards(ctx)
	for {
		offered, ids, err := o.offer(ctx, sid, given)
		if err != nil {
			return res, err
		}
		candidates := len(ids)
		s, err := o.deps.Sessions.Store().Latest(ctx, o.deps.DB, sid)
		if err != nil {
			return res, fmt.Errorf("reading the main Session: %w", err)
		}
		if !offered && s.State != session.StateActive {
			break
		}
		out, err := o.deps.Sessions.Run(ctx, s.ID, tools, session.RunOptions{})
		if err != nil {
			return res, fmt.Errorf("running the main Session: %w", err)
		}
		if out.State == session.StateDone && candidates > 0 {
			// One reminder for candidates the turn ended without deciding;
			// after it they stay waiting, visible in the panel.
			again, err := o.remind(ctx, out.SessionID, ids)
			if err != nil {
				return res, err
			}
			if again {
				more, err := o.deps.Sessions.Run(ctx, out.SessionID, tools, session.RunOptions{})
				if err != nil {
					return res, fmt.Errorf("running the main Session: %w", err)
				}
				more.Steps += out.Steps
				out = more
			}
		}
		res.Batches++
		res.Candidates += candidates
		res.Steps += out.Steps
		if candidates > 0 {
			o.metrics.candidates.Observe(float64(candidates) / float64(max(out.Steps, 1)))
		}
		sid = out.SessionID
		if out.State != session.StateDone && out.State != session.StateActive {
			// A limit stopped this Session: the next items start a fresh one.
			if sid, err = o.replaceSession(ctx, sid); err != nil {
				return res, err
			}
		} else if err := o.setSession(ctx, sid); err != nil {
			return res, err
		}
		if !offered {
			break
		}
	}
	res.SessionID = sid
	o.deliver(ctx)
	n, err := o.deps.Tickets.Waiting(ctx, o.deps.DB)
	if err != nil {
		return res, err
	}
	res.More = n > 0
	return res, nil
}

const leaseName = "main"

// acquire takes the lease for holder. With wait, the turn has not read
// yet: until turn_due what arrives is its to read (jobs.Waker finds it
// there and schedules nothing); the bound covers the longest wait.
func (o *Orchestrator) acquire(ctx context.Context, holder string, wait bool) (bool, error) {
	now := o.cfg.Now().UTC()
	if _, err := o.deps.DB.Exec(ctx, `INSERT INTO routing_state (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, leaseName); err != nil {
		return false, fmt.Errorf("preparing the main Session lease: %w", err)
	}
	var due any
	if wait {
		due = now.Add(o.cfg.Debounce + 10*o.cfg.Settle)
	}
	n, err := o.deps.DB.Exec(ctx, `UPDATE routing_state SET holder = $2, lease_until = $3, turn_due = $5
WHERE name = $1 AND (holder = '' OR holder = $2 OR lease_until IS NULL OR lease_until < $4)`,
		leaseName, holder, now.Add(o.cfg.LeaseTTL), now, due)
	if err != nil {
		return false, fmt.Errorf("taking the main Session lease: %w", err)
	}
	return n == 1, nil
}

// waitForBurst waits, holding the lease, until the debounce after the
// last turn that routed cards has passed and then until no card arrived
// for Settle (at most ten Settles): a lone request is read after one
// Settle, a burst whole. Then the turn reads, and what arrives after
// needs a turn of its own again. The waits end when the process stops.
func (o *Orchestrator) waitForBurst(ctx context.Context, holder string) error {
	var routed sql.NullTime
	if err := o.deps.DB.QueryRow(ctx, `SELECT routed_at FROM routing_state WHERE name = $1`, leaseName).Scan(&routed); err != nil {
		return fmt.Errorf("reading when the main Session last routed: %w", err)
	}
	if routed.Valid {
		if err := retry.Sleep(ctx, routed.Time.Add(o.cfg.Debounce).Sub(o.cfg.Now())); err != nil {
			return err
		}
	}
	if err := o.settle(ctx); err != nil {
		return err
	}
	if _, err := o.deps.DB.Exec(ctx, `UPDATE routing_state SET turn_due = NULL WHERE name = $1 AND holder = $2`, leaseName, holder); err != nil {
		return fmt.Errorf("starting to read for the main Session: %w", err)
	}
	return nil
}

// release frees the lease. routed says the turn was given candidates:
// its end starts the debounce of the next turn.
func (o *Orchestrator) release(ctx context.Context, holder string, routed bool) {
	now := o.cfg.Now().UTC()
	if _, err := o.deps.DB.Exec(ctx, `UPDATE routing_state SET holder = '', lease_until = $3, turn_due = NULL,
    routed_at = CASE WHEN $4 THEN $3 ELSE routed_at END WHERE name = $1 AND holder = $2`,
		leaseName, holder, now, routed); err != nil {
		o.cfg.Logger.Error("releasing the main Session lease", "error", err)
	}
}

// waitForLease waits, reading every Settle, until no live turn holds the
// lease.
func (o *Orchestrator) waitForLease(ctx context.Context) error {
	for {
		var n int
		err := o.deps.DB.QueryRow(ctx, `SELECT COUNT(*) FROM routing_state WHERE name = $1 AND holder <> '' AND lease_until >= $2`,
			leaseName, o.cfg.Now().UTC()).Scan(&n)
		if err != nil {
			return fmt.Errorf("reading the main Session lease: %w", err)
		}
		if n == 0 {
			return nil
		}
		if err := retry.Sleep(ctx, o.cfg.Settle); err != nil {
			return err
		}
	}
}

// mainSession returns the deployment's main Session, creating it once.
func (o *Orchestrator) mainSession(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	if err := o.deps.DB.QueryRow(ctx, `SELECT main_session_id FROM routing_state WHERE name = $1`, leaseName).Scan(&id); err != nil {
		return 0, fmt.Errorf("reading the main Session id: %w", err)
	}
	if id.Valid && id.Int64 != 0 {
		s, err := o.deps.Sessions.Store().Latest(ctx, o.deps.DB, id.Int64)
		if err != nil {
			return 0, fmt.Errorf("reading the main Session: %w", err)
		}
		// A Session a limit stopped (or the process died right after)
		// takes no more input: the deployment continues in a fresh one.
		if s.State != session.StateStopped && s.State != session.StateFailed {
			return s.ID, nil
		}
	}
	return o.replaceSession(ctx, 0)
}

// replaceSession starts a new main Session and records it.
func (o *Orchestrator) replaceSession(ctx context.Context, _ int64) (int64, error) {
	var sid int64
	err := o.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		s, err := o.deps.Sessions.Create(ctx, tx, session.RoleMain, 0)
		if err != nil {
			return err
		}
		sid = s.ID
		_, err = tx.Exec(ctx, `UPDATE routing_state SET main_session_id = $2 WHERE name = $1`, leaseName, sid)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("starting the main Session: %w", err)
	}
	return sid, nil
}

func (o *Orchestrator) setSession(ctx context.Context, sid int64) error {
	if _, err := o.deps.DB.Exec(ctx, `UPDATE routing_state SET main_session_id = $2 WHERE name = $1`, leaseName, sid); err != nil {
		return fmt.Errorf("recording the main Session: %w", err)
	}
	return nil
}

// offer appends what waits to the Session in one transaction and marks it
// offered or delivered there. It reports whether anything was appended and
// how many candidates.
func (o *Orchestrator) offer(ctx context.Context, sid int64, given *turnCards) (bool, []int64, error) {
	var (
		offered bool
		ids     []int64
		// cardIDs are the candidates' and the notices' cards, once
		// committed.
		cardIDs []int64
	)
	err := o.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		st := o.deps.Tickets
		cards, err := st.OfferCandidates(ctx, tx, o.cfg.MaxCandidates)
		if err != nil {
			return err
		}
		reports, err := st.PendingReports(ctx, tx, 50)
		if err != nil {
			return err
		}
		notices, err := st.PendingNotices(ctx, tx, 50)
		if err != nil {
			return err
		}
		if len(cards)+len(reports)+len(notices) == 0 {
			return nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Waiting for you: %d candidate(s), %d report(s), %d follow-up notice(s). "+
			"Decide every candidate with orchestrator_route, many decisions in one call.\n", len(cards), len(reports), len(notices))
		for _, c := range cards {
			b.WriteString("\n## Candidate\n")
			b.WriteString(tickets.Render(c))
			backs, err := st.HandBacks(ctx, tx, c.ID)
			if err != nil {
				return err
			}
			for _, h := range backs {
				fmt.Fprintf(&b, "\nhanded back by ticket %d: %s", h.TicketID, oneLine(h.Reason))
			}
			b.WriteString("\n")
		}
		for _, r := range reports {
			fmt.Fprintf(&b, "\n## Report %d from ticket %d\nstate: %s\nsummary: %s\n", r.ID, r.TicketID, r.State, oneLine(r.Summary))
			if r.HumanAction != "" {
				fmt.Fprintf(&b, "human_action (forward it unchanged with orchestrator_forward {\"report\": %d}): %s\n", r.ID, oneLine(r.HumanAction))
			}
		}
		var noticeIDs, reportIDs []int64
		for _, n := range notices {
			c, err := st.Card(ctx, tx, n.CardID)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "\n## Follow-up notice: card %d reached ticket %d's Executor (act on it only to stop work)\n%s\n", n.CardID, n.TicketID, tickets.Render(c))
			noticeIDs = append(noticeIDs, n.ID)
		}
		for _, r := range reports {
			reportIDs = append(reportIDs, r.ID)
		}
		if _, err := o.deps.Sessions.Append(ctx, tx, sid, b.String()); err != nil {
			return err
		}
		if err := st.MarkReportsDelivered(ctx, tx, reportIDs); err != nil {
			return err
		}
		if err := st.MarkNoticesDelivered(ctx, tx, noticeIDs); err != nil {
			return err
		}
		offered = true
		ids, cardIDs = nil, nil
		for _, c := range cards {
			ids = append(ids, c.ID)
		}
		cardIDs = append(cardIDs, ids...)
		for _, n := range notices {
			cardIDs = append(cardIDs, n.CardID)
		}
		return nil
	})
	if err != nil {
		return false, nil, fmt.Errorf("offering waiting items to the main Session: %w", err)
	}
	given.add(cardIDs...)
	if len(cardIDs) > 0 {
		// A failed attempt's WARN names the cards it held up.
		queue.Note(ctx, "cards", cardsOfTurn(ctx))
	}
	return offered, ids, nil
}

// remind appends a reminder naming the offered candidates that are still
// undecided, and reports whether there were any.
func (o *Orchestrator) remind(ctx context.Context, sid int64, ids []int64) (bool, error) {
	var open []string
	for _, id := range ids {
		c, err := o.deps.Tickets.Card(ctx, o.deps.DB, id)
		if err != nil {
			return false, err
		}
		if c.State == tickets.CardCandidate {
			open = append(open, itoa(id))
		}
	}
	if len(open) == 0 {
		return false, nil
	}
	text := "These candidates still wait for a decision (new, attach or ignore) with orchestrator_route: cards " + strings.Join(open, ", ") + "."
	if _, err := o.deps.Sessions.Append(ctx, o.deps.DB, sid, text); err != nil {
		return false, fmt.Errorf("reminding the main Session: %w", err)
	}
	return true, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Revive frees the main Session's lease when its holder stopped renewing
// it (its process died) and schedules a turn, so what the dead turn left
// waiting is routed. It reports whether it did.
func (o *Orchestrator) Revive(ctx context.Context) (bool, error) {
	// Every process asks often: a read first keeps the write lock (all of
	// SQLite's) for when a lease has lapsed.
	var lapsed int
	err := o.deps.DB.QueryRow(ctx, `SELECT COUNT(*) FROM routing_state WHERE name = $1 AND holder <> '' AND lease_until < $2`,
		leaseName, o.cfg.Now().UTC()).Scan(&lapsed)
	if err != nil {
		return false, fmt.Errorf("reading the main Session's lease: %w", err)
	}
	if lapsed == 0 {
		return false, nil
	}
	revived := false
	err = o.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		n, err := tx.Exec(ctx, `UPDATE routing_state SET holder = '', lease_until = NULL
WHERE name = $1 AND holder <> '' AND lease_until < $2`, leaseName, o.cfg.Now().UTC())
		if err != nil || n == 0 {
			return err
		}
		revived = true
		o.cfg.Logger.Warn("restarting the main Session: the process running its turn stopped renewing the lease")
		return o.ScheduleTurn(ctx, tx)
	})
	if err != nil {
		return false, fmt.Errorf("reviving the main Session: %w", err)
	}
	return revived, nil
}
