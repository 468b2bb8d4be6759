package tickets

import (
	"context"
	"fmt"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// StaleProposals lists, oldest first, up to limit proposals nobody has
// accepted that were made before cutoff and that no person holds.
func (s *Store) StaleProposals(ctx context.Context, q db.Querier, cutoff time.Time, limit int) ([]Ticket, error) {
	return queryAll(ctx, q, "listing stale proposals", scanTicket, "SELECT "+ticketColumns+` FROM tickets
WHERE proposal AND state = 'waiting' AND paused_at IS NULL AND created_at < $1 ORDER BY created_at, id LIMIT $2`, cutoff.UTC(), limit)
}

// ExpireProposal cancels proposal id if it still waits, unaccepted and
// unheld, and reports whether it did: an accept that came first wins.
func (s *Store) ExpireProposal(ctx context.Context, q db.Querier, id int64) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE tickets SET proposal = FALSE, state = 'cancelled', updated_at = $2
WHERE id = $1 AND proposal AND state = 'waiting' AND paused_at IS NULL`, id, s.nowUTC())
	if err != nil {
		return false, fmt.Errorf("expiring proposal %d: %w", id, err)
	}
	if n == 0 {
		return false, nil
	}
	return true, s.releaseHeld(ctx, q, id)
}
