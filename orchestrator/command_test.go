package orchestrator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/tickets"
)

// ticketFor routes request text on issue number into a new Ticket and
// marks its Executor's first job run.
func (e *env) ticketFor(t *testing.T, number int, text string) tickets.Ticket {
	t.Helper()
	ctx := context.Background()
	c := e.admit(t, request(number, text))
	e.model.Push(fakeopenai.Calls(route("new", orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Faster build"})), fakeopenai.Text("ok"))
	e.turn(t)
	tk, err := e.store.TicketBySourceCard(ctx, e.d, c.ID)
	require.NoError(t, err)
	_, err = e.d.Exec(ctx, `UPDATE river_job SET state = 'completed', finalized_at = $1 WHERE kind = 'execute_ticket'`, time.Now().UTC())
	require.NoError(t, err)
	return tk
}

func (e *env) ticket(t *testing.T, id int64) tickets.Ticket {
	t.Helper()
	got, err := e.store.Ticket(context.Background(), e.d, id)
	require.NoError(t, err)
	return got
}

// said counts the bot's comments containing every one of parts.
func (e *env) said(parts ...string) int {
	n := 0
	for _, c := range e.gh.Comments() {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(c.Body, p)
		}
		if all {
			n++
		}
	}
	return n
}

func TestStopContinueAndRetryCommandsOnGitHub(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		atLimit := false
		e := setup(t, d, nil)
		e.deps = func(deps *orchestrator.Deps) {
			deps.AtLimit = func(context.Context, db.Querier, int64) (bool, error) { return atLimit, nil }
		}
		e.o = e.orchestrator(t)
		tk := e.ticketFor(t, 5, "make the build faster")

		// A reader who did not ask commands nothing; the card flows on.
		c := e.admit(t, card{number: 5, login: "mallory", permission: "read", addressed: true, text: "@superagent stop"})
		require.Nil(t, e.ticket(t, tk.ID).Stop)
		require.Equal(t, tickets.CardFollowUp, c.State)

		// A writer stops it: cancelled, at the next step; the stop card
		// stays with the Ticket.
		_, err := d.Exec(ctx, `UPDATE river_job SET state = 'completed', finalized_at = $1 WHERE kind = 'execute_ticket'`, time.Now().UTC())
		require.NoError(t, err)
		jobs := e.jobs(t, "execute_ticket")
		stop := e.admit(t, card{number: 5, login: "bob", permission: "write", addressed: true, text: "@superagent stop, this is the wrong approach"})
		got := e.ticket(t, tk.ID)
		require.Equal(t, tickets.TicketCancelled, got.State)
		require.Equal(t, &tickets.Pause{By: "github:bob", At: got.Stop.At, Reason: "this is the wrong approach"}, got.Stop)
		require.Greater(t, e.jobs(t, "execute_ticket"), jobs, "the Executor is woken to end its Session")
		back, err := e.store.Card(ctx, d, stop.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.CardFollowUp, back.State, "the stop card is not work for the main Session")
		e.admit(t, card{number: 5, login: "bob", permission: "write", addressed: true, text: "@superagent stop"})

		// The requester continues it, though a stopped Ticket follows no
		// Thread; the command card is no candidate.
		cont := e.admit(t, card{number: 5, login: "alice", permission: "read", addressed: true, text: "@superagent continue"})
		got = e.ticket(t, tk.ID)
		require.Equal(t, tickets.TicketOpen, got.State)
		require.Equal(t, "github:alice", got.Continue.By)
		back, err = e.store.Card(ctx, d, cont.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.CardIgnored, back.State)
		var note string
		require.NoError(t, d.QueryRow(ctx, `SELECT routing_note FROM cards WHERE id = $1`, cont.ID).Scan(&note))
		require.Equal(t, "the host applied the person's command: continue ticket "+itoa(tk.ID), note)

		// Retry applies only after a failed job.
		e.admit(t, card{number: 5, login: "alice", permission: "write", addressed: true, text: "@superagent retry"})
		require.Equal(t, tickets.TicketOpen, e.ticket(t, tk.ID).State)
		require.NoError(t, e.store.SetTicketState(ctx, d, tk.ID, tickets.TicketWaiting))
		require.NoError(t, e.store.Fail(ctx, d, tk.ID, "cloning failed"))
		e.admit(t, card{number: 5, login: "alice", permission: "write", addressed: true, text: "@superagent retry"})
		got = e.ticket(t, tk.ID)
		require.Equal(t, tickets.TicketOpen, got.State)
		require.Nil(t, got.Failed)

		// A Ticket stopped at a limit continues on the command.
		atLimit = true
		require.NoError(t, e.store.ContinueTaken(ctx, d, tk.ID))
		e.admit(t, card{number: 5, login: "carol", permission: "admin", addressed: true, text: "@superagent continue please"})
		require.Equal(t, "github:carol", e.ticket(t, tk.ID).Continue.By)

		// Each is said once, under the command: the stop once the
		// Executor's job has released it.
		e.model.Push(fakeopenai.Text("ok"))
		e.turn(t)
		require.Zero(t, e.said("Stopped ticket"), "the stop waits for the Executor's last writes")
		released, err := e.store.ReleaseOutgoing(ctx, d, tk.ID)
		require.NoError(t, err)
		require.EqualValues(t, 1, released)
		e.model.Push(fakeopenai.Text("ok"))
		e.turn(t)
		require.Equal(t, 1, e.said("Stopped ticket", "at @bob's word", "this is the wrong approach", "nothing was closed", "@superagent continue"))
		require.Equal(t, 2, e.said("Continuing ticket"))
		require.Equal(t, 1, e.said("Retrying ticket", "at @alice's word"))
		require.Zero(t, e.said("mallory"))
	})
}

func TestFeishuStopByMessageAndButton(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		admit := func(nc tickets.NewCard) tickets.Card {
			t.Helper()
			var c tickets.Card
			require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
				nc.DeliveryID = seed.Delivery(t, tx, "f"+itoa(e.seq.Add(1)))
				c, err = e.store.Admit(ctx, tx, nc, 0, e.o)
				return err
			}))
			return c
		}
		thread := tickets.Thread{Source: tickets.SourceFeishu, Key: "feishu:oc_other/om_root", Repo: "oc_other"}
		member := tickets.Author{ID: "ou_requester", Type: tickets.AuthorUser}
		var tk tickets.Ticket
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			th, err := e.store.UpsertThread(ctx, tx, thread)
			if err != nil {
				return err
			}
			if tk, err = e.store.CreateTicket(ctx, tx, tickets.Ticket{Title: "Export", Mandate: tickets.Mandate{Source: tickets.SourceFeishu, RequestedBy: &member}}); err != nil {
				return err
			}
			return e.store.Subscribe(ctx, tx, tk.ID, th.ID)
		}))

		// In a chat that is not on the allowed list, a stranger's "stop"
		// does nothing; the requester's does.
		admit(tickets.NewCard{Source: tickets.SourceFeishu, Kind: "message", Thread: thread, Addressed: true, AddressedWhy: "mention",
			Author: tickets.Author{ID: "ou_stranger", Type: tickets.AuthorUser}, Text: "@_user_1 stop"})
		require.Nil(t, e.ticket(t, tk.ID).Stop)
		admit(tickets.NewCard{Source: tickets.SourceFeishu, Kind: "message", Thread: thread, Addressed: true, AddressedWhy: "mention",
			Author: member, Text: "@_user_1 stop"})
		require.Equal(t, "feishu:ou_requester", e.ticket(t, tk.ID).Stop.By)

		// A button continues it.
		admit(tickets.NewCard{Source: tickets.SourceFeishu, Kind: "card_action", Thread: thread, Addressed: true, AddressedWhy: "card_action",
			Author: member, Text: `{"action":"continue","ticket":` + itoa(tk.ID) + `}`})
		require.Equal(t, tickets.TicketOpen, e.ticket(t, tk.ID).State)
	})
}

func TestMergedPullRequestEndsItsTicket(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		tk := e.ticketFor(t, 5, "make the build faster")
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			if err := e.store.SetPullRequest(ctx, tx, tk.ID, "superagent/ticket-1", 9); err != nil {
				return err
			}
			th, err := e.store.UpsertThread(ctx, tx, tickets.Thread{Source: tickets.SourceGitHub, Key: "github:octo/repo#9", Repo: "octo/repo", Number: 9})
			if err != nil {
				return err
			}
			if err := e.store.Subscribe(ctx, tx, tk.ID, th.ID); err != nil {
				return err
			}
			return e.store.SetTicketState(ctx, tx, tk.ID, tickets.TicketInReview)
		}))
		jobs := e.jobs(t, "execute_ticket")
		e.admit(t, card{number: 9, login: "bob", permission: "write", kind: tickets.KindPullMerged})
		require.Equal(t, tickets.TicketDone, e.ticket(t, tk.ID).State)
		require.Greater(t, e.jobs(t, "execute_ticket"), jobs, "the Executor is woken to clean up")
		reports, err := e.store.Reports(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, "Pull request octo/repo#9 was merged by bob; the Ticket is done.", reports[len(reports)-1].Summary)
	})
}

// A status card's button is answered at once with a toast that says
// whether the person may give the command, and changes nothing; the
// command itself arrives as the stored card. A stranger's refused press
// goes no further than the host: not to the main Session.
func TestAnswerCardAction(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		member := tickets.Author{ID: "ou_requester", Type: tickets.AuthorUser}
		var tk tickets.Ticket
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			tk, err = e.store.CreateTicket(ctx, tx, tickets.Ticket{Title: "Export", Mandate: tickets.Mandate{Source: tickets.SourceFeishu, RequestedBy: &member}})
			return err
		}))
		press := func(chat, who, value string) feishu.CardActionResponse {
			return e.o.AnswerCardAction(ctx, &feishu.CardAction{Value: []byte(value), Tag: "button", OperatorOpenID: who, MessageID: "om_card", ChatID: chat})
		}
		stop := `{"action":"stop","ticket":` + itoa(tk.ID) + `}`

		r := press("oc_other", "ou_stranger", stop)
		require.Equal(t, "error", r.Toast.Type)
		require.Contains(t, r.Toast.Content, "may not stop ticket "+itoa(tk.ID))
		r = press("oc_other", "ou_requester", stop)
		require.Equal(t, "info", r.Toast.Type)
		r = press("oc_team", "ou_anyone", stop)
		require.Equal(t, "info", r.Toast.Type, "anyone in an allowed chat passes the gate")
		r = press("oc_other", "ou_requester", `{"action":"stop","ticket":999}`)
		require.Contains(t, r.Toast.Content, "no ticket 999")
		require.Nil(t, press("oc_other", "ou_requester", `{"action":"vote"}`).Toast, "not a command: an empty answer")
		require.Nil(t, e.ticket(t, tk.ID).Stop, "answering changes nothing")

		// The stranger's press, stored, changes nothing and is no work.
		thread := tickets.Thread{Source: tickets.SourceFeishu, Key: "feishu:oc_other/om_card", Repo: "oc_other"}
		var c tickets.Card
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			nc := tickets.NewCard{Source: tickets.SourceFeishu, Kind: "card_action", Thread: thread, Addressed: true, AddressedWhy: "card_action",
				Author: tickets.Author{ID: "ou_stranger", Type: tickets.AuthorUser}, Text: stop}
			nc.DeliveryID = seed.Delivery(t, tx, "press-stranger")
			c, err = e.store.Admit(ctx, tx, nc, 0, e.o)
			return err
		}))
		require.Nil(t, e.ticket(t, tk.ID).Stop)
		var state, note string
		require.NoError(t, d.QueryRow(ctx, "SELECT state, routing_note FROM cards WHERE id = $1", c.ID).Scan(&state, &note))
		require.Equal(t, tickets.CardIgnored, state)
		require.Contains(t, note, "changed nothing")
	})
}
