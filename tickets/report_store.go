package tickets

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// Report states.
const (
	ReportProgress = "progress"
	ReportDone     = "done"
	ReportBlocked  = "blocked"
	ReportWaiting  = "waiting"
)

// Report is what an Executor sends back to the main Session.
type Report struct {
	ID        int64  `json:"id"`
	TicketID  int64  `json:"ticket"`
	SessionID int64  `json:"session,omitempty"`
	State     string `json:"state"`
	Summary   string `json:"summary"`
	// HumanAction is at most one concrete question for a person; Message
	// is the card id or message under which to ask it, if any.
	HumanAction string    `json:"human_action,omitempty"`
	Message     string    `json:"message,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// AddReport stores a Report; the main Session reads it at its next turn.
func (s *Store) AddReport(ctx context.Context, q db.Querier, r Report) (Report, error) {
	r.CreatedAt = s.nowUTC()
	var session sql.NullInt64
	if r.SessionID != 0 {
		session = sql.NullInt64{Int64: r.SessionID, Valid: true}
	}
	err := q.QueryRow(ctx, `
INSERT INTO ticket_reports (ticket_id, session_id, state, summary, human_action, message, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		r.TicketID, session, r.State, r.Summary, r.HumanAction, r.Message, r.CreatedAt).Scan(&r.ID)
	if err != nil {
		return Report{}, fmt.Errorf("storing report of ticket %d: %w", r.TicketID, err)
	}
	return r, nil
}

const reportSelect = `SELECT id, ticket_id, COALESCE(session_id, 0), state, summary, human_action, message, created_at FROM ticket_reports `

func (s *Store) listReports(ctx context.Context, q db.Querier, query string, args ...any) ([]Report, error) {
	return queryAll(ctx, q, "listing reports", func(row scanner) (Report, error) {
		var r Report
		err := row.Scan(&r.ID, &r.TicketID, &r.SessionID, &r.State, &r.Summary, &r.HumanAction, &r.Message, &r.CreatedAt)
		r.CreatedAt = r.CreatedAt.UTC()
		return r, err
	}, reportSelect+query, args...)
}

// Reports lists a Ticket's Reports, oldest first.
func (s *Store) Reports(ctx context.Context, q db.Querier, ticketID int64) ([]Report, error) {
	return s.listReports(ctx, q, "WHERE ticket_id = $1 ORDER BY id", ticketID)
}

// PendingReports lists Reports the main Session has not seen, oldest first.
func (s *Store) PendingReports(ctx context.Context, q db.Querier, limit int) ([]Report, error) {
	return s.listReports(ctx, q, "WHERE delivered_at IS NULL ORDER BY id LIMIT $1", limit)
}

// MarkReportsDelivered records that the main Session has seen the Reports.
func (s *Store) MarkReportsDelivered(ctx context.Context, q db.Querier, ids []int64) error {
	for _, id := range ids {
		if _, err := q.Exec(ctx, "UPDATE ticket_reports SET delivered_at = $2 WHERE id = $1 AND delivered_at IS NULL", id, s.nowUTC()); err != nil {
			return fmt.Errorf("marking report %d delivered: %w", id, err)
		}
	}
	return nil
}

// HandBack is an Executor returning a card that is beyond its Ticket.
type HandBack struct {
	CardID    int64     `json:"card"`
	TicketID  int64     `json:"ticket"`
	Reason    string    `json:"reason"`
	CreatedAt time.Time `json:"created_at"`
}

// AddHandBack records a hand-back. Once every Ticket the card reached has
// handed it back or ended, the card becomes a candidate again (and is
// offered to the main Session with the reasons); AddHandBack reports
// whether that happened.
func (s *Store) AddHandBack(ctx context.Context, q db.Querier, h HandBack) (bool, error) {
	now := s.nowUTC()
	if _, err := q.Exec(ctx, `
INSERT INTO hand_backs (card_id, ticket_id, reason, created_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (card_id, ticket_id) DO NOTHING`, h.CardID, h.TicketID, h.Reason, now); err != nil {
		return false, fmt.Errorf("storing hand-back of card %d by ticket %d: %w", h.CardID, h.TicketID, err)
	}
	n, err := q.Exec(ctx, `UPDATE cards SET state = 'candidate', ticket_id = NULL, offered_at = NULL
WHERE id = $1 AND state = 'follow_up' AND NOT EXISTS (`+holdingOwners+`)`, h.CardID)
	if err != nil {
		return false, fmt.Errorf("returning card %d to the main Session: %w", h.CardID, err)
	}
	return n > 0, nil
}

// HandBacks lists the hand-backs of a card, by Ticket.
func (s *Store) HandBacks(ctx context.Context, q db.Querier, cardID int64) ([]HandBack, error) {
	rows, err := q.Query(ctx, "SELECT card_id, ticket_id, reason, created_at FROM hand_backs WHERE card_id = $1 ORDER BY ticket_id", cardID)
	if err != nil {
		return nil, fmt.Errorf("listing hand-backs of card %d: %w", cardID, err)
	}
	defer rows.Close()
	var out []HandBack
	for rows.Next() {
		var h HandBack
		if err := rows.Scan(&h.CardID, &h.TicketID, &h.Reason, &h.CreatedAt); err != nil {
			return nil, fmt.Errorf("listing hand-backs of card %d: %w", cardID, err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing hand-backs of card %d: %w", cardID, err)
	}
	return out, nil
}

// AddNote stores a note from the main Session to a Ticket's Executor.
func (s *Store) AddNote(ctx context.Context, q db.Querier, ticketID int64, text string) error {
	if _, err := q.Exec(ctx, "INSERT INTO ticket_notes (ticket_id, text, created_at) VALUES ($1, $2, $3)", ticketID, text, s.nowUTC()); err != nil {
		return fmt.Errorf("storing note for ticket %d: %w", ticketID, err)
	}
	return nil
}

// Notes lists the notes to a Ticket, oldest first.
func (s *Store) Notes(ctx context.Context, q db.Querier, ticketID int64) ([]string, error) {
	rows, err := q.Query(ctx, "SELECT text FROM ticket_notes WHERE ticket_id = $1 ORDER BY id", ticketID)
	if err != nil {
		return nil, fmt.Errorf("listing notes of ticket %d: %w", ticketID, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, fmt.Errorf("listing notes of ticket %d: %w", ticketID, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing notes of ticket %d: %w", ticketID, err)
	}
	return out, nil
}
