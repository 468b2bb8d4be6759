package tickets_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/tickets"
)

func TestInbox(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})
		src := admitted(t, d, s, "i1", "github:octo/repo#7")
		tk, err := s.CreateTicket(ctx, d, tickets.Ticket{Title: "Fix typo", Repo: "octo/repo", SourceCardID: src.ID})
		require.NoError(t, err)
		require.NoError(t, s.Subscribe(ctx, d, tk.ID, src.Thread.ID))
		require.NoError(t, s.SetCardState(ctx, d, src.ID, tickets.CardRouted, tk.ID))
		require.NoError(t, s.SetRoutingNote(ctx, d, src.ID, "asked by the maintainer"))

		in, err := s.Inbox(ctx, d, tk.ID, 10)
		require.NoError(t, err)
		require.Len(t, in, 1)
		require.Equal(t, src.ID, in[0].ID)
		require.Equal(t, "asked by the maintainer", in[0].RoutingNote)

		require.NoError(t, s.MarkDelivered(ctx, d, tk.ID, src.ID, 0, tickets.DeliveryDelivered, ""))
		require.NoError(t, s.MarkDelivered(ctx, d, tk.ID, src.ID, 0, tickets.DeliveryWithheld, "twice"), "recording twice keeps the first")
		got, err := s.Received(ctx, d, tk.ID, src.ID)
		require.NoError(t, err)
		require.True(t, got)
		n, err := s.CountDeliveries(ctx, d, tk.ID, "github:octo/repo#7", "comment", "ALICE")
		require.NoError(t, err)
		require.Equal(t, 1, n, "by kind and author, case-insensitively")
		n, err = s.CountDeliveries(ctx, d, tk.ID, "github:octo/repo#7", "review", "")
		require.NoError(t, err)
		require.Zero(t, n)
		in, err = s.Inbox(ctx, d, tk.ID, 10)
		require.NoError(t, err)
		require.Empty(t, in)

		t.Run("follow-ups, including review threads of a followed pull request", func(t *testing.T) {
			f := admitted(t, d, s, "i2", "github:octo/repo#7")
			require.Equal(t, tickets.CardFollowUp, f.State)
			r := admitted(t, d, s, "i3", "github:octo/repo#7/review-thread/991")
			require.Equal(t, tickets.CardFollowUp, r.State, "a review thread of a followed pull request is followed")
			other := admitted(t, d, s, "i4", "github:octo/repo#70/review-thread/5")
			require.Equal(t, tickets.CardCandidate, other.State)
			in, err := s.Inbox(ctx, d, tk.ID, 10)
			require.NoError(t, err)
			require.Len(t, in, 2)
			require.Equal(t, []int64{f.ID, r.ID}, []int64{in[0].ID, in[1].ID})
			held, err := s.HeldFollowUps(ctx, d, tk.ID, f.Thread.ID)
			require.NoError(t, err)
			require.Equal(t, []int64{f.ID}, held)
			require.NoError(t, s.MarkDelivered(ctx, d, tk.ID, r.ID, 0, tickets.DeliveryWithheld, "round 4"))
			received, err := s.Received(ctx, d, tk.ID, r.ID)
			require.NoError(t, err)
			require.False(t, received, "a withheld card was not received")
			deliveries, err := s.Deliveries(ctx, d, tk.ID)
			require.NoError(t, err)
			require.Len(t, deliveries, 2)
			require.Equal(t, tickets.DeliveryDelivered, deliveries[0].State)
			require.Equal(t, tickets.DeliveryWithheld, deliveries[1].State)
		})

		t.Run("notes", func(t *testing.T) {
			require.NoError(t, s.AddNote(ctx, d, tk.ID, "ticket 3 renamed the module"))
			notes, err := s.PendingNotes(ctx, d, tk.ID)
			require.NoError(t, err)
			require.Len(t, notes, 1)
			require.NoError(t, s.MarkNoteDelivered(ctx, d, notes[0].ID))
			notes, err = s.PendingNotes(ctx, d, tk.ID)
			require.NoError(t, err)
			require.Empty(t, notes)
		})

		t.Run("a card the only owner never took returns when it ends; a taken one stays", func(t *testing.T) {
			taken := admitted(t, d, s, "i5", "github:octo/repo#7")
			untaken := admitted(t, d, s, "i6", "github:octo/repo#7")
			require.NoError(t, s.MarkDelivered(ctx, d, tk.ID, taken.ID, 0, tickets.DeliveryDelivered, ""))
			require.NoError(t, s.SetTicketState(ctx, d, tk.ID, tickets.TicketDone))
			got, err := s.Card(ctx, d, untaken.ID)
			require.NoError(t, err)
			require.Equal(t, tickets.CardCandidate, got.State)
			got, err = s.Card(ctx, d, taken.ID)
			require.NoError(t, err)
			require.Equal(t, tickets.CardFollowUp, got.State)
		})

		t.Run("pull request and follows", func(t *testing.T) {
			require.NoError(t, s.SetPullRequest(ctx, d, tk.ID, "superagent/ticket-1", 101))
			got, err := s.Ticket(ctx, d, tk.ID)
			require.NoError(t, err)
			require.Equal(t, 101, got.PullNumber)
			require.Equal(t, "superagent/ticket-1", got.Branch)
			ok, ctxOnly, err := s.Follows(ctx, d, tk.ID, "github:octo/repo#7/review-thread/4")
			require.NoError(t, err)
			require.True(t, ok, "a review thread of the followed pull request")
			require.False(t, ctxOnly)
			require.NoError(t, s.Unsubscribe(ctx, d, tk.ID, src.Thread.ID))
			ok, _, err = s.Follows(ctx, d, tk.ID, "github:octo/repo#7")
			require.NoError(t, err)
			require.False(t, ok)

			related := admitted(t, d, s, "i7", "github:octo/repo#8")
			require.NoError(t, s.SubscribeForContext(ctx, d, tk.ID, related.Thread.ID))
			ok, ctxOnly, err = s.Follows(ctx, d, tk.ID, "github:octo/repo#8")
			require.NoError(t, err)
			require.True(t, ok)
			require.True(t, ctxOnly, "followed for context: no writing there")
		})
	})
}
