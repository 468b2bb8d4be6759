package tickets_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/tickets"
)

func fixedNow() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }

func newCard(delivery int64, key, text string) tickets.NewCard {
	return tickets.NewCard{
		DeliveryID: delivery,
		Source:     tickets.SourceGitHub,
		Kind:       "comment",
		Thread:     tickets.Thread{Source: tickets.SourceGitHub, Key: key, Repo: "octo/repo", Number: 12, Title: "Crash on start"},
		Author:     tickets.Author{ID: "7", Login: "alice", Type: tickets.AuthorUser, Permission: "write"},
		References: []tickets.Reference{{Repo: "octo/repo", Number: 3}},
		Text:       text,
	}
}

// delivery stores a delivery so cards can point at it.
func delivery(t *testing.T, d *db.DB, key string) int64 {
	t.Helper()
	return seed.Delivery(t, d, key)
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})

		t.Run("candidate, truncation and full text", func(t *testing.T) {
			long := strings.Repeat("é", 30) + "tail"
			var hooked []int64
			hook := tickets.HookFunc(func(_ context.Context, _ *db.Tx, c tickets.Card) error {
				hooked = append(hooked, c.ID)
				return nil
			})
			var c tickets.Card
			da := delivery(t, d, "a")
			require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
				c, err = s.Admit(ctx, tx, newCard(da, "github:octo/repo#12", long), 30, hook)
				return err
			}))
			require.Equal(t, tickets.CardCandidate, c.State)
			require.True(t, c.Truncated)
			require.Equal(t, strings.Repeat("é", 30), c.Text)
			require.Equal(t, []int64{c.ID}, hooked)

			got, err := s.Card(ctx, d, c.ID)
			require.NoError(t, err)
			require.Equal(t, c.Text, got.Text)
			require.Equal(t, 34, got.TextChars)
			require.Equal(t, "alice", got.Author.Login)
			require.Equal(t, []tickets.Reference{{Repo: "octo/repo", Number: 3}}, got.References)
			require.Equal(t, "Crash on start", got.Thread.Title)
			full, err := s.FullText(ctx, d, c.ID)
			require.NoError(t, err)
			require.Equal(t, long, full)
		})

		t.Run("a second card for one delivery is refused", func(t *testing.T) {
			id := delivery(t, d, "b")
			require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
				_, err := s.Admit(ctx, tx, newCard(id, "github:octo/repo#13", "hi"), 0)
				return err
			}))
			err := d.InTx(ctx, func(tx *db.Tx) error {
				_, err := s.Admit(ctx, tx, newCard(id, "github:octo/repo#13", "hi"), 0)
				return err
			})
			require.True(t, errors.Is(err, tickets.ErrDuplicate), "%v", err)
		})

		t.Run("follow-up for subscribed tickets, reply where the bot spoke", func(t *testing.T) {
			key := "github:octo/repo#14"
			var c tickets.Card
			var t1, t2 tickets.Ticket
			dc := delivery(t, d, "c")
			require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
				th, err := s.UpsertThread(ctx, tx, tickets.Thread{Source: tickets.SourceGitHub, Key: key, Repo: "octo/repo", Number: 14, HeadRef: "fix-14"})
				if err != nil {
					return err
				}
				if t1, err = s.CreateTicket(ctx, tx, tickets.Ticket{Title: "one", Repo: "octo/repo"}); err != nil {
					return err
				}
				if t2, err = s.CreateTicket(ctx, tx, tickets.Ticket{Title: "two", Repo: "octo/repo"}); err != nil {
					return err
				}
				for _, tk := range []int64{t2.ID, t1.ID, t1.ID} {
					if err := s.Subscribe(ctx, tx, tk, th.ID); err != nil {
						return err
					}
				}
				if err := s.MarkBotSpoke(ctx, tx, key); err != nil {
					return err
				}
				c, err = s.Admit(ctx, tx, newCard(dc, key, "thanks"), 0)
				return err
			}))
			require.Equal(t, tickets.CardFollowUp, c.State)
			require.Equal(t, t1.ID, c.TicketID)
			require.True(t, c.Addressed)
			require.Equal(t, "reply", c.AddressedWhy)
			ids, err := s.FollowUpTickets(ctx, d, c.ID)
			require.NoError(t, err)
			require.Equal(t, []int64{t1.ID, t2.ID}, ids)
			notices, err := s.PendingNotices(ctx, d, 10)
			require.NoError(t, err)
			require.Len(t, notices, 2)
			require.NoError(t, s.MarkNoticesDelivered(ctx, d, []int64{notices[0].ID}))
			notices, err = s.PendingNotices(ctx, d, 10)
			require.NoError(t, err)
			require.Len(t, notices, 1)

			tracked, err := s.TrackedBranch(ctx, d, "octo/repo", "fix-14")
			require.NoError(t, err)
			require.True(t, tracked)
			tracked, err = s.TrackedBranch(ctx, d, "octo/repo", "other")
			require.NoError(t, err)
			require.False(t, tracked)
			th, ok, err := s.PullThreadForBranch(ctx, d, "octo/repo", "fix-14")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, key, th.Key)
		})

		t.Run("list newest first and state changes", func(t *testing.T) {
			cards, err := s.ListCards(ctx, d, 2)
			require.NoError(t, err)
			require.Len(t, cards, 2)
			require.Greater(t, cards[0].ID, cards[1].ID)
			require.NoError(t, s.SetCardState(ctx, d, cards[1].ID, tickets.CardIgnored, 0))
			got, err := s.Card(ctx, d, cards[1].ID)
			require.NoError(t, err)
			require.Equal(t, tickets.CardIgnored, got.State)
			_, err = s.Card(ctx, d, 9999)
			require.ErrorIs(t, err, tickets.ErrNotFound)
			cands, err := s.Candidates(ctx, d, 10)
			require.NoError(t, err)
			for _, c := range cands {
				require.Equal(t, tickets.CardCandidate, c.State)
			}
		})
	})
}

// TestAdmitOneThreadPerTransaction: cards of one transaction on one Thread
// write its row once, yet see what the transaction changed since: a
// different title, and the bot having spoken there.
func TestAdmitOneThreadPerTransaction(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})
		const key = "github:octo/repo#40"
		var cards []tickets.Card
		admit := func(tx *db.Tx, nc tickets.NewCard) {
			c, err := s.Admit(ctx, tx, nc, 0)
			require.NoError(t, err)
			cards = append(cards, c)
		}
		ids := []int64{delivery(t, d, "t1"), delivery(t, d, "t2"), delivery(t, d, "t3"), delivery(t, d, "t4")}
		var same, retitled int64
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			admit(tx, newCard(ids[0], key, "first"))
			before := d.Statements()
			admit(tx, newCard(ids[1], key, "second"))
			same = d.Statements() - before

			renamed := newCard(ids[2], key, "third")
			renamed.Thread.Title = "Crash on start, on Linux only"
			before = d.Statements()
			admit(tx, renamed)
			retitled = d.Statements() - before

			require.NoError(t, s.MarkBotSpoke(ctx, tx, key))
			admit(tx, newCard(ids[3], key, "fourth"))
			return nil
		}))
		// The same facts cost only the card: no hook ran that could change
		// the followers read with the first. New facts read the Thread with
		// its followers, write it, and store the card.
		require.Equal(t, int64(1), same, "the same facts read nothing again")
		require.Equal(t, int64(3), retitled, "new facts read and write the Thread")
		require.Equal(t, "Crash on start, on Linux only", cards[2].Thread.Title)
		require.False(t, cards[2].Addressed)
		require.True(t, cards[3].Thread.BotSpoke, "the bot's words in the transaction are seen")
		require.Equal(t, "reply", cards[3].AddressedWhy)
		for _, c := range cards[1:] {
			require.Equal(t, cards[0].Thread.ID, c.Thread.ID)
		}
	})
}

// followedThread admits a card on the Thread with key and has a new
// Ticket follow it.
func followedThread(t *testing.T, d *db.DB, s *tickets.Store, prefix, key string) tickets.Ticket {
	t.Helper()
	ctx := context.Background()
	src := admitted(t, d, s, prefix+"-src", key)
	asked := admitted(t, d, s, prefix+"-ask", "github:octo/repo#1")
	tk, err := s.CreateTicket(ctx, d, tickets.Ticket{Title: "Fix the crash", Repo: "octo/repo", SourceCardID: asked.ID})
	require.NoError(t, err)
	require.NoError(t, s.Subscribe(ctx, d, tk.ID, src.Thread.ID))
	return tk
}

// steadyHook changes no Ticket, and says so, counting its calls.
type steadyHook struct{ calls *int }

func (h steadyHook) CardAdmitted(context.Context, *db.Tx, tickets.Card) error { *h.calls++; return nil }

func (steadyHook) MayChangeTickets(tickets.Card) bool { return false }

// TestFollowersReadOnceWhileNoHookMayChangeThem: within a transaction, a
// Thread's followers, read ahead or read with an earlier card, stand for
// the next card only while every hook says it changed no Ticket; after a
// hook that cannot say, and that here cancels the Ticket, the next card
// reads them again and does not go to the cancelled Ticket.
func TestFollowersReadOnceWhileNoHookMayChangeThem(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})
		const issue, other = "github:octo/repo#60", "github:octo/repo#61"
		tk := followedThread(t, d, s, "g", issue)
		admitted(t, d, s, "g2", other)

		calls := 0
		steady := steadyHook{&calls}
		cancelling := tickets.HookFunc(func(ctx context.Context, tx *db.Tx, c tickets.Card) error {
			if c.Thread.Key == other {
				return s.Cancel(ctx, tx, tk.ID)
			}
			return nil
		})
		run := func(hook tickets.Hook, prefix string) (first, second tickets.Card, secondCost int64) {
			one, two := delivery(t, d, prefix+"1"), delivery(t, d, prefix+"2")
			require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
				s.ReadAheadAdmit(tx, other, hook)
				s.ReadAheadAdmit(tx, issue, hook)
				if first, err = s.Admit(ctx, tx, newCard(one, other, "on the other"), 0, hook); err != nil {
					return err
				}
				before := d.Statements()
				second, err = s.Admit(ctx, tx, newCard(two, issue, "on the issue"), 0, hook)
				secondCost = d.Statements() - before
				return err
			}))
			return first, second, secondCost
		}

		_, second, cost := run(steady, "steady-")
		require.Equal(t, 2, calls)
		require.Equal(t, tickets.CardFollowUp, second.State)
		require.Equal(t, tk.ID, second.TicketID)
		if d.Dialect() == db.Postgres {
			// The card and its notice: the Thread came read ahead.
			require.Equal(t, int64(2), cost)
		}

		_, second, _ = run(cancelling, "cancel-")
		require.Equal(t, tickets.CardCandidate, second.State, "the Ticket cancelled by the first card's hook no longer follows")
		require.Zero(t, second.TicketID)
	})
}

// TestThreadsOfABatchReadTogether: the Threads read ahead for a batch's
// cards are read in one statement, on both databases, and each card still
// goes only to the Tickets following its own Thread (a Ticket following
// a pull request and its review thread once); a Thread not yet known is
// made as before.
func TestThreadsOfABatchReadTogether(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})
		const issue, pull, review, fresh = "github:octo/repo#80", "github:octo/repo#81", "github:octo/repo#81/review-thread/3", "github:octo/repo#82"
		onIssue := followedThread(t, d, s, "a", issue)
		onPull := followedThread(t, d, s, "b", pull)
		reviewCard := admitted(t, d, s, "b-review", review)
		require.NoError(t, s.Subscribe(ctx, d, onPull.ID, reviewCard.Thread.ID))

		calls := 0
		hook := steadyHook{&calls}
		keys := []string{issue, review, fresh}
		ids := []int64{delivery(t, d, "r1"), delivery(t, d, "r2"), delivery(t, d, "r3")}
		var cards [3]tickets.Card
		var costs [3]int64
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			for _, key := range keys {
				s.ReadAheadAdmit(tx, key, hook)
			}
			for i, key := range keys {
				before := d.Statements()
				c, err := s.Admit(ctx, tx, newCard(ids[i], key, "more"), 0, hook)
				if err != nil {
					return err
				}
				cards[i], costs[i] = c, d.Statements()-before
			}
			return nil
		}))
		require.Equal(t, tickets.CardFollowUp, cards[0].State)
		require.Equal(t, onIssue.ID, cards[0].TicketID)
		require.Equal(t, tickets.CardFollowUp, cards[1].State)
		require.Equal(t, onPull.ID, cards[1].TicketID)
		notices, err := s.FollowUpTickets(ctx, d, cards[1].ID)
		require.NoError(t, err)
		require.Equal(t, []int64{onPull.ID}, notices, "one notice for a Ticket following the pull request and its review thread")
		require.Equal(t, tickets.CardCandidate, cards[2].State)
		require.NotZero(t, cards[2].Thread.ID, "the Thread not yet known was made")

		// The review thread's card read nothing: its Thread came with the
		// first card's read. It wrote its row and its notice.
		require.Equal(t, int64(2), costs[1], "statements of the second card")
		if d.Dialect() == db.SQLite {
			require.Equal(t, int64(3), costs[0], "the first card: the Threads' read, its row, its notice")
		}
	})
}

// TestCardsOnABusyThreadDoNotQueue: on PostgreSQL, a transaction that
// admits a card to an existing Thread does not wait for another, still
// open, that admitted one there too: a card that changes nothing of its
// Thread only reads its row.
func TestCardsOnABusyThreadDoNotQueue(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	ctx := context.Background()
	s := tickets.New(tickets.Config{Now: fixedNow})
	const key = "github:octo/repo#41"
	first, second, third := delivery(t, d, "q1"), delivery(t, d, "q2"), delivery(t, d, "q3")
	require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
		_, err := s.Admit(ctx, tx, newCard(first, key, "opened"), 0)
		return err
	}))

	held, err := d.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = held.Rollback(ctx) }()
	_, err = s.Admit(ctx, held, newCard(second, key, "still open"), 0)
	require.NoError(t, err)

	bounded, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	require.NoError(t, d.InTx(bounded, func(tx *db.Tx) error {
		_, err := s.Admit(bounded, tx, newCard(third, key, "alongside"), 0)
		return err
	}), "the second card waited for the first's transaction")
	require.NoError(t, held.Commit(ctx))
}

// TestAdmitReadsAKnownThreadWithItsFollowers: a card on a Thread it leaves
// as it is reads the Thread and the live Tickets following it, through its
// pull request for a review thread, in one statement, and goes to those
// Tickets; an ended Ticket that followed it does not receive it.
func TestAdmitReadsAKnownThreadWithItsFollowers(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})
		const pull, review = "github:octo/repo#50", "github:octo/repo#50/review-thread/7"
		src := admitted(t, d, s, "f1", pull)
		first := admitted(t, d, s, "f2", review)
		asks := 0
		follow := func(thread int64) int64 {
			asks++
			asked := admitted(t, d, s, "ask-"+strconv.Itoa(asks), "github:octo/repo#1")
			tk, err := s.CreateTicket(ctx, d, tickets.Ticket{Title: "Fix the crash", Repo: "octo/repo", SourceCardID: asked.ID})
			require.NoError(t, err)
			require.NoError(t, s.Subscribe(ctx, d, tk.ID, thread))
			return tk.ID
		}
		byPull, byReview, ended := follow(src.Thread.ID), follow(first.Thread.ID), follow(src.Thread.ID)
		require.NoError(t, s.Cancel(ctx, d, ended))

		id := delivery(t, d, "f3")
		var c tickets.Card
		var statements int64
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			before := d.Statements()
			c, err = s.Admit(ctx, tx, newCard(id, review, "still crashes"), 0)
			statements = d.Statements() - before
			return err
		}))
		require.Equal(t, first.Thread.ID, c.Thread.ID)
		require.Equal(t, tickets.CardFollowUp, c.State)
		require.Equal(t, byPull, c.TicketID, "the lowest live follower")
		got, err := s.FollowUpTickets(ctx, d, c.ID)
		require.NoError(t, err)
		require.Equal(t, []int64{byPull, byReview}, got)
		// The Thread with its followers, the card, and one notice for
		// each of the two.
		require.Equal(t, int64(4), statements)

		// A Thread no Ticket follows reads the same way, and yields a
		// candidate.
		lone := admitted(t, d, s, "f4", "github:octo/repo#51")
		again := admitted(t, d, s, "f5", "github:octo/repo#51")
		require.Equal(t, lone.Thread.ID, again.Thread.ID)
		require.Equal(t, tickets.CardCandidate, again.State)
	})
}

// TestFreshDeliveriesCardsTravelWithTheCommit: cards of deliveries the
// transaction stored itself take ids read ahead, and on PostgreSQL their
// rows and notices wait for the COMMIT instead of a round trip each; what
// is committed is what Admit returned, notices included.
func TestFreshDeliveriesCardsTravelWithTheCommit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := tickets.New(tickets.Config{Now: fixedNow})
		const followed, lone = "github:octo/repo#70", "github:octo/repo#71"
		tk := followedThread(t, d, s, "h", followed)
		admitted(t, d, s, "h0", lone)

		calls := 0
		hook := steadyHook{&calls}
		one, two := delivery(t, d, "h2"), delivery(t, d, "h3")
		var cards []tickets.Card
		var cost int64
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			for _, key := range []string{followed, lone} {
				s.ReadAheadAdmit(tx, key, hook)
				s.ReadAheadCardID(tx)
			}
			before := d.Statements()
			for _, nc := range []tickets.NewCard{newCard(one, followed, "still crashes"), newCard(two, lone, "another")} {
				nc.FreshDelivery = true
				c, err := s.Admit(ctx, tx, nc, 0, hook)
				if err != nil {
					return err
				}
				cards = append(cards, c)
			}
			cost = d.Statements() - before
			return nil
		}))
		if d.Dialect() == db.Postgres {
			// The reads ahead, sent when the first card asked for its
			// Thread; the rest went with the COMMIT.
			require.Equal(t, int64(1), cost)
		}
		for _, c := range cards {
			stored, err := s.CardByDelivery(ctx, d, c.DeliveryID)
			require.NoError(t, err)
			require.Equal(t, c.ID, stored.ID)
			require.Equal(t, c.State, stored.State)
		}
		require.Equal(t, tickets.CardFollowUp, cards[0].State)
		got, err := s.FollowUpTickets(ctx, d, cards[0].ID)
		require.NoError(t, err)
		require.Equal(t, []int64{tk.ID}, got)
		require.Equal(t, tickets.CardCandidate, cards[1].State)
		require.NotEqual(t, cards[0].ID, cards[1].ID)
	})
}
