package tickets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// Outgoing message states. An intent is recorded before anything is sent;
// it is claimed (sending) just before the call, so a process that dies
// mid-call leaves it sending and a retry never sends it a second time.
const (
	OutgoingPending = "pending"
	OutgoingSending = "sending"
	OutgoingSent    = "sent"
	OutgoingFailed  = "failed"
)

// Outgoing is one message the service sends (or sent) for a Ticket: a
// reaction, a comment, a chat reply.
type Outgoing struct {
	ID int64 `json:"id"`
	// Key identifies the intent: the same key is the same message.
	Key      string `json:"key"`
	TicketID int64  `json:"ticket,omitempty"`
	CardID   int64  `json:"card,omitempty"`
	Source   string `json:"source"`
	// Kind is reaction, comment or reply.
	Kind string `json:"kind"`
	// Target says where: a comment or message id, an issue number.
	Target string `json:"target,omitempty"`
	Body   string `json:"body,omitempty"`
	State  string `json:"state"`
	Error  string `json:"error,omitempty"`
	// Result is what a sent write produced (a URL, a number), kept so a
	// retried call answers the same without writing again.
	Result string `json:"result,omitempty"`
	// Held keeps a pending intent from being sent until ReleaseOutgoing: a
	// stop's acknowledgement waits for the stopped Executor's last
	// writes.
	Held      bool       `json:"held,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	SentAt    *time.Time `json:"sent_at,omitempty"`
}

const outgoingColumns = "id, intent_key, COALESCE(ticket_id, 0), COALESCE(card_id, 0), source, kind, target, body, state, error, result, held, created_at, sent_at"

func scanOutgoing(row scanner) (Outgoing, error) {
	var (
		o      Outgoing
		sentAt sql.NullTime
	)
	err := row.Scan(&o.ID, &o.Key, &o.TicketID, &o.CardID, &o.Source, &o.Kind, &o.Target, &o.Body, &o.State, &o.Error, &o.Result, &o.Held, &o.CreatedAt, &sentAt)
	if sentAt.Valid {
		t := sentAt.Time.UTC()
		o.SentAt = &t
	}
	o.CreatedAt = o.CreatedAt.UTC()
	return o, err
}

func nullID(id int64) sql.NullInt64 { return sql.NullInt64{Int64: id, Valid: id != 0} }

// RecordIntent stores an outgoing message as pending (held when o.Held)
// unless one with the same key exists; either way it returns the stored
// intent.
func (s *Store) RecordIntent(ctx context.Context, q db.Querier, o Outgoing) (Outgoing, error) {
	if _, err := q.Exec(ctx, `
INSERT INTO outgoing_messages (intent_key, ticket_id, card_id, source, kind, target, body, state, held, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9) ON CONFLICT (intent_key) DO NOTHING`,
		o.Key, nullID(o.TicketID), nullID(o.CardID), o.Source, o.Kind, o.Target, o.Body, o.Held, s.nowUTC()); err != nil {
		return Outgoing{}, fmt.Errorf("recording outgoing %q: %w", o.Key, err)
	}
	out, err := scanOutgoing(q.QueryRow(ctx, "SELECT "+outgoingColumns+" FROM outgoing_messages WHERE intent_key = $1", o.Key))
	if err != nil {
		return Outgoing{}, fmt.Errorf("reading outgoing %q: %w", o.Key, err)
	}
	return out, nil
}

// RecordClaimed stores an outgoing message already claimed (sending),
// for a caller that sends it at once, unless one with the same key
// exists: won reports that this call stored it, and so is to send it.
// Recorded this way, the intent is never pending, so a Deliver running
// meanwhile (the main Session's sender) cannot claim a write that is not
// its own between the record and the claim.
func (s *Store) RecordClaimed(ctx context.Context, q db.Querier, o Outgoing) (rec Outgoing, won bool, err error) {
	now := s.nowUTC()
	n, err := q.Exec(ctx, `
INSERT INTO outgoing_messages (intent_key, ticket_id, card_id, source, kind, target, body, state, held, created_at, claimed_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, 'sending', FALSE, $8, $8) ON CONFLICT (intent_key) DO NOTHING`,
		o.Key, nullID(o.TicketID), nullID(o.CardID), o.Source, o.Kind, o.Target, o.Body, now)
	if err != nil {
		return Outgoing{}, false, fmt.Errorf("recording outgoing %q: %w", o.Key, err)
	}
	rec, err = s.Intent(ctx, q, o.Key)
	return rec, n > 0, err
}

// ClaimIntent moves a pending intent to sending and reports whether this
// caller won it; only the winner sends.
func (s *Store) ClaimIntent(ctx context.Context, q db.Querier, id int64) (bool, error) {
	n, err := q.Exec(ctx, "UPDATE outgoing_messages SET state = 'sending', claimed_at = $2 WHERE id = $1 AND state = 'pending'", id, s.nowUTC())
	if err != nil {
		return false, fmt.Errorf("claiming outgoing %d: %w", id, err)
	}
	return n > 0, nil
}

// FinishIntent records how sending went: sent when sendErr is nil, else
// failed with its text.
func (s *Store) FinishIntent(ctx context.Context, q db.Querier, id int64, sendErr error) error {
	state, msg := OutgoingSent, ""
	if sendErr != nil {
		state, msg = OutgoingFailed, sendErr.Error()
	}
	if _, err := q.Exec(ctx, "UPDATE outgoing_messages SET state = $2, error = $3, sent_at = $4 WHERE id = $1", id, state, msg, s.nowUTC()); err != nil {
		return fmt.Errorf("finishing outgoing %d: %w", id, err)
	}
	return nil
}

// SentIntent records that an intent was sent and what it produced.
func (s *Store) SentIntent(ctx context.Context, q db.Querier, id int64, result string) error {
	if _, err := q.Exec(ctx, "UPDATE outgoing_messages SET state = 'sent', error = '', result = $2, sent_at = $3 WHERE id = $1",
		id, result, s.nowUTC()); err != nil {
		return fmt.Errorf("finishing outgoing %d: %w", id, err)
	}
	return nil
}

// Reclaim moves an intent that failed, or whose sender died mid-call, back
// to sending for a caller that has made sure it was not sent (or that the
// other side deduplicates); it reports whether this caller won it.
func (s *Store) Reclaim(ctx context.Context, q db.Querier, id int64, from string) (bool, error) {
	n, err := q.Exec(ctx, "UPDATE outgoing_messages SET state = 'sending', error = '', claimed_at = $3 WHERE id = $1 AND state = $2",
		id, from, s.nowUTC())
	if err != nil {
		return false, fmt.Errorf("reclaiming outgoing %d: %w", id, err)
	}
	return n > 0, nil
}

// PendingIntents lists intents not yet claimed and not held, oldest
// first.
func (s *Store) PendingIntents(ctx context.Context, q db.Querier, limit int) ([]Outgoing, error) {
	return s.listOutgoing(ctx, q, "WHERE state = 'pending' AND held = FALSE ORDER BY id LIMIT $1", limit)
}

// ReleaseOutgoing lets the held intents of a Ticket be sent and reports how
// many it released. The Executor calls it once the Ticket's last writes
// are made: a stop's acknowledgement then comes after everything the
// Ticket wrote.
func (s *Store) ReleaseOutgoing(ctx context.Context, q db.Querier, ticketID int64) (int64, error) {
	n, err := q.Exec(ctx, "UPDATE outgoing_messages SET held = FALSE WHERE ticket_id = $1 AND held = TRUE", ticketID)
	if err != nil {
		return 0, fmt.Errorf("releasing the held messages of ticket %d: %w", ticketID, err)
	}
	return n, nil
}

// TicketsWithHeldOutgoing lists the Tickets with held intents.
func (s *Store) TicketsWithHeldOutgoing(ctx context.Context, q db.Querier) ([]int64, error) {
	return queryAll(ctx, q, "listing tickets with held messages", func(r scanner) (int64, error) {
		var id int64
		return id, r.Scan(&id)
	}, "SELECT DISTINCT ticket_id FROM outgoing_messages WHERE held = TRUE AND ticket_id IS NOT NULL ORDER BY ticket_id")
}

// Outgoings lists every message recorded for a Ticket, oldest first.
func (s *Store) Outgoings(ctx context.Context, q db.Querier, ticketID int64) ([]Outgoing, error) {
	return s.listOutgoing(ctx, q, "WHERE ticket_id = $1 ORDER BY id", ticketID)
}

// Intent reads one intent by key.
func (s *Store) Intent(ctx context.Context, q db.Querier, key string) (Outgoing, error) {
	o, err := scanOutgoing(q.QueryRow(ctx, "SELECT "+outgoingColumns+" FROM outgoing_messages WHERE intent_key = $1", key))
	if errors.Is(err, db.ErrNoRows) {
		return Outgoing{}, fmt.Errorf("reading outgoing %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return Outgoing{}, fmt.Errorf("reading outgoing %q: %w", key, err)
	}
	return o, nil
}

func (s *Store) listOutgoing(ctx context.Context, q db.Querier, where string, args ...any) ([]Outgoing, error) {
	return queryAll(ctx, q, "listing outgoing messages", scanOutgoing, "SELECT "+outgoingColumns+" FROM outgoing_messages "+where, args...)
}

// RetryStale returns to pending the intents stuck in sending since before
// cutoff (their sender died mid-call) whose source and kind are safe to
// send again — keys like "github/reaction" for which the receiving side
// deduplicates. Others stay sending: at most once.
func (s *Store) RetryStale(ctx context.Context, q db.Querier, cutoff time.Time, safe []string) (int64, error) {
	var total int64
	for _, k := range safe {
		source, kind, _ := strings.Cut(k, "/")
		n, err := q.Exec(ctx, `UPDATE outgoing_messages SET state = 'pending'
WHERE state = 'sending' AND source = $1 AND kind = $2 AND claimed_at < $3`, source, kind, cutoff.UTC())
		if err != nil {
			return total, fmt.Errorf("retrying stale outgoing messages: %w", err)
		}
		total += n
	}
	return total, nil
}
