package tickets_test

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/tickets"
)

// admitted stores one card and returns it.
func admitted(t *testing.T, d *db.DB, s *tickets.Store, key, thread string) tickets.Card {
	t.Helper()
	ctx := context.Background()
	id := delivery(t, d, key)
	var c tickets.Card
	require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
		c, err = s.Admit(ctx, tx, newCard(id, thread, "please fix"), 0)
		return err
	}))
	return c
}

func TestTicketLifecycle(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})
		c := admitted(t, d, s, "t1", "github:octo/repo#12")

		in := tickets.Ticket{Title: "Fix crash", Repo: "octo/repo", SourceCardID: c.ID,
			Mandate: tickets.Mandate{RequestedBy: &c.Author, Source: "github", Repos: []string{"octo/repo"}, Actions: []string{"reply", "pull_request"}}}
		tk, err := s.CreateTicket(ctx, d, in)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketOpen, tk.State)
		require.Equal(t, tickets.OriginExplicit, tk.Origin)
		require.Equal(t, "alice", tk.Mandate.RequestedBy.Login)
		require.Equal(t, []string{"octo/repo"}, tk.Mandate.Repos)

		_, err = s.CreateTicket(ctx, d, in)
		require.ErrorIs(t, err, tickets.ErrDuplicate, "one Ticket per source card")

		inferred, err := s.CreateTicket(ctx, d, tickets.Ticket{Title: "Flaky test", Origin: tickets.OriginInferred, Rules: []string{"ci"},
			State: tickets.TicketWaiting, Proposal: true})
		require.NoError(t, err)
		require.Equal(t, []string{"ci"}, inferred.Rules)
		ok, err := s.AcceptProposal(ctx, d, inferred.ID)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.AcceptProposal(ctx, d, inferred.ID)
		require.NoError(t, err)
		require.False(t, ok)

		t.Run("pause holds until a person resumes", func(t *testing.T) {
			require.NoError(t, s.SetTicketState(ctx, d, tk.ID, tickets.TicketWorking))
			var log bytes.Buffer
			p := tickets.NewPauser(d, s).WithLogger(slog.New(slog.NewTextHandler(&log, nil)))
			require.NoError(t, p.Pause(ctx, tk.ID, "carol", "wrong approach"))
			got, err := s.Ticket(ctx, d, tk.ID)
			require.NoError(t, err)
			require.Equal(t, tickets.TicketPaused, got.State)
			require.Equal(t, "carol", got.Pause.By)
			require.Equal(t, "wrong approach", got.Pause.Reason)
			require.ErrorIs(t, s.SetTicketState(ctx, d, tk.ID, tickets.TicketWorking), tickets.ErrPaused)
			require.NoError(t, p.Pause(ctx, tk.ID, "dave", ""), "a second pause keeps the first")
			got, _ = s.Ticket(ctx, d, tk.ID)
			require.Equal(t, "carol", got.Pause.By)
			require.NoError(t, p.Resume(ctx, tk.ID, "carol"))
			got, _ = s.Ticket(ctx, d, tk.ID)
			require.Equal(t, tickets.TicketWorking, got.State)
			require.Nil(t, got.Pause)
			id := strconv.FormatInt(tk.ID, 10)
			require.Equal(t, 1, strings.Count(log.String(), `msg="ticket paused" ticket=`+id+` repo=octo/repo by=carol reason="wrong approach"`),
				"one line for the pause that changed the Ticket, none for the one that did not:\n%s", log.String())
			require.Equal(t, 1, strings.Count(log.String(), `msg="ticket resumed" ticket=`+id+` repo=octo/repo by=carol`), log.String())
		})

		t.Run("reports, notes and outgoing intents", func(t *testing.T) {
			r, err := s.AddReport(ctx, d, tickets.Report{TicketID: tk.ID, State: tickets.ReportWaiting, Summary: "need a decision", HumanAction: "Which database?"})
			require.NoError(t, err)
			pending, err := s.PendingReports(ctx, d, 10)
			require.NoError(t, err)
			require.Len(t, pending, 1)
			require.NoError(t, s.MarkReportsDelivered(ctx, d, []int64{r.ID}))
			pending, _ = s.PendingReports(ctx, d, 10)
			require.Empty(t, pending)

			require.NoError(t, s.AddNote(ctx, d, tk.ID, "ticket 4 changed the schema"))
			notes, err := s.Notes(ctx, d, tk.ID)
			require.NoError(t, err)
			require.Equal(t, []string{"ticket 4 changed the schema"}, notes)

			o, err := s.RecordIntent(ctx, d, tickets.Outgoing{Key: "ack:1", TicketID: tk.ID, CardID: c.ID, Source: "github", Kind: "reaction", Target: "comment:5", Body: "eyes"})
			require.NoError(t, err)
			again, err := s.RecordIntent(ctx, d, tickets.Outgoing{Key: "ack:1", Source: "github", Kind: "reaction"})
			require.NoError(t, err)
			require.Equal(t, o.ID, again.ID)
			won, err := s.ClaimIntent(ctx, d, o.ID)
			require.NoError(t, err)
			require.True(t, won)
			won, err = s.ClaimIntent(ctx, d, o.ID)
			require.NoError(t, err)
			require.False(t, won, "a claimed intent is never sent twice")
			require.NoError(t, s.FinishIntent(ctx, d, o.ID, nil))
			log, err := s.Outgoings(ctx, d, tk.ID)
			require.NoError(t, err)
			require.Len(t, log, 1)
			require.Equal(t, tickets.OutgoingSent, log[0].State)
		})

		t.Run("a card returns to the main Session once every owner handed it back", func(t *testing.T) {
			other, err := s.CreateTicket(ctx, d, tickets.Ticket{Title: "Other"})
			require.NoError(t, err)
			require.NoError(t, s.Subscribe(ctx, d, tk.ID, c.Thread.ID))
			require.NoError(t, s.Subscribe(ctx, d, other.ID, c.Thread.ID))
			f := admitted(t, d, s, "t2", "github:octo/repo#12")
			require.Equal(t, tickets.CardFollowUp, f.State)
			back, err := s.AddHandBack(ctx, d, tickets.HandBack{CardID: f.ID, TicketID: tk.ID, Reason: "a separate bug"})
			require.NoError(t, err)
			require.False(t, back)
			back, err = s.AddHandBack(ctx, d, tickets.HandBack{CardID: f.ID, TicketID: other.ID, Reason: "not mine"})
			require.NoError(t, err)
			require.True(t, back)
			got, err := s.Card(ctx, d, f.ID)
			require.NoError(t, err)
			require.Equal(t, tickets.CardCandidate, got.State)
			hb, err := s.HandBacks(ctx, d, f.ID)
			require.NoError(t, err)
			require.Len(t, hb, 2)

			// One owner hands back, the other ends without taking it.
			g := admitted(t, d, s, "t3", "github:octo/repo#12")
			require.Equal(t, tickets.CardFollowUp, g.State)
			back, err = s.AddHandBack(ctx, d, tickets.HandBack{CardID: g.ID, TicketID: other.ID, Reason: "not mine"})
			require.NoError(t, err)
			require.False(t, back)
			require.NoError(t, s.Cancel(ctx, d, tk.ID))
			got, err = s.Card(ctx, d, g.ID)
			require.NoError(t, err)
			require.Equal(t, tickets.CardCandidate, got.State)
		})

	})
}
