package jobs_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/jobs"
	"github.com/superagent-dev/superagent/tickets"
)

func TestPullRequestsEndDecideTheirTickets(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		st := tickets.New(tickets.Config{})
		w := &jobs.Waker{Queue: newQueue(t, d), Tickets: st}
		pr := tickets.Thread{Source: tickets.SourceGitHub, Key: "github:octo/repo#12", Repo: "octo/repo", Number: 12}
		// The Ticket whose pull request #12 is, and one that only follows it.
		var mine, follower tickets.Ticket
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			th, err := st.UpsertThread(ctx, tx, pr)
			if err != nil {
				return err
			}
			for _, tk := range []*tickets.Ticket{&mine, &follower} {
				if *tk, err = st.CreateTicket(ctx, tx, tickets.Ticket{Title: "t", Repo: "octo/repo", State: tickets.TicketInReview}); err != nil {
					return err
				}
				if err := st.Subscribe(ctx, tx, tk.ID, th.ID); err != nil {
					return err
				}
			}
			return st.SetPullRequest(ctx, tx, mine.ID, "superagent/ticket-1", 12)
		}))
		admit := func(kind string) (ended []tickets.Ticket) {
			require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
				c, err := st.Admit(ctx, tx, tickets.NewCard{DeliveryID: seed.Delivery(t, tx, kind), Source: tickets.SourceGitHub, Kind: kind,
					Thread: pr, Author: tickets.Author{ID: "1", Login: "carol", Type: tickets.AuthorUser}}, 0)
				if err != nil {
					return err
				}
				ended, err = w.PullEnded(ctx, tx, c)
				return err
			}))
			return ended
		}

		require.Empty(t, admit("pr_edited"), "only the end of a pull request ends its Ticket")
		ended := admit(tickets.KindPullMerged)
		require.Len(t, ended, 1)
		require.Equal(t, mine.ID, ended[0].ID)
		got, err := st.Ticket(ctx, d, mine.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketDone, got.State)
		reports, err := st.Reports(ctx, d, mine.ID)
		require.NoError(t, err)
		require.Len(t, reports, 1)
		require.Equal(t, tickets.ReportDone, reports[0].State)
		require.Equal(t, "Pull request octo/repo#12 was merged by carol; the Ticket is done.", reports[0].Summary)
		require.Equal(t, []string{"available"}, states(t, d, "execute_ticket"), "the Executor is woken to clean up")
		got, err = st.Ticket(ctx, d, follower.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketInReview, got.State, "a Ticket whose pull request it is not goes on")

		ds, err := st.Deliveries(ctx, d, mine.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.DeliveryWithheld, ds[len(ds)-1].State, "the merge card stays with the Ticket it ended")
		require.Empty(t, admit(tickets.KindPullClosed), "an ended Ticket ends once")
	})
}
