package githubapp

import (
	"context"
	"fmt"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// pacer hands out the moment a write may go: reserve returns how long to
// wait, and cancel gives the reservation back when the write is not sent
// after all.
type pacer interface {
	reserve(ctx context.Context) (wait time.Duration, cancel func(), err error)
}

// sharedPacer paces one installation's writes with budgets kept in the
// database, so that every process writing for the installation draws on
// the same ones: with the budgets in memory, three processes would each
// write 80 a minute. Each budget is a generic cell rate algorithm: one
// timestamp per budget, moved one interval forward per write in a single
// statement, which behaves as a token bucket of limit tokens.
type sharedPacer struct {
	d            *db.DB
	installation int64
	now          func() time.Time
	budgets      []sharedBudget
}

type sharedBudget struct {
	name     string
	interval time.Duration // between two writes once the burst is spent
	burst    time.Duration // how far ahead of now the budget may run: interval × (limit − 1)
}

func newSharedPacer(d *db.DB, installation int64, now func() time.Time, perMinute, perHour int) *sharedPacer {
	p := &sharedPacer{d: d, installation: installation, now: now}
	add := func(name string, window time.Duration, limit int) {
		if limit > 0 {
			interval := window / time.Duration(limit)
			p.budgets = append(p.budgets, sharedBudget{name: name, interval: interval, burst: interval * time.Duration(limit-1)})
		}
	}
	add("minute", time.Minute, perMinute)
	add("hour", time.Hour, perHour)
	if len(p.budgets) == 0 {
		return nil
	}
	return p
}

func (p *sharedPacer) reserve(ctx context.Context) (time.Duration, func(), error) {
	now := p.now()
	var wait time.Duration
	for i, b := range p.budgets {
		var tat int64
		err := p.d.QueryRow(ctx, `
INSERT INTO github_write_pacing (installation_id, budget, tat_us) VALUES ($1, $2, CAST($3 AS BIGINT) + CAST($4 AS BIGINT))
ON CONFLICT (installation_id, budget) DO UPDATE SET
    tat_us = (CASE WHEN github_write_pacing.tat_us > CAST($3 AS BIGINT) THEN github_write_pacing.tat_us ELSE CAST($3 AS BIGINT) END) + CAST($4 AS BIGINT)
RETURNING tat_us`, p.installation, b.name, now.UnixMicro(), b.interval.Microseconds()).Scan(&tat)
		if err != nil {
			p.giveBack(p.budgets[:i])
			return 0, nil, fmt.Errorf("reserving a write of installation %d: %w", p.installation, err)
		}
		// The write may go once the previous theoretical arrival, less the
		// burst the budget allows, is reached.
		allowed := time.UnixMicro(tat).Add(-b.interval - b.burst)
		wait = max(wait, allowed.Sub(now))
	}
	return wait, func() { p.giveBack(p.budgets) }, nil
}

// giveBack moves budgets back by one interval: a reservation not used.
func (p *sharedPacer) giveBack(budgets []sharedBudget) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, b := range budgets {
		// A failure only leaves the budget one write stricter than it need
		// be, until its interval passes.
		_, _ = p.d.Exec(ctx, "UPDATE github_write_pacing SET tat_us = tat_us - CAST($3 AS BIGINT) WHERE installation_id = $1 AND budget = $2",
			p.installation, b.name, b.interval.Microseconds())
	}
}
