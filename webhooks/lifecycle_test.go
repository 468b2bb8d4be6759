package webhooks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/tickets"
	"github.com/superagent-dev/superagent/webhooks"
)

// The trigger label, added to an issue, addresses the bot in the name of
// whoever added it; another label does nothing.
func TestTriggerLabelAddressesTheBot(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(c *webhooks.Config) { c.GitHub.TriggerLabel = "Agent" })
		labeled := func(name string) []byte {
			return patch(t, fixture(t, "issues/labeled.payload.json"), func(m map[string]any) { obj(m, "label")["name"] = name })
		}
		id := e.deliver(t, "issues", labeled("bug"))
		require.Equal(t, webhooks.DeliveryIgnored, e.delivery(t, id).State)

		c := e.card(t, e.deliver(t, "issues", labeled("agent")))
		require.Equal(t, "issue_labeled", c.Kind)
		require.True(t, c.Addressed)
		require.Equal(t, "label", c.AddressedWhy)
		require.Equal(t, "Codertocat", c.Author.Login, "the person who added the label asks")
		require.NotEmpty(t, c.Author.Permission, "and the gate reads their permission")
		require.Equal(t, hello+"#1", c.Thread.Key)
		require.Contains(t, c.Text, "Spelling error in the README file")
		require.Equal(t, tickets.CardCandidate, c.State)
	})
}

// A person's pull request that says it fixes an issue reaches the Tickets
// working on that issue, as a follow-up.
func TestPullRequestFixingAnIssueReachesItsTicket(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d)
		ctx := context.Background()
		issue := e.card(t, e.deliver(t, "issues", fixture(t, "issues/opened.payload.json")))
		var tk tickets.Ticket
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			if tk, err = e.store.CreateTicket(ctx, tx, tickets.Ticket{Title: "fix README", Repo: "Codertocat/Hello-World"}); err != nil {
				return err
			}
			return e.store.Subscribe(ctx, tx, tk.ID, issue.Thread.ID)
		}))

		pr := patch(t, fixture(t, "pull_request/opened.payload.json"), func(m map[string]any) {
			obj(m, "pull_request")["body"] = "Fixes #1 by spelling it right."
		})
		c := e.card(t, e.deliver(t, "pull_request", pr))
		require.Equal(t, "pr_opened", c.Kind)
		require.Equal(t, hello+"#2", c.Thread.Key, "in the pull request's own Thread")
		require.Equal(t, tickets.CardFollowUp, c.State, "and a follow-up for the issue's Ticket")
		require.Equal(t, tk.ID, c.TicketID)
		owners, err := e.store.FollowUpTickets(ctx, d, c.ID)
		require.NoError(t, err)
		require.Equal(t, []int64{tk.ID}, owners)

		other := patch(t, fixture(t, "pull_request/opened.payload.json"), func(m map[string]any) {
			obj(m, "pull_request")["number"] = float64(3)
			obj(m, "pull_request")["body"] = "Unrelated: see #7."
		})
		require.Equal(t, tickets.CardCandidate, e.card(t, e.deliver(t, "pull_request", other)).State)
	})
}

// A failed workflow run's card links the run's page, from which the
// Executor lists the run's jobs.
func TestWorkflowRunFailureLinksTheRun(t *testing.T) {
	t.Parallel()
	e := setup(t, dbtest.SQLite(t))
	wf := patch(t, fixture(t, "workflow_run/completed.payload.json"), func(m map[string]any) {
		obj(m, "workflow_run")["conclusion"] = "failure"
	})
	c := e.card(t, e.deliver(t, "workflow_run", wf))
	require.Equal(t, "check_failure", c.Kind)
	require.Equal(t, "https://github.com/octo-org/octo-repo/actions/runs/289782451", c.URL)
}
