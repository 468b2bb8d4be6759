package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

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
}

// ErrDeliveryNotFound is returned for an unknown delivery.
var ErrDeliveryNotFound = errors.New("delivery not found")

// insertDelivery stores d unless its dedupe key was seen; dup reports a
// redelivery (nothing stored).
func insertDelivery(ctx context.Context, q db.Querier, d Delivery) (id int64, dup bool, err error) {
	headers, err := json.Marshal(d.Headers)
	if err != nil {
		return 0, false, fmt.Errorf("encoding delivery headers: %w", err)
	}
	body := d.Body
	if body == nil {
		body = []byte{}
	}
	err = q.QueryRow(ctx, `
INSERT INTO deliveries (source, dedupe_key, event, headers, body, received_at, state, error)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (source, dedupe_key) DO NOTHING
RETURNING id`, d.Source, d.DedupeKey, d.Event, string(headers), body, d.ReceivedAt, d.State, d.Error).Scan(&id)
	if errors.Is(err, db.ErrNoRows) {
		return 0, true, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("storing %s delivery %q: %w", d.Source, d.DedupeKey, err)
	}
	return id, false, nil
}

const deliveryColumns = "id, source, dedupe_key, event, headers, body, received_at, state, error"

func scanDelivery(row db.Row) (Delivery, error) {
	var d Delivery
	var headers string
	if err := row.Scan(&d.ID, &d.Source, &d.DedupeKey, &d.Event, &headers, &d.Body, &d.ReceivedAt, &d.State, &d.Error); err != nil {
		return Delivery{}, err
	}
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
	reason, _ = tickets.Truncate(strings.ToValidUTF8(reason, "?"), 1000)
	if _, err := q.Exec(ctx, "UPDATE deliveries SET state = $2, error = $3, processed_at = $4 WHERE id = $1 AND state = 'received'",
		id, state, reason, now); err != nil {
		return fmt.Errorf("marking delivery %d %s: %w", id, state, err)
	}
	return nil
}
