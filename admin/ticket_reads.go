package admin

import (
	"context"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/tickets"
)

// ticketReads are the read-only queries the Ticket pages need that package
// tickets does not offer yet (a list filtered by text, a Ticket's cards and
// hand-backs). They only read; every write goes through the owning package.
// When tickets grows these reads, the panel should call them instead.
type ticketReads struct{}

// ticketFilter narrows the Ticket list.
type ticketFilter struct {
	// State is one Ticket state, or "" for all.
	State string
	// Query matches the title or repository, case-insensitively.
	Query string
	Limit int
}

func (ticketReads) list(ctx context.Context, q db.Querier, f ticketFilter) ([]tickets.Ticket, error) {
	where := []string{"1 = 1"}
	var args []any
	if f.State != "" {
		args = append(args, f.State)
		where = append(where, fmt.Sprintf("state = $%d", len(args)))
	}
	if f.Query != "" {
		args = append(args, "%"+strings.ToLower(f.Query)+"%")
		where = append(where, fmt.Sprintf("(LOWER(title) LIKE $%d OR LOWER(repo) LIKE $%d)", len(args), len(args)))
	}
	args = append(args, f.Limit)
	rows, err := q.Query(ctx, `SELECT id, title, state, repo, branch, created_at, updated_at FROM tickets
		WHERE `+strings.Join(where, " AND ")+fmt.Sprintf(" ORDER BY updated_at DESC, id DESC LIMIT $%d", len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("listing tickets: %w", err)
	}
	defer rows.Close()
	var out []tickets.Ticket
	for rows.Next() {
		var t tickets.Ticket
		if err := rows.Scan(&t.ID, &t.Title, &t.State, &t.Repo, &t.Branch, &t.CreatedAt, &t.UpdatedAt); err != nil {
			return nil, fmt.Errorf("listing tickets: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing tickets: %w", err)
	}
	return out, nil
}

// handBacks lists the cards a Ticket handed back, newest first
// (tickets.Store.HandBacks reads them by card only).
func (ticketReads) handBacks(ctx context.Context, q db.Querier, ticketID int64) ([]tickets.HandBack, error) {
	rows, err := q.Query(ctx, `SELECT card_id, ticket_id, reason, created_at FROM hand_backs
		WHERE ticket_id = $1 ORDER BY created_at DESC, card_id DESC`, ticketID)
	if err != nil {
		return nil, fmt.Errorf("listing hand-backs of ticket %d: %w", ticketID, err)
	}
	defer rows.Close()
	var out []tickets.HandBack
	for rows.Next() {
		var h tickets.HandBack
		if err := rows.Scan(&h.CardID, &h.TicketID, &h.Reason, &h.CreatedAt); err != nil {
			return nil, fmt.Errorf("listing hand-backs of ticket %d: %w", ticketID, err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing hand-backs of ticket %d: %w", ticketID, err)
	}
	return out, nil
}

// cardIDs lists the cards routed to a Ticket, newest first.
func (ticketReads) cardIDs(ctx context.Context, q db.Querier, ticketID int64, limit int) ([]int64, error) {
	rows, err := q.Query(ctx, `SELECT id FROM cards WHERE ticket_id = $1 ORDER BY id DESC LIMIT $2`, ticketID, limit)
	if err != nil {
		return nil, fmt.Errorf("listing cards of ticket %d: %w", ticketID, err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("listing cards of ticket %d: %w", ticketID, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing cards of ticket %d: %w", ticketID, err)
	}
	return ids, nil
}
