package tickets

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// Delivery states: a card a Ticket's Executor was given, or one the host
// kept from it on purpose (a limit). Either way the Ticket took the card.
const (
	DeliveryDelivered = "delivered"
	DeliveryWithheld  = "withheld"
)

// InboxCard is a card waiting for a Ticket's Executor, with the main
// Session's routing note when the card was routed to the Ticket.
type InboxCard struct {
	Card
	RoutingNote string `json:"routing_note,omitempty"`
}

// Note is a note from the main Session to a Ticket's Executor.
type Note struct {
	ID        int64     `json:"id"`
	TicketID  int64     `json:"ticket"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// Inbox lists, oldest first, the cards that reached a Ticket and that its
// Executor has not been given yet: the cards routed to it (the one that
// made it and those attached to it) and the follow-ups in the Threads it
// follows.
func (s *Store) Inbox(ctx context.Context, q db.Querier, ticketID int64, limit int) ([]InboxCard, error) {
	return queryAll(ctx, q, fmt.Sprintf("reading the inbox of ticket %d", ticketID), func(row scanner) (InboxCard, error) {
		var ic InboxCard
		c, err := scanCard(prefixScanner{row, &ic.RoutingNote})
		ic.Card = c
		return ic, err
	}, strings.Replace(cardSelect, "SELECT ", "SELECT c.routing_note, ", 1)+`
WHERE (c.ticket_id = $1 AND c.state = 'routed'
       OR c.id IN (SELECT card_id FROM follow_up_notices WHERE ticket_id = $1))
  AND NOT EXISTS (SELECT 1 FROM ticket_deliveries d WHERE d.ticket_id = $1 AND d.card_id = c.id)
ORDER BY c.id LIMIT $2`, ticketID, limit)
}

// prefixScanner scans one extra leading column into first.
type prefixScanner struct {
	row   scanner
	first *string
}

func (p prefixScanner) Scan(dest ...any) error {
	return p.row.Scan(append([]any{p.first}, dest...)...)
}

// MarkDelivered records that a card went to a Ticket's Executor (state
// DeliveryDelivered, in Session sessionID) or was kept from it
// (DeliveryWithheld, with the reason). Recording it twice keeps the first.
func (s *Store) MarkDelivered(ctx context.Context, q db.Querier, ticketID, cardID, sessionID int64, state, reason string) error {
	_, err := q.Exec(ctx, `
INSERT INTO ticket_deliveries (ticket_id, card_id, session_id, state, reason, created_at)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (ticket_id, card_id) DO NOTHING`,
		ticketID, cardID, nullID(sessionID), state, reason, s.nowUTC())
	if err != nil {
		return fmt.Errorf("recording delivery of card %d to ticket %d: %w", cardID, ticketID, err)
	}
	return nil
}

// Delivery is how a card reached a Ticket's Executor.
type Delivery struct {
	CardID    int64     `json:"card"`
	State     string    `json:"state"`
	Reason    string    `json:"reason,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Deliveries lists what a Ticket's Executor was given or kept from, by card.
func (s *Store) Deliveries(ctx context.Context, q db.Querier, ticketID int64) ([]Delivery, error) {
	return queryAll(ctx, q, fmt.Sprintf("listing deliveries of ticket %d", ticketID), func(row scanner) (Delivery, error) {
		var d Delivery
		err := row.Scan(&d.CardID, &d.State, &d.Reason, &d.CreatedAt)
		d.CreatedAt = d.CreatedAt.UTC()
		return d, err
	}, `SELECT card_id, state, reason, created_at FROM ticket_deliveries WHERE ticket_id = $1 ORDER BY card_id`, ticketID)
}

// PendingNotes lists the notes not yet given to a Ticket's Executor.
func (s *Store) PendingNotes(ctx context.Context, q db.Querier, ticketID int64) ([]Note, error) {
	return queryAll(ctx, q, fmt.Sprintf("listing notes of ticket %d", ticketID), func(row scanner) (Note, error) {
		var n Note
		err := row.Scan(&n.ID, &n.TicketID, &n.Text, &n.CreatedAt)
		n.CreatedAt = n.CreatedAt.UTC()
		return n, err
	}, `SELECT id, ticket_id, text, created_at FROM ticket_notes WHERE ticket_id = $1 AND delivered_at IS NULL ORDER BY id`, ticketID)
}

// MarkNoteDelivered records that a note reached the Executor.
func (s *Store) MarkNoteDelivered(ctx context.Context, q db.Querier, noteID int64) error {
	if _, err := q.Exec(ctx, "UPDATE ticket_notes SET delivered_at = $2 WHERE id = $1 AND delivered_at IS NULL", noteID, s.nowUTC()); err != nil {
		return fmt.Errorf("marking note %d delivered: %w", noteID, err)
	}
	return nil
}

// SetPullRequest records the Ticket's pull request number (and its branch).
func (s *Store) SetPullRequest(ctx context.Context, q db.Querier, ticketID int64, branch string, number int) error {
	if _, err := q.Exec(ctx, `UPDATE tickets SET pull_number = $2, branch = CASE WHEN $3 = '' THEN branch ELSE $3 END,
    updated_at = $4 WHERE id = $1`, ticketID, number, branch, s.nowUTC()); err != nil {
		return fmt.Errorf("recording the pull request of ticket %d: %w", ticketID, err)
	}
	return nil
}

// SetBranch records the Ticket's working branch.
func (s *Store) SetBranch(ctx context.Context, q db.Querier, ticketID int64, branch string) error {
	if _, err := q.Exec(ctx, "UPDATE tickets SET branch = $2, updated_at = $3 WHERE id = $1", ticketID, branch, s.nowUTC()); err != nil {
		return fmt.Errorf("recording the branch of ticket %d: %w", ticketID, err)
	}
	return nil
}

// Unsubscribe stops a Ticket following a Thread.
func (s *Store) Unsubscribe(ctx context.Context, q db.Querier, ticketID, threadID int64) error {
	if _, err := q.Exec(ctx, "DELETE FROM subscriptions WHERE ticket_id = $1 AND thread_id = $2", ticketID, threadID); err != nil {
		return fmt.Errorf("unsubscribing ticket %d from thread %d: %w", ticketID, threadID, err)
	}
	return nil
}

// Follows reports whether a Ticket follows the Thread with key (directly,
// or through the pull request a review thread belongs to) and whether it
// follows it for context only.
func (s *Store) Follows(ctx context.Context, q db.Querier, ticketID int64, key string) (followed, contextOnly bool, err error) {
	parent, _, _ := strings.Cut(key, "/review-thread/")
	rows, err := q.Query(ctx, `SELECT s.context_only FROM subscriptions s JOIN threads th ON th.id = s.thread_id
WHERE s.ticket_id = $1 AND th.key IN ($2, $3)`, ticketID, key, parent)
	if err != nil {
		return false, false, fmt.Errorf("checking whether ticket %d follows %s: %w", ticketID, key, err)
	}
	defer rows.Close()
	contextOnly = true
	for rows.Next() {
		var c bool
		if err := rows.Scan(&c); err != nil {
			return false, false, fmt.Errorf("checking whether ticket %d follows %s: %w", ticketID, key, err)
		}
		followed, contextOnly = true, contextOnly && c
	}
	if err := rows.Err(); err != nil {
		return false, false, fmt.Errorf("checking whether ticket %d follows %s: %w", ticketID, key, err)
	}
	return followed, followed && contextOnly, nil
}

// Disown returns to the main Session the cards of a Thread that a Ticket
// marked unrelated: those attached to it from there (never the card that
// made it) become candidates again. It reports how many.
func (s *Store) Disown(ctx context.Context, q db.Querier, ticketID, threadID int64) (int64, error) {
	n, err := q.Exec(ctx, `UPDATE cards SET state = 'candidate', ticket_id = NULL, offered_at = NULL
WHERE thread_id = $2 AND ticket_id = $1 AND state = 'routed'
  AND id NOT IN (SELECT source_card_id FROM tickets WHERE id = $1 AND source_card_id IS NOT NULL)`, ticketID, threadID)
	if err != nil {
		return 0, fmt.Errorf("returning the cards of thread %d from ticket %d: %w", threadID, ticketID, err)
	}
	return n, nil
}

// Received reports whether a card was given to a Ticket's Executor (not
// merely withheld from it).
func (s *Store) Received(ctx context.Context, q db.Querier, ticketID, cardID int64) (bool, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM ticket_deliveries WHERE ticket_id = $1 AND card_id = $2 AND state = 'delivered'`,
		ticketID, cardID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("checking whether ticket %d received card %d: %w", ticketID, cardID, err)
	}
	return n > 0, nil
}

// CountDeliveries counts the cards of a kind (by author, when not empty,
// case-insensitively) in the Thread with key or the Threads below it (a
// pull request's review threads) that a Ticket's Executor was given or kept
// from.
func (s *Store) CountDeliveries(ctx context.Context, q db.Querier, ticketID int64, key, kind, author string) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM ticket_deliveries d
JOIN cards c ON c.id = d.card_id JOIN threads th ON th.id = c.thread_id
WHERE d.ticket_id = $1 AND c.kind = $2 AND ($3 = '' OR LOWER(c.author_login) = $3)
  AND (th.key = $4 OR th.key LIKE $5)`, ticketID, kind, strings.ToLower(author), key, key+"/%").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting %s cards of ticket %d: %w", kind, ticketID, err)
	}
	return n, nil
}

// HeldFollowUps lists the follow-up cards of a Thread that reached a
// Ticket and are still follow-ups (not handed back or routed since).
func (s *Store) HeldFollowUps(ctx context.Context, q db.Querier, ticketID, threadID int64) ([]int64, error) {
	return queryAll(ctx, q, fmt.Sprintf("listing the follow-ups of ticket %d in thread %d", ticketID, threadID),
		func(row scanner) (int64, error) {
			var id int64
			return id, row.Scan(&id)
		}, `SELECT n.card_id FROM follow_up_notices n JOIN cards c ON c.id = n.card_id
WHERE n.ticket_id = $1 AND c.thread_id = $2 AND c.state = 'follow_up' ORDER BY n.card_id`, ticketID, threadID)
}
