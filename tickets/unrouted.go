package tickets

import (
	"context"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
)

// Unrouted is a card that never became or joined a Ticket: a candidate
// waiting for the main Session, one the main Session ignored (Note is its
// routing note, the reason it gave), or one whose routing decision the
// host refused (Refusal says why; the card stays a candidate).
type Unrouted struct {
	Card
	Note    string `json:"note,omitempty"`
	Refusal string `json:"refusal,omitempty"`
}

// SetRouteRefusal keeps with a candidate why the host refused the main
// Session's decision on it, for the panel. An accepted decision later
// moves the card out of the candidates, and the refusal no longer shows.
func (s *Store) SetRouteRefusal(ctx context.Context, q db.Querier, cardID int64, reason string) error {
	if _, err := q.Exec(ctx, "UPDATE cards SET route_refusal = $2 WHERE id = $1 AND state = 'candidate'", cardID, reason); err != nil {
		return fmt.Errorf("storing the refusal of card %d: %w", cardID, err)
	}
	return nil
}

// UnroutedCards lists up to limit cards that never reached a Ticket,
// newest first: candidates (refused or not) and ignored cards.
func (s *Store) UnroutedCards(ctx context.Context, q db.Querier, limit int) ([]Unrouted, error) {
	query := strings.Replace(cardSelect, "FROM cards c", ", c.routing_note, c.route_refusal FROM cards c", 1) +
		" WHERE c.state IN ('candidate', 'ignored') ORDER BY c.id DESC LIMIT $1"
	return queryAll(ctx, q, "listing unrouted cards", func(row scanner) (Unrouted, error) {
		var u Unrouted
		var note, refusal string
		c, err := scanCard(extraColumns{row, []any{&note, &refusal}})
		u.Card, u.Note, u.Refusal = c, note, refusal
		return u, err
	}, query, limit)
}

// extraColumns scans a card row that carries more columns after the
// card's own.
type extraColumns struct {
	row   scanner
	extra []any
}

func (e extraColumns) Scan(dest ...any) error { return e.row.Scan(append(dest, e.extra...)...) }
