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
	// and whether it was a duplicate. read[i], when not nil, is ds[i]'s
	// payload as read on arrival, for write to process it there and then.
	write func(ctx context.Context, tx *db.Tx, ds []Delivery, read []*ghEvent) ([]written, error)
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
	read     *ghEvent
	promoted bool          // chosen to lead a batch (under mu)
	lead     chan struct{} // closed when this request is to write a batch
	done     chan struct{} // closed when the result is set
	out      written
	err      error
}

// written is the outcome of storing one delivery: its id, or that it was
// a redelivery, and its state once the transaction commits (processed
// when its card was made there).
type written struct {
	id    int64
	dup   bool
	state string
}

// batchTimeout bounds one group transaction, independent of the request
// that happens to lead it.
const batchTimeout = 30 * time.Second

func (c *committer) submit(ctx context.Context, d Delivery, read *ghEvent) (written, error) {
	p := &pendingDelivery{ctx: ctx, d: d, read: read, lead: make(chan struct{}), done: make(chan struct{})}
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
		return p.out, p.err
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
	return p.out, p.err
}

// writeBatch writes the batch in one transaction; if that fails, each
// delivery is tried on its own, and without its payload read on arrival,
// so that one bad row, or one card that cannot be made, fails only itself
// and never an acknowledgement: its job makes the card.
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
	ctx, cancel := context.WithTimeout(context.WithoutCancel(live[0].ctx), batchTimeout)
	err := c.tryWrite(ctx, live, true)
	cancel()
	if err == nil {
		return
	}
	if len(live) == 1 && live[0].read == nil {
		live[0].err = err
		return
	}
	for _, p := range live {
		p.err = c.tryWrite(p.ctx, []*pendingDelivery{p}, false)
	}
}

// tryWrite writes ps in one transaction and, if it commits, sets their
// ids.
func (c *committer) tryWrite(ctx context.Context, ps []*pendingDelivery, withRead bool) error {
	ds := make([]Delivery, len(ps))
	read := make([]*ghEvent, len(ps))
	for i, p := range ps {
		ds[i] = p.d
		if withRead {
			read[i] = p.read
		}
	}
	var out []written
	err := c.d.InTx(ctx, func(tx *db.Tx) error {
		var err error
		out, err = c.write(ctx, tx, ds, read)
		return err
	})
	if err != nil {
		return err
	}
	for i, p := range ps {
		p.out = out[i]
	}
	return nil
}
