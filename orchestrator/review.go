package orchestrator

import (
	"context"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/tickets"
)

// reviewMandate makes t, the new Ticket of card c, a review Ticket when c
// asks the bot to review a pull request ("@bot review", on GitHub on the
// pull request itself, elsewhere with its link): its Mandate allows
// replies and one review, and no pushes, so the person's branch stays
// theirs. The pull request must be in the Ticket's repository.
func reviewMandate(c tickets.Card, t *tickets.Ticket) error {
	repo, number, ok := tickets.ReviewRequest(c)
	if !ok || t.Origin != tickets.OriginExplicit {
		return nil
	}
	if t.Repo == "" {
		return refuse("a review needs the repository of %s#%d: route it with repo %s", repo, number, repo)
	}
	if !strings.EqualFold(repo, t.Repo) {
		return refuse("the pull request to review, %s#%d, is not in %s: route it with repo %s", repo, number, t.Repo, repo)
	}
	t.Mandate.Actions = tickets.ReviewActions
	return nil
}

// followReviewed has a review Ticket follow the pull request it reviews,
// whatever Thread the request came from (a review comment's thread, a
// Feishu chat): replies in the review's threads are then its follow-ups.
func (o *Orchestrator) followReviewed(ctx context.Context, tx *db.Tx, c tickets.Card, t tickets.Ticket) error {
	repo, number, ok := tickets.ReviewRequest(c)
	if !ok || !tickets.IsReview(t) {
		return nil
	}
	key := fmt.Sprintf("github:%s#%d", strings.ToLower(repo), number) // webhooks.ThreadKey
	if key == c.Thread.Key {
		return nil // place subscribed it
	}
	th, err := o.deps.Tickets.UpsertThread(ctx, tx, tickets.Thread{Source: tickets.SourceGitHub, Key: key, Repo: repo, Number: number})
	if err != nil {
		return err
	}
	return o.deps.Tickets.Subscribe(ctx, tx, t.ID, th.ID)
}
