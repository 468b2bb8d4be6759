package tickets_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/tickets"
)

// A Ticket in review keeps its Threads until its pull request ends it.
func TestInReviewUntilThePullRequestEnds(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})
		src := admitted(t, d, s, "r1", "github:octo/repo#7")
		tk, err := s.CreateTicket(ctx, d, tickets.Ticket{Title: "Fix typo", Repo: "octo/repo", SourceCardID: src.ID})
		require.NoError(t, err)
		require.NoError(t, s.Subscribe(ctx, d, tk.ID, src.Thread.ID))
		require.NoError(t, s.SetTicketState(ctx, d, tk.ID, tickets.TicketInReview))

		f := admitted(t, d, s, "r2", "github:octo/repo#7")
		require.Equal(t, tickets.CardFollowUp, f.State, "a Ticket in review still follows its Threads")
		require.False(t, tickets.Ended(tickets.TicketInReview))
		stop, _ := s.StopCheck(d, tk.ID)(ctx)
		require.False(t, stop)

		// A pause holds it and its resume brings it back to review.
		require.NoError(t, s.Pause(ctx, d, tk.ID, "carol", ""))
		require.NoError(t, s.Resume(ctx, d, tk.ID, "carol"))
		got, err := s.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketInReview, got.State)

		// The merge ends it, paused or not; the follow-up it was never
		// given goes back to the main Session.
		require.NoError(t, s.Pause(ctx, d, tk.ID, "carol", ""))
		ended, err := s.EndWithPull(ctx, d, tk.ID, true)
		require.NoError(t, err)
		require.True(t, ended)
		got, err = s.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketDone, got.State)
		require.Nil(t, got.Pause)
		back, err := s.Card(ctx, d, f.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.CardCandidate, back.State)
		ended, err = s.EndWithPull(ctx, d, tk.ID, false)
		require.NoError(t, err)
		require.False(t, ended, "an ended Ticket stays as it ended")
		require.NoError(t, s.SetTicketState(ctx, d, tk.ID, tickets.TicketWorking))
		got, err = s.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketDone, got.State, "automatic work does not reopen an ended Ticket")
		subs, err := s.Subscribers(ctx, d, src.Thread.ID)
		require.NoError(t, err)
		require.Empty(t, subs)

		closed, err := s.CreateTicket(ctx, d, tickets.Ticket{Title: "Other", Repo: "octo/repo"})
		require.NoError(t, err)
		ended, err = s.EndWithPull(ctx, d, closed.ID, false)
		require.NoError(t, err)
		require.True(t, ended)
		got, err = s.Ticket(ctx, d, closed.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketCancelled, got.State, "closed without a merge")
	})
}

func TestRetryOnlyAfterAFailedJob(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})
		tk, err := s.CreateTicket(ctx, d, tickets.Ticket{Title: "Fix crash", Repo: "octo/repo"})
		require.NoError(t, err)
		p := tickets.NewStopper(d, s, nil)
		require.ErrorIs(t, p.Retry(ctx, tk.ID, "carol"), tickets.ErrNotFailed)

		require.NoError(t, s.SetTicketState(ctx, d, tk.ID, tickets.TicketWaiting))
		require.NoError(t, s.Fail(ctx, d, tk.ID, "cloning: repository not found"))
		got, err := s.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, &tickets.Pause{At: fixedNow(), Reason: "cloning: repository not found"}, got.Failed)

		require.NoError(t, s.Pause(ctx, d, tk.ID, "dave", ""))
		require.ErrorIs(t, p.Retry(ctx, tk.ID, "carol"), tickets.ErrPaused, "resume first")
		require.NoError(t, s.Resume(ctx, d, tk.ID, "dave"))
		require.NoError(t, p.Retry(ctx, tk.ID, "carol"))
		got, err = s.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketOpen, got.State)
		require.Nil(t, got.Failed)

		require.NoError(t, s.Fail(ctx, d, tk.ID, "again"))
		require.NoError(t, s.ClearFailure(ctx, d, tk.ID), "a new job started")
		require.ErrorIs(t, p.Retry(ctx, tk.ID, "carol"), tickets.ErrNotFailed)
	})
}

func TestCommandTargetsIncludeStoppedTickets(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})
		src := admitted(t, d, s, "c1", "github:octo/repo#9")
		var ids []int64
		for _, title := range []string{"live", "stopped", "done"} {
			tk, err := s.CreateTicket(ctx, d, tickets.Ticket{Title: title, Repo: "octo/repo"})
			require.NoError(t, err)
			require.NoError(t, s.Subscribe(ctx, d, tk.ID, src.Thread.ID))
			ids = append(ids, tk.ID)
		}
		_, err := s.Stop(ctx, d, ids[1], "carol", "")
		require.NoError(t, err)
		require.NoError(t, s.SetTicketState(ctx, d, ids[2], tickets.TicketDone))

		subs, err := s.Subscribers(ctx, d, src.Thread.ID)
		require.NoError(t, err)
		require.Equal(t, ids[:1], subs)
		targets, err := s.CommandTargets(ctx, d, src.Thread.ID)
		require.NoError(t, err)
		require.Equal(t, ids[:2], targets, "a stopped Ticket hears a continue; a done one nothing")
	})
}
