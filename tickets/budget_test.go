package tickets_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/tickets"
)

func TestParseBudget(t *testing.T) {
	for _, tc := range []struct {
		text string
		want tickets.Budget
		ok   bool
		err  bool
	}{
		{text: "", ok: false},
		{text: "please go on, the budget is fine", ok: false},
		{text: "budget 20M tokens", want: tickets.Budget{Tokens: 20_000_000}, ok: true},
		{text: "budget 2.5m", want: tickets.Budget{Tokens: 2_500_000}, ok: true},
		{text: "with 300k tokens more", want: tickets.Budget{Tokens: 300_000}, ok: true},
		{text: "budget 20,000,000 tokens", want: tickets.Budget{Tokens: 20_000_000}, ok: true},
		{text: "budget 5 million tokens", want: tickets.Budget{Tokens: 5_000_000}, ok: true},
		{text: "budget $5", want: tickets.Budget{Cost: 5}, ok: true},
		{text: "budget 7.5 USD", want: tickets.Budget{Cost: 7.5}, ok: true},
		{text: "budget 20M tokens and $5.", want: tickets.Budget{Tokens: 20_000_000, Cost: 5}, ok: true},
		{text: "budget 12abc", err: true},
		{text: "budget $-3", err: true},
		{text: "budget 0 tokens", err: true},
		{text: "fix 3 tests", ok: false},
	} {
		t.Run(tc.text, func(t *testing.T) {
			got, ok, err := tickets.ParseBudget(tc.text)
			if tc.err {
				require.ErrorIs(t, err, tickets.ErrBudget)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestBudgetString(t *testing.T) {
	require.Equal(t, "10,000,000 tokens", tickets.Budget{Tokens: 10_000_000}.String())
	require.Equal(t, "999 tokens and cost 5.00", tickets.Budget{Tokens: 999, Cost: 5}.String())
	require.Equal(t, "no cap", tickets.Budget{}.String())
}

func TestBudgetStore(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})
		tk, err := s.CreateTicket(ctx, d, tickets.Ticket{Title: "Fix crash", Repo: "octo/repo"})
		require.NoError(t, err)
		_, ok, err := s.TicketBudget(ctx, d, tk.ID)
		require.NoError(t, err)
		require.False(t, ok, "a new Ticket has the default")

		// A continue with a budget raises it in the same transaction.
		require.NoError(t, s.SetTicketState(ctx, d, tk.ID, tickets.TicketWaiting))
		p := tickets.NewStopper(d, s, func(context.Context, db.Querier, int64) (bool, error) { return true, nil })
		require.NoError(t, p.ContinueWith(ctx, tk.ID, "carol", tickets.Budget{Tokens: 20_000_000}))
		b, ok, err := s.TicketBudget(ctx, d, tk.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, tickets.TicketBudget{TicketID: tk.ID, Raise: tickets.Budget{Tokens: 20_000_000}, SetBy: "carol", UpdatedAt: fixedNow()}, b)

		// The Executor sets the new cap and the raise is taken.
		require.NoError(t, s.SetBudget(ctx, d, tk.ID, tickets.Budget{Tokens: 30_000_000, Cost: 2.5}, "carol"))
		b, _, err = s.TicketBudget(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.Budget{Tokens: 30_000_000, Cost: 2.5}, b.Budget)
		require.True(t, b.Raise.IsZero())

		// A continue that is refused raises nothing.
		require.NoError(t, s.SetTicketState(ctx, d, tk.ID, tickets.TicketDone))
		require.ErrorIs(t, p.ContinueWith(ctx, tk.ID, "dave", tickets.Budget{Cost: 9}), tickets.ErrEnded)
		b, _, err = s.TicketBudget(ctx, d, tk.ID)
		require.NoError(t, err)
		require.True(t, b.Raise.IsZero())
		require.Equal(t, "carol", b.SetBy)
	})
}
