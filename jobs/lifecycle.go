package jobs

import (
	"context"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/tickets"
)

// EndWithPull ends the Ticket t in tx because its pull request was merged
// or closed (tickets.Store.EndWithPull), by the person or account by:
// the main Session reads a short final Report, and the Executor is woken
// to remove the workspace and bring the Ticket's progress on GitHub to
// its end. It reports whether it ended the Ticket (false: it had ended).
func (w *Waker) EndWithPull(ctx context.Context, tx *db.Tx, t tickets.Ticket, merged bool, by string) (bool, error) {
	ended, err := w.Tickets.EndWithPull(ctx, tx, t.ID, merged)
	if err != nil || !ended {
		return false, err
	}
	summary := fmt.Sprintf("Pull request %s#%d was merged by %s; the Ticket is done.", t.Repo, t.PullNumber, by)
	if !merged {
		summary = fmt.Sprintf("Pull request %s#%d was closed without being merged by %s; the Ticket ended without its change.", t.Repo, t.PullNumber, by)
	}
	if _, err := w.Report(ctx, tx, tickets.Report{TicketID: t.ID, State: tickets.ReportDone, Summary: summary}); err != nil {
		return false, err
	}
	return true, w.WakeExecutor(ctx, tx, t.ID)
}

// PullEnded applies, inside the transaction that admitted it, a card that
// says a pull request was merged or closed: every live Ticket whose pull
// request it is ends (EndWithPull). The card is recorded as taken by each
// (withheld: the Executor has nothing left to do with it), so it does not
// go back to the main Session. It returns the Tickets it ended; any other
// card changes nothing.
func (w *Waker) PullEnded(ctx context.Context, tx *db.Tx, c tickets.Card) ([]tickets.Ticket, error) {
	merged := c.Kind == tickets.KindPullMerged
	if c.Source != tickets.SourceGitHub || (!merged && c.Kind != tickets.KindPullClosed) || c.Thread.Number == 0 {
		return nil, nil
	}
	ids, err := w.Tickets.Subscribers(ctx, tx, c.Thread.ID)
	if err != nil {
		return nil, err
	}
	var out []tickets.Ticket
	for _, id := range ids {
		t, err := w.Tickets.Ticket(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		if t.PullNumber != c.Thread.Number || !strings.EqualFold(t.Repo, c.Thread.Repo) {
			continue
		}
		if err := w.Tickets.MarkDelivered(ctx, tx, t.ID, c.ID, 0, tickets.DeliveryWithheld, "the pull request's end ended the Ticket"); err != nil {
			return nil, err
		}
		by := c.Author.Login
		if by == "" {
			by = "someone"
		}
		ended, err := w.EndWithPull(ctx, tx, t, merged, by)
		if err != nil {
			return nil, err
		}
		if ended {
			out = append(out, t)
		}
	}
	return out, nil
}
