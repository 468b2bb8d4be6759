package tickets

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
)

// EndWithPull ends a live Ticket because its pull request was merged (it
// is done) or closed without being merged (it is cancelled). A person's
// pause ends with it, as with Cancel: the work it held is over. An ended
// Ticket is left as it is. It reports whether it ended the Ticket.
func (s *Store) EndWithPull(ctx context.Context, q db.Querier, id int64, merged bool) (bool, error) {
	state := TicketCancelled
	if merged {
		state = TicketDone
	}
	n, err := q.Exec(ctx, `UPDATE tickets SET state = $2, proposal = FALSE, paused_at = NULL, paused_by = '', pause_reason = '',
    resume_state = '', continue_by = '', continue_at = NULL, failed_at = NULL, failure = '', updated_at = $3
WHERE id = $1 AND state NOT IN ('done', 'cancelled')`, id, state, s.nowUTC())
	if err != nil {
		return false, fmt.Errorf("ending ticket %d with its pull request: %w", id, err)
	}
	if n == 0 {
		_, err := s.Ticket(ctx, q, id)
		return false, err
	}
	return true, s.releaseHeld(ctx, q, id)
}

// ErrNotFailed is returned by Retry for a Ticket whose latest Executor job
// did not fail: there is nothing to run again.
var ErrNotFailed = errors.New("ticket's last executor job did not fail")

// Fail records that the Ticket's latest Executor job ran out of attempts,
// with the (scrubbed) error: a person may retry it.
func (s *Store) Fail(ctx context.Context, q db.Querier, id int64, reason string) error {
	if _, err := q.Exec(ctx, `UPDATE tickets SET failed_at = $2, failure = $3, updated_at = $2 WHERE id = $1`, id, s.nowUTC(), reason); err != nil {
		return fmt.Errorf("recording the failure of ticket %d: %w", id, err)
	}
	return nil
}

// ClearFailure forgets a recorded failure: a new Executor job of the
// Ticket has started, so its last job is no longer the failed one.
func (s *Store) ClearFailure(ctx context.Context, q db.Querier, id int64) error {
	if _, err := q.Exec(ctx, `UPDATE tickets SET failed_at = NULL, failure = '' WHERE id = $1 AND failed_at IS NOT NULL`, id); err != nil {
		return fmt.Errorf("clearing the failure of ticket %d: %w", id, err)
	}
	return nil
}

// Retry reopens a Ticket whose latest Executor job failed (Fail), so a new
// job runs it again: its Session goes on where its transcript ends. A
// paused Ticket is refused with ErrPaused, an ended one with ErrEnded, one
// whose last job did not fail with ErrNotFailed.
func (s *Store) Retry(ctx context.Context, q db.Querier, id int64) error {
	t, err := s.Ticket(ctx, q, id)
	if err != nil {
		return err
	}
	switch {
	case t.Pause != nil:
		return fmt.Errorf("retrying ticket %d: %w", id, ErrPaused)
	case Ended(t.State):
		return fmt.Errorf("retrying ticket %d: %w", id, ErrEnded)
	case t.Failed == nil:
		return fmt.Errorf("retrying ticket %d: %w", id, ErrNotFailed)
	}
	_, err = q.Exec(ctx, `UPDATE tickets SET state = 'open', failed_at = NULL, failure = '', updated_at = $2 WHERE id = $1`, id, s.nowUTC())
	if err != nil {
		return fmt.Errorf("retrying ticket %d: %w", id, err)
	}
	return nil
}

// CommandTargets lists the Tickets a person's command in a Thread
// addresses, lowest id first: the live Tickets that follow it
// (Subscribers), and those a person stopped, which only a command can
// continue.
func (s *Store) CommandTargets(ctx context.Context, q db.Querier, threadID int64) ([]int64, error) {
	return s.followers(ctx, q, threadID, "(t.state NOT IN ('done', 'cancelled') OR t.stopped_at IS NOT NULL)")
}

// Actor names a card's author in the records of a person's pause, stop,
// continue or retry: source:login, or source:id where there is no login.
func Actor(c Card) string {
	if c.Author.Login != "" {
		return c.Source + ":" + c.Author.Login
	}
	return c.Source + ":" + c.Author.ID
}

// IsRequester reports whether a card's author is the person who asked for
// the Ticket (its Mandate's RequestedBy), on the same platform.
func IsRequester(t Ticket, c Card) bool {
	r := t.Mandate.RequestedBy
	if r == nil || c.Author.Type != AuthorUser || (t.Mandate.Source != "" && t.Mandate.Source != c.Source) {
		return false
	}
	if r.ID != "" && c.Author.ID != "" {
		return r.ID == c.Author.ID
	}
	return r.Login != "" && strings.EqualFold(r.Login, c.Author.Login)
}
