package tickets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// Ticket states.
const (
	TicketOpen      = "open"
	TicketWorking   = "working"
	TicketWaiting   = "waiting"
	TicketPaused    = "paused"
	TicketDone      = "done"
	TicketCancelled = "cancelled"
)

// Ticket is a unit of work. This is its minimal form; the routing issue
// adds origin, Mandate, sessions and reports.
type Ticket struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	State string `json:"state"`
	// Repo is owner/name of the repository the Ticket works in.
	Repo string `json:"repo,omitempty"`
	// Branch is the Ticket's working branch, once it has one.
	Branch    string    `json:"branch,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

const ticketColumns = "id, title, state, repo, branch, created_at, updated_at"

func scanTicket(row scanner) (Ticket, error) {
	var t Ticket
	err := row.Scan(&t.ID, &t.Title, &t.State, &t.Repo, &t.Branch, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

// CreateTicket stores a new Ticket (state open unless t.State says otherwise).
func (s *Store) CreateTicket(ctx context.Context, q db.Querier, t Ticket) (Ticket, error) {
	if t.State == "" {
		t.State = TicketOpen
	}
	now := s.nowUTC()
	out, err := scanTicket(q.QueryRow(ctx, `
INSERT INTO tickets (title, state, repo, branch, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $5) RETURNING `+ticketColumns,
		t.Title, t.State, t.Repo, t.Branch, now))
	if err != nil {
		return Ticket{}, fmt.Errorf("creating ticket %q: %w", t.Title, err)
	}
	return out, nil
}

// Ticket reads a Ticket.
func (s *Store) Ticket(ctx context.Context, q db.Querier, id int64) (Ticket, error) {
	t, err := scanTicket(q.QueryRow(ctx, "SELECT "+ticketColumns+" FROM tickets WHERE id = $1", id))
	if errors.Is(err, db.ErrNoRows) {
		return Ticket{}, fmt.Errorf("reading ticket %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("reading ticket %d: %w", id, err)
	}
	return t, nil
}

// Subscribe makes a Ticket follow a Thread; subscribing twice is a no-op.
func (s *Store) Subscribe(ctx context.Context, q db.Querier, ticketID, threadID int64) error {
	_, err := q.Exec(ctx, `
INSERT INTO subscriptions (ticket_id, thread_id, created_at) VALUES ($1, $2, $3)
ON CONFLICT (ticket_id, thread_id) DO NOTHING`, ticketID, threadID, s.nowUTC())
	if err != nil {
		return fmt.Errorf("subscribing ticket %d to thread %d: %w", ticketID, threadID, err)
	}
	return nil
}

// Subscribers lists the Tickets, not done or cancelled, that follow a
// Thread, lowest id first.
func (s *Store) Subscribers(ctx context.Context, q db.Querier, threadID int64) ([]int64, error) {
	rows, err := q.Query(ctx, `
SELECT t.id FROM subscriptions s JOIN tickets t ON t.id = s.ticket_id
WHERE s.thread_id = $1 AND t.state NOT IN ('done', 'cancelled')
ORDER BY t.id`, threadID)
	if err != nil {
		return nil, fmt.Errorf("listing subscribers of thread %d: %w", threadID, err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("listing subscribers of thread %d: %w", threadID, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing subscribers of thread %d: %w", threadID, err)
	}
	return ids, nil
}

// FollowUpNotice tells the main Session that a card reached a Ticket's
// Executor; it may act on it only to stop work.
type FollowUpNotice struct {
	ID        int64     `json:"id"`
	CardID    int64     `json:"card"`
	TicketID  int64     `json:"ticket"`
	CreatedAt time.Time `json:"created_at"`
}

// PendingNotices lists follow-up notices not yet delivered, oldest first.
func (s *Store) PendingNotices(ctx context.Context, q db.Querier, limit int) ([]FollowUpNotice, error) {
	rows, err := q.Query(ctx, `
SELECT id, card_id, ticket_id, created_at FROM follow_up_notices
WHERE delivered_at IS NULL ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("listing pending follow-up notices: %w", err)
	}
	defer rows.Close()
	var out []FollowUpNotice
	for rows.Next() {
		var n FollowUpNotice
		if err := rows.Scan(&n.ID, &n.CardID, &n.TicketID, &n.CreatedAt); err != nil {
			return nil, fmt.Errorf("listing pending follow-up notices: %w", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing pending follow-up notices: %w", err)
	}
	return out, nil
}

// MarkNoticesDelivered records that the main Session has seen the notices.
func (s *Store) MarkNoticesDelivered(ctx context.Context, q db.Querier, ids []int64) error {
	for _, id := range ids {
		if _, err := q.Exec(ctx, "UPDATE follow_up_notices SET delivered_at = $2 WHERE id = $1 AND delivered_at IS NULL", id, s.nowUTC()); err != nil {
			return fmt.Errorf("marking follow-up notice %d delivered: %w", id, err)
		}
	}
	return nil
}
