package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/bodycodec"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/tickets"
)

// Delivery states.
const (
	DeliveryReceived  = "received"
	DeliveryProcessed = "processed"
	DeliveryFailed    = "failed"
	DeliveryIgnored   = "ignored"
)

// Delivery is one stored webhook request or event, kept raw.
type Delivery struct {
	ID     int64
	Source string
	// DedupeKey is X-GitHub-Delivery (Feishu: message or event id); a
	// second delivery with the same key is a redelivery.
	DedupeKey  string
	Event      string
	Headers    map[string]string
	Body       []byte
	ReceivedAt time.Time
	State      string
	// Error says why a delivery failed or was ignored.
	Error string

	// storing is set while the transaction that stores the delivery
	// processes it (see processOnArrival): its state is then known to be
	// received without reading it, as no other transaction can see it yet.
	storing bool
	// stored and encoding are Body as the row keeps it (see pack).
	stored   []byte
	encoding string
	// processedAt, when set, is stored as the row's processed_at.
	processedAt time.Time
}

// pack compresses the body for storage, once; the request's goroutine
// calls it before the delivery joins a batch, so the transaction every
// request shares only copies the smaller bytes.
func (d *Delivery) pack() {
	if d.encoding == "" {
		d.stored, d.encoding = bodycodec.Pack(d.Body)
	}
}

// ErrDeliveryNotFound is returned for an unknown delivery.
var ErrDeliveryNotFound = errors.New("delivery not found")

// insertDeliveries stores, in one statement and in the order given, the
// deliveries whose dedupe keys were not seen, and reports for each its id
// or that it is a redelivery (the second of two with one key in ds is one
// too).
func insertDeliveries(ctx context.Context, q db.Querier, ds []Delivery) ([]written, error) {
	const columns = 10
	var sql strings.Builder
	sql.WriteString("INSERT INTO deliveries (source, dedupe_key, event, headers, body, body_encoding, received_at, state, error, processed_at) VALUES ")
	args := make([]any, 0, columns*len(ds))
	for i, d := range ds {
		headers, err := json.Marshal(d.Headers)
		if err != nil {
			return nil, fmt.Errorf("encoding delivery headers: %w", err)
		}
		d.pack()
		body := d.stored
		if body == nil {
			body = []byte{}
		}
		if i > 0 {
			sql.WriteString(", ")
		}
		sql.WriteByte('(')
		for c := range columns {
			if c > 0 {
				sql.WriteString(", ")
			}
			fmt.Fprintf(&sql, "$%d", i*columns+c+1)
		}
		sql.WriteByte(')')
		var processedAt any
		if !d.processedAt.IsZero() {
			processedAt = d.processedAt
		}
		args = append(args, d.Source, d.DedupeKey, d.Event, string(headers), body, d.encoding, d.ReceivedAt, d.State, d.Error, processedAt)
	}
	sql.WriteString(" ON CONFLICT (source, dedupe_key) DO NOTHING RETURNING id, source, dedupe_key")
	type key struct{ source, dedupe string }
	ids := make(map[key]int64, len(ds))
	rows, err := q.Query(ctx, sql.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("storing %d deliveries: %w", len(ds), err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var k key
		if err := rows.Scan(&id, &k.source, &k.dedupe); err != nil {
			return nil, fmt.Errorf("storing %d deliveries: %w", len(ds), err)
		}
		ids[k] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storing %d deliveries: %w", len(ds), err)
	}
	out := make([]written, len(ds))
	for i, d := range ds {
		k := key{d.Source, d.DedupeKey}
		id, ok := ids[k]
		out[i] = written{id: id, dup: !ok, state: d.State}
		delete(ids, k) // a second delivery with the key in ds is a redelivery
	}
	return out, nil
}

const deliveryColumns = "id, source, dedupe_key, event, headers, body, body_encoding, received_at, state, error"

func scanDelivery(row db.Row) (Delivery, error) {
	var d Delivery
	var headers string
	if err := row.Scan(&d.ID, &d.Source, &d.DedupeKey, &d.Event, &headers, &d.stored, &d.encoding, &d.ReceivedAt, &d.State, &d.Error); err != nil {
		return Delivery{}, err
	}
	body, err := bodycodec.Unpack(d.stored, d.encoding)
	if err != nil {
		return Delivery{}, fmt.Errorf("reading the body of delivery %d: %w", d.ID, err)
	}
	d.Body = body
	if err := json.Unmarshal([]byte(headers), &d.Headers); err != nil {
		return Delivery{}, fmt.Errorf("decoding headers of delivery %d: %w", d.ID, err)
	}
	return d, nil
}

// Delivery reads a stored delivery.
func (s *Service) Delivery(ctx context.Context, id int64) (Delivery, error) {
	return getDelivery(ctx, s.d, id)
}

// DeliveryByKey reads a stored delivery by source and dedupe key.
func (s *Service) DeliveryByKey(ctx context.Context, source, key string) (Delivery, error) {
	d, err := scanDelivery(s.d.QueryRow(ctx, "SELECT "+deliveryColumns+" FROM deliveries WHERE source = $1 AND dedupe_key = $2", source, key))
	if errors.Is(err, db.ErrNoRows) {
		return Delivery{}, fmt.Errorf("reading %s delivery %q: %w", source, key, ErrDeliveryNotFound)
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("reading %s delivery %q: %w", source, key, err)
	}
	return d, nil
}

func getDelivery(ctx context.Context, q db.Querier, id int64) (Delivery, error) {
	d, err := scanDelivery(q.QueryRow(ctx, "SELECT "+deliveryColumns+" FROM deliveries WHERE id = $1", id))
	if errors.Is(err, db.ErrNoRows) {
		return Delivery{}, fmt.Errorf("reading delivery %d: %w", id, ErrDeliveryNotFound)
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("reading delivery %d: %w", id, err)
	}
	return d, nil
}

// finishDelivery records the outcome of processing, once: a delivery no
// longer received keeps its first outcome.
func finishDelivery(ctx context.Context, q db.Querier, id int64, state, reason string, now time.Time) error {
	var out outcomes
	out.set(id, state, reason)
	return out.write(ctx, q, now)
}

// outcomes are the new states of the deliveries one transaction
// processed, written together when its steps are done: a batch whose
// deliveries all became cards is one UPDATE, or none when they were stored
// presumed processed (see presume). A delivery keeps its first outcome.
type outcomes struct {
	order []outcome // first seen first, for a stable statement order
	ids   map[outcome][]int64
	of    map[int64]outcome
	// presumed are deliveries this transaction stored already processed.
	presumed map[int64]bool
}

type outcome struct{ state, reason string }

// presume records that delivery id was stored processed, with no error, by
// this transaction, which is processing it: only another outcome needs
// writing.
func (o *outcomes) presume(id int64) {
	if o.presumed == nil {
		o.presumed = map[int64]bool{}
	}
	o.presumed[id] = true
}

// set records that delivery id ends in state, for reason, unless an
// outcome was set for it already.
func (o *outcomes) set(id int64, state, reason string) {
	if _, ok := o.of[id]; ok {
		return
	}
	reason, _ = tickets.Truncate(strings.ToValidUTF8(reason, "?"), 1000)
	k := outcome{state, reason}
	if o.of == nil {
		o.of, o.ids = map[int64]outcome{}, map[outcome][]int64{}
	}
	o.of[id] = k
	if o.presumed[id] && k == (outcome{DeliveryProcessed, ""}) {
		return // stored so
	}
	if _, ok := o.ids[k]; !ok {
		o.order = append(o.order, k)
	}
	o.ids[k] = append(o.ids[k], id)
}

// stateOf is the state delivery id ends in.
func (o *outcomes) stateOf(id int64) string {
	if k, ok := o.of[id]; ok {
		return k.state
	}
	if o.presumed[id] {
		return DeliveryProcessed
	}
	return DeliveryReceived
}

// write stores the outcomes set. A delivery stored earlier changes only
// while it is received, so a second worker's outcome never overwrites the
// first's; one this transaction presumed processed is corrected as it is
// (back to received, it waits for its job).
func (o *outcomes) write(ctx context.Context, q db.Querier, now time.Time) error {
	for _, k := range o.order {
		var earlier, presumed []int64
		for _, id := range o.ids[k] {
			if o.presumed[id] {
				presumed = append(presumed, id)
			} else {
				earlier = append(earlier, id)
			}
		}
		var at any = now
		if k.state == DeliveryReceived {
			at = nil
		}
		for _, w := range []struct {
			ids   []int64
			guard string
		}{{earlier, "state = 'received' AND "}, {presumed, ""}} {
			if len(w.ids) == 0 {
				continue
			}
			var sql strings.Builder
			sql.WriteString("UPDATE deliveries SET state = $1, error = $2, processed_at = $3 WHERE " + w.guard + "id IN (")
			args := []any{k.state, k.reason, at}
			for i, id := range w.ids {
				if i > 0 {
					sql.WriteString(", ")
				}
				fmt.Fprintf(&sql, "$%d", len(args)+1)
				args = append(args, id)
			}
			sql.WriteByte(')')
			if _, err := q.Exec(ctx, sql.String(), args...); err != nil {
				if len(w.ids) == 1 {
					return fmt.Errorf("marking delivery %d %s: %w", w.ids[0], k.state, err)
				}
				return fmt.Errorf("marking %d deliveries %s: %w", len(w.ids), k.state, err)
			}
		}
	}
	*o = outcomes{}
	return nil
}
