package webhooks

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// committer writes deliveries with group commit: requests that arrive while
// a transaction is in flight wait and are then written together in the next
// one, each with its job. Every delivery still commits with its job before
// its request is answered; a burst simply shares BEGIN and COMMIT (and on
// SQLite, whose single connection serialises writers anyway, the WAL
// append; on PostgreSQL, round trips and WAL flushes). No timer is
// involved, so a lone request is written at once.
//
// Leadership passes from batch to batch: the request that finds no
// transaction running writes the waiting batch (its own included), answers
// it, and hands the next batch to one of its requests, so no request waits
// for batches that arrived after it.
type committer struct {
	// write stores deliveries inside tx and returns, in order, each one's id
	// and whether it was a duplicate.
	write func(ctx context.Context, tx *db.Tx, ds []Delivery) ([]written, error)
	d     *db.DB
	// max caps a batch; slots is how many batches may be written at once.
	max, slots int

	mu      sync.Mutex
	running int
	pending []*pendingDelivery
}

type pendingDelivery struct {
	ctx      context.Context
	d        Delivery
	promoted bool          // chosen to lead a batch (under mu)
	lead     chan struct{} // closed when this request is to write a batch
	done     chan struct{} // closed when the result is set
	id       int64
	dup      bool
	err      error
}

// written is the outcome of storing one delivery.
type written struct {
	id  int64
	dup bool
}

// batchTimeout bounds one group transaction, independent of the request
// that happens to lead it.
const batchTimeout = 30 * time.Second

func (c *committer) submit(ctx context.Context, d Delivery) (int64, bool, error) {
	p := &pendingDelivery{ctx: ctx, d: d, lead: make(chan struct{}), done: make(chan struct{})}
	c.mu.Lock()
	c.pending = append(c.pending, p)
	if c.running < c.slots {
		c.running++
		p.promoted = true
		close(p.lead)
	}
	c.mu.Unlock()

	select {
	case <-p.done:
		return p.id, p.dup, p.err
	case <-p.lead:
	}
	// Lead: take this request and the waiting ones no other leader holds.
	c.mu.Lock()
	batch := []*pendingDelivery{p}
	rest := c.pending[:0]
	for _, q := range c.pending {
		switch {
		case q == p:
		case !q.promoted && len(batch) < c.max:
			batch = append(batch, q)
		default:
			rest = append(rest, q)
		}
	}
	clear(c.pending[len(rest):])
	c.pending = rest
	c.mu.Unlock()

	c.writeBatch(batch)

	// Hand the slot to the oldest request still waiting, or give it back.
	c.mu.Lock()
	next := false
	for _, q := range c.pending {
		if !q.promoted {
			q.promoted = true
			close(q.lead)
			next = true
			break
		}
	}
	if !next {
		c.running--
	}
	c.mu.Unlock()
	<-p.done
	return p.id, p.dup, p.err
}

// writeBatch writes the batch in one transaction; if that fails, each
// delivery is tried on its own so that one bad row fails only itself.
func (c *committer) writeBatch(batch []*pendingDelivery) {
	defer func() {
		for _, p := range batch {
			close(p.done)
		}
	}()
	live := batch[:0:0]
	for _, p := range batch {
		if err := p.ctx.Err(); err != nil {
			p.err = fmt.Errorf("request ended before its delivery was stored: %w", err)
			continue
		}
		live = append(live, p)
	}
	if len(live) == 0 {
		return
	}
	if len(live) > 1 {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(live[0].ctx), batchTimeout)
		ds := make([]Delivery, len(live))
		for i, p := range live {
			ds[i] = p.d
		}
		var out []written
		err := c.d.InTx(ctx, func(tx *db.Tx) error {
			var err error
			out, err = c.write(ctx, tx, ds)
			return err
		})
		cancel()
		if err == nil {
			for i, p := range live {
				p.id, p.dup = out[i].id, out[i].dup
			}
			return
		}
	}
	for _, p := range live {
		var out []written
		p.err = c.d.InTx(p.ctx, func(tx *db.Tx) error {
			var err error
			out, err = c.write(p.ctx, tx, []Delivery{p.d})
			return err
		})
		if p.err == nil {
			p.id, p.dup = out[0].id, out[0].dup
		}
	}
}
