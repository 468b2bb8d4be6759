package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/outbox"
)

// DefaultProposalTTL is how long a proposal waits for a person by default.
const DefaultProposalTTL = 72 * time.Hour

// ExpireArgs is the periodic job that expires proposals nobody accepted
// within Config.ProposalTTL.
type ExpireArgs struct{}

// Kind names the job; it is stored in River's rows, so it never changes.
func (ExpireArgs) Kind() string { return "proposal_expiry" }

// InsertOpts puts it on the upkeep queue, one waiting or running at a time.
func (ExpireArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue.Upkeep, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: queue.Unfinished()}}
}

// ExpireWorker works ExpireArgs.
type ExpireWorker struct {
	river.WorkerDefaults[ExpireArgs]
	o *Orchestrator
}

// Timeout bounds one sweep.
func (w *ExpireWorker) Timeout(*river.Job[ExpireArgs]) time.Duration { return time.Minute }

// Work expires the proposals that waited too long.
func (w *ExpireWorker) Work(ctx context.Context, _ *river.Job[ExpireArgs]) error {
	_, err := w.o.ExpireProposals(ctx)
	return err
}

// registerExpiry adds the expiry sweep to q, run every quarter of the TTL
// (between a second and a quarter of an hour), unless proposals never
// expire.
func (o *Orchestrator) registerExpiry(q *queue.Queue) {
	if o.cfg.ProposalTTL < 0 {
		return
	}
	queue.AddWorker(q, &ExpireWorker{o: o})
	queue.AddPeriodic(q, min(max(o.cfg.ProposalTTL/4, time.Second), 15*time.Minute), ExpireArgs{})
}

// maxExpiredPerSweep bounds one sweep; the next takes the rest.
const maxExpiredPerSweep = 100

// ExpireProposals cancels every proposal made more than ProposalTTL ago
// that nobody accepted (nor holds), each in its own transaction with one
// sentence recorded where it was proposed, and returns how many it
// expired.
func (o *Orchestrator) ExpireProposals(ctx context.Context) (int, error) {
	if o.cfg.ProposalTTL < 0 {
		return 0, nil
	}
	st := o.deps.Tickets
	stale, err := st.StaleProposals(ctx, o.deps.DB, o.cfg.Now().Add(-o.cfg.ProposalTTL), maxExpiredPerSweep)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range stale {
		expired := false
		err := o.deps.DB.InTx(ctx, func(tx *db.Tx) error {
			var err error
			if expired, err = st.ExpireProposal(ctx, tx, t.ID); err != nil || !expired {
				return err
			}
			if err := o.wake.ShowCard(ctx, tx, t.ID); err != nil {
				return err
			}
			if t.SourceCardID == 0 {
				return nil
			}
			src, err := st.Card(ctx, tx, t.SourceCardID)
			if err != nil {
				return err
			}
			target, err := o.messageTarget(ctx, tx, src)
			if err != nil {
				return err
			}
			text := fmt.Sprintf("Nobody accepted the proposed work \"%s\" within %s, so it has expired and nothing was done; ask me again if it is still wanted.",
				oneLine(t.Title), ttlWords(o.cfg.ProposalTTL))
			if err := o.record(ctx, tx, "proposal_expired:ticket:"+itoa(t.ID), outbox.KindComment, src, t.ID, target, text); err != nil {
				return err
			}
			return o.ScheduleTurn(ctx, tx)
		})
		if err != nil {
			o.cfg.Logger.Warn("expiring a proposal", "ticket", t.ID, "repo", t.Repo, "error", err)
			return n, fmt.Errorf("expiring proposal %d: %w", t.ID, err)
		}
		if expired {
			n++
			o.cfg.Logger.Info("proposal expired", "ticket", t.ID, "repo", t.Repo, "card", t.SourceCardID, "proposed_at", t.CreatedAt, "ttl", o.cfg.ProposalTTL)
		}
	}
	return n, nil
}

// ttlWords says a TTL the way a person would: "72 hours", "90 minutes".
func ttlWords(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}
