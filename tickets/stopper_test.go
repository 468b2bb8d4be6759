package tickets_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/tickets"
)

// stopHook records what the Stopper told it, inside its transaction.
type stopHook struct{ stopped, continued []string }

func (h *stopHook) Stopped(_ context.Context, _ *db.Tx, t tickets.Ticket, actor, reason string) error {
	h.stopped = append(h.stopped, t.State+" by "+actor+": "+reason)
	return nil
}

func (h *stopHook) Continued(_ context.Context, _ *db.Tx, t tickets.Ticket, actor string) error {
	h.continued = append(h.continued, t.State+" by "+actor)
	return nil
}

func TestStopAndContinue(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})
		tk, err := s.CreateTicket(ctx, d, tickets.Ticket{Title: "Fix crash", Repo: "octo/repo"})
		require.NoError(t, err)
		require.NoError(t, s.SetTicketState(ctx, d, tk.ID, tickets.TicketWorking))
		atLimit := false
		h := &stopHook{}
		p := tickets.NewStopper(d, s, func(context.Context, db.Querier, int64) (bool, error) { return atLimit, nil }, h)
		check := s.StopCheck(d, tk.ID)

		stop, _ := check(ctx)
		require.False(t, stop, "a working Ticket runs on")
		require.ErrorIs(t, p.Continue(ctx, tk.ID, "carol"), tickets.ErrNotStopped, "nothing to continue while it works")

		require.NoError(t, p.Stop(ctx, tk.ID, "carol", "wrong repository"))
		got, err := s.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketCancelled, got.State)
		require.Equal(t, &tickets.Pause{By: "carol", At: fixedNow(), Reason: "wrong repository"}, got.Stop)
		stop, reason := check(ctx)
		require.True(t, stop)
		require.Equal(t, "stopped by carol", reason, "the Executor's next step ends the Session")
		require.NoError(t, s.SetTicketState(ctx, d, tk.ID, tickets.TicketDone))
		got, err = s.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketCancelled, got.State, "automatic work does not move a stopped Ticket")
		require.NoError(t, p.Stop(ctx, tk.ID, "dave", "again"))
		require.Equal(t, []string{"cancelled by carol: wrong repository"}, h.stopped, "a second stop changes nothing and is not heard")

		require.NoError(t, p.Continue(ctx, tk.ID, "dave"))
		got, err = s.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketOpen, got.State, "continuing a stopped Ticket reopens it")
		require.Nil(t, got.Stop)
		require.Equal(t, &tickets.Pause{By: "dave", At: fixedNow()}, got.Continue, "the request waits for the Executor")
		require.Equal(t, []string{"open by dave"}, h.continued)
		require.NoError(t, s.ContinueTaken(ctx, d, tk.ID))
		got, err = s.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Nil(t, got.Continue)

		require.NoError(t, s.SetTicketState(ctx, d, tk.ID, tickets.TicketWaiting))
		atLimit = true
		require.NoError(t, p.Continue(ctx, tk.ID, "erin"), "a Session that stopped at a limit can be continued")

		pauser := tickets.NewPauser(d, s)
		require.NoError(t, pauser.Pause(ctx, tk.ID, "frank", ""))
		require.ErrorIs(t, p.Continue(ctx, tk.ID, "erin"), tickets.ErrPaused, "a paused Ticket is resumed, not continued")
		require.NoError(t, p.Stop(ctx, tk.ID, "frank", ""), "a paused Ticket can be stopped")
		got, err = s.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Nil(t, got.Pause, "the pause ends with the stop")

		done, err := s.CreateTicket(ctx, d, tickets.Ticket{Title: "Done"})
		require.NoError(t, err)
		require.NoError(t, s.SetTicketState(ctx, d, done.ID, tickets.TicketDone))
		require.ErrorIs(t, p.Stop(ctx, done.ID, "carol", ""), tickets.ErrEnded)
		require.ErrorIs(t, p.Continue(ctx, done.ID, "carol"), tickets.ErrEnded)
		require.ErrorIs(t, p.Stop(ctx, 9999, "carol", ""), tickets.ErrNotFound)
	})
}

func TestUnroutedCards(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})
		waiting := admitted(t, d, s, "u1", "github:octo/repo#1")
		ignored := admitted(t, d, s, "u2", "github:octo/repo#2")
		refused := admitted(t, d, s, "u3", "github:octo/repo#3")
		routed := admitted(t, d, s, "u4", "github:octo/repo#4")
		tk, err := s.CreateTicket(ctx, d, tickets.Ticket{Title: "Routed", SourceCardID: routed.ID})
		require.NoError(t, err)
		require.NoError(t, s.SetCardState(ctx, d, routed.ID, tickets.CardRouted, tk.ID))
		require.NoError(t, s.SetCardState(ctx, d, ignored.ID, tickets.CardIgnored, 0))
		require.NoError(t, s.SetRoutingNote(ctx, d, ignored.ID, "a thank-you note, nothing to do"))
		require.NoError(t, s.SetRouteRefusal(ctx, d, refused.ID, "bob may not start work in octo/repo"))
		require.NoError(t, s.SetRouteRefusal(ctx, d, routed.ID, "not a candidate: kept off"))

		got, err := s.UnroutedCards(ctx, d, 10)
		require.NoError(t, err)
		require.Len(t, got, 3)
		require.Equal(t, refused.ID, got[0].ID, "newest first")
		require.Equal(t, "bob may not start work in octo/repo", got[0].Refusal)
		require.Equal(t, tickets.CardIgnored, got[1].State)
		require.Equal(t, "a thank-you note, nothing to do", got[1].Note)
		require.Equal(t, waiting.ID, got[2].ID)
		require.Empty(t, got[2].Note+got[2].Refusal)
		require.Equal(t, "github:octo/repo#1", got[2].Thread.Key)
	})
}
