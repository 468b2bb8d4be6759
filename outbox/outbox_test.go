package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/tickets"
)

// TestMain fails the package when a test leaves goroutines behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestWriteSendsOnceAndFindsAWriteWhoseSenderDied(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		store := tickets.New(tickets.Config{})
		box := &outbox.Box{DB: d, Tickets: store}
		o := tickets.Outgoing{Key: "comment:1", Source: tickets.SourceGitHub, Kind: "comment", Target: "octo/hello#issue:1", Body: "hi"}

		sends := 0
		send := func(context.Context) (string, error) { sends++; return "comment/100", nil }
		ref, err := box.Write(ctx, o, send, nil)
		require.NoError(t, err)
		require.Equal(t, "comment/100", ref)
		ref, err = box.Write(ctx, o, send, nil)
		require.NoError(t, err)
		require.Equal(t, "comment/100", ref, "a finished write answers with what it produced")
		require.Equal(t, 1, sends, "and is not made again")

		// A sender cut off mid-call leaves the intent sending; the retry
		// asks find before it writes.
		o2 := o
		o2.Key = "comment:2"
		cut, cancel := context.WithCancel(ctx)
		_, err = box.Write(cut, o2, func(context.Context) (string, error) { cancel(); return "", context.Canceled }, nil)
		require.ErrorIs(t, err, context.Canceled)
		got, err := store.Intent(ctx, d, o2.Key)
		require.NoError(t, err)
		require.Equal(t, tickets.OutgoingSending, got.State)
		sends = 0
		ref, err = box.Write(ctx, o2, send, func(context.Context) (string, bool, error) { return "comment/200", true, nil })
		require.NoError(t, err)
		require.Equal(t, "comment/200", ref, "the write that landed is found")
		require.Zero(t, sends, "and not made twice")
		got, err = store.Intent(ctx, d, o2.Key)
		require.NoError(t, err)
		require.Equal(t, tickets.OutgoingSent, got.State)
		require.Equal(t, "comment/200", got.Result)

		// A failed write is tried again on the next call.
		o3 := o
		o3.Key = "comment:3"
		_, err = box.Write(ctx, o3, func(context.Context) (string, error) { return "", errors.New("503 from GitHub") }, nil)
		require.ErrorContains(t, err, "503")
		got, err = store.Intent(ctx, d, o3.Key)
		require.NoError(t, err)
		require.Equal(t, tickets.OutgoingFailed, got.State)
		ref, err = box.Write(ctx, o3, send, nil)
		require.NoError(t, err)
		require.Equal(t, "comment/100", ref)
	})
}

// recorder is a Sender that keeps what it was asked to send.
type recorder struct {
	sent []string
	fail error
}

func (r *recorder) Send(_ context.Context, o tickets.Outgoing, _ tickets.Card) error {
	r.sent = append(r.sent, o.Key)
	return r.fail
}

func TestDeliverSendsEachPendingIntentOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		store := tickets.New(tickets.Config{})
		box := &outbox.Box{DB: d, Tickets: store}
		for _, key := range []string{"ack:1", "ack:2"} {
			_, err := store.RecordIntent(ctx, d, tickets.Outgoing{Key: key, Source: tickets.SourceGitHub, Kind: outbox.KindReaction, Target: "octo/hello#issue:1", Body: "eyes"})
			require.NoError(t, err)
		}
		r := &recorder{}
		var after []string
		box.Deliver(ctx, r, time.Now(), func(o tickets.Outgoing, _ tickets.Card) { after = append(after, o.Key) })
		require.Equal(t, []string{"ack:1", "ack:2"}, r.sent)
		require.Equal(t, []string{"ack:1", "ack:2"}, after)
		box.Deliver(ctx, r, time.Now(), nil)
		require.Len(t, r.sent, 2, "a sent intent is not sent again")
		for _, key := range []string{"ack:1", "ack:2"} {
			got, err := store.Intent(ctx, d, key)
			require.NoError(t, err)
			require.Equal(t, tickets.OutgoingSent, got.State)
		}

		// A failed send is recorded as failed, and not reported as sent.
		_, err := store.RecordIntent(ctx, d, tickets.Outgoing{Key: "question:1", Source: tickets.SourceGitHub, Kind: outbox.KindComment, Target: "octo/hello#issue:1", Body: "Which one?"})
		require.NoError(t, err)
		r.fail = errors.New("404 Not Found")
		after = nil
		box.Deliver(ctx, r, time.Now(), func(o tickets.Outgoing, _ tickets.Card) { after = append(after, o.Key) })
		require.Empty(t, after)
		got, err := store.Intent(ctx, d, "question:1")
		require.NoError(t, err)
		require.Equal(t, tickets.OutgoingFailed, got.State)
		require.Contains(t, got.Error, "404")
	})
}

func TestHeldIntentWaitsUntilReleased(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		store := tickets.New(tickets.Config{})
		box := &outbox.Box{DB: d, Tickets: store}
		tk, err := store.CreateTicket(ctx, d, tickets.Ticket{Title: "Stop me"})
		require.NoError(t, err)
		other, err := store.CreateTicket(ctx, d, tickets.Ticket{Title: "Another"})
		require.NoError(t, err)
		for _, o := range []tickets.Outgoing{
			{Key: "stop:1", TicketID: tk.ID, Held: true},
			{Key: "stop:2", TicketID: other.ID, Held: true},
			{Key: "question:1", TicketID: tk.ID},
		} {
			o.Source, o.Kind, o.Target, o.Body = tickets.SourceGitHub, outbox.KindComment, "octo/hello#issue:1", "text"
			_, err := store.RecordIntent(ctx, d, o)
			require.NoError(t, err)
		}
		held, err := store.TicketsWithHeldOutgoing(ctx, d)
		require.NoError(t, err)
		require.Equal(t, []int64{tk.ID, other.ID}, held)
		r := &recorder{}
		box.Deliver(ctx, r, time.Now(), nil)
		require.Equal(t, []string{"question:1"}, r.sent, "a held intent is not sent")

		n, err := store.ReleaseOutgoing(ctx, d, tk.ID)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		box.Deliver(ctx, r, time.Now(), nil)
		require.Equal(t, []string{"question:1", "stop:1"}, r.sent, "released, it is sent; the other Ticket's stays held")
		held, err = store.TicketsWithHeldOutgoing(ctx, d)
		require.NoError(t, err)
		require.Equal(t, []int64{other.ID}, held)
	})
}

func TestWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int
	}{{"", 0}, {"  one ", 1}, {"two words", 2}, {"tabs\tand\nlines  count", 4}} {
		require.Equal(t, tc.want, outbox.Words(tc.in), tc.in)
	}
}

// TestDeliverNeverTakesAWriteBeingMade runs the main Session's Deliver
// over and over while Write makes many writes: Write records each one
// already claimed, so Deliver never sees one pending and never sends
// a write that is Write's to make.
func TestDeliverNeverTakesAWriteBeingMade(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		store := tickets.New(tickets.Config{})
		box := &outbox.Box{DB: d, Tickets: store}
		r := &recorder{}
		delivered := make(chan struct{})
		go func() {
			defer close(delivered)
			for ctx.Err() == nil {
				box.Deliver(ctx, r, time.Now(), nil)
			}
		}()
		const n = 150
		for i := range n {
			o := tickets.Outgoing{Key: fmt.Sprint("pr-comment:", i), Source: tickets.SourceGitHub, Kind: "comment", Target: "octo/hello#pull:1", Body: "fixed"}
			ref, err := box.Write(context.Background(), o, func(context.Context) (string, error) { return fmt.Sprint("comment/", i), nil }, nil)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint("comment/", i), ref)
		}
		cancel()
		<-delivered
		require.Empty(t, r.sent, "Deliver sent none of Write's writes")
	})
}
