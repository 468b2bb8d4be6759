package orchestrator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// Not parallel: the burst has to be admitted within one debounce window,
// which a busy machine stretches (under -race the SQLite half already misses
// it on its own).
func TestBurstIsRoutedInOneBatch(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		// The main Session creates a Ticket for every candidate it is shown,
		// all in one orchestrator_route call, then ends its turn.
		e.model.Fallback(fakeopenai.Respond(func(r fakeopenai.Request) fakeopenai.Reply {
			ids := candidatesIn(r)
			if r.LastMessage().Role != "user" || len(ids) == 0 {
				return fakeopenai.Text("All routed.")
			}
			var ds []orchestrator.Decision
			for _, id := range ids {
				ds = append(ds, orchestrator.Decision{Candidate: id, Action: "new", Title: fmt.Sprintf("Request %d", id)})
			}
			return fakeopenai.Calls(route(fmt.Sprintf("burst-%d", ids[0]), ds...))
		}))
		require.NoError(t, e.q.Start(ctx))
		t.Cleanup(func() {
			stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, e.q.Stop(stop))
		})
		for i := 1; i <= 30; i++ {
			e.admit(t, request(i, "please fix this"))
		}
		deadline := time.Now().Add(30 * time.Second)
		for e.ticketCount(t) < 30 || len(e.gh.Reactions()) < 30 || e.unfinishedTurns(t) > 0 {
			require.True(t, time.Now().Before(deadline), "the burst was not routed: %d tickets", e.ticketCount(t))
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("a burst of 30 requests: %d routing model requests", len(e.model.Requests()))
		require.LessOrEqual(t, len(e.model.Requests()), 2, "30 candidates in at most 2 routing model requests")
		require.Equal(t, 30, e.ticketCount(t))
		require.Equal(t, 30, e.jobs(t, "execute_ticket"), "one Executor job per Ticket")
		for _, r := range e.gh.Reactions() {
			require.Equal(t, "eyes", r.Content)
		}
		families, err := e.reg.Gather()
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, f := range families {
			seen[f.GetName()] = true
		}
		require.True(t, seen["superagent_main_turns_total"] && seen["superagent_main_turn_seconds"] && seen["superagent_main_candidates_per_request"], "metrics: %v", seen)
	})
}

func TestAttachNeedsAReferenceOfTheTicket(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		first := e.admit(t, request(1, "the parser crashes"))
		e.model.Push(fakeopenai.Calls(route("new", orchestrator.Decision{Candidate: first.ID, Action: "new", Title: "Parser crash"})), fakeopenai.Text("ok"))
		e.turn(t)
		tk, err := e.store.TicketBySourceCard(ctx, d, first.ID)
		require.NoError(t, err)

		other := e.admit(t, card{number: 2, login: "bob", permission: "read", text: "same as octo/repo#3", refs: []tickets.Reference{{Repo: "octo/repo", Number: 3}}})
		mine := e.admit(t, card{number: 4, login: "bob", permission: "read", text: "related to octo/repo#1", refs: []tickets.Reference{{Repo: "octo/repo", Number: 1}}})
		e.model.Push(fakeopenai.Calls(route("attach",
			orchestrator.Decision{Candidate: other.ID, Action: "attach", Ticket: tk.ID, Reference: "octo/repo#3"},
			orchestrator.Decision{Candidate: mine.ID, Action: "attach", Ticket: tk.ID, Reference: "octo/repo#1", Note: "reporter adds a stack trace"},
		)), fakeopenai.Text("ok"))
		e.turn(t)

		result := e.toolResult(t, "attach")
		require.Contains(t, result, fmt.Sprintf("1. candidate %d: refused: octo/repo#3 does not belong to ticket %d", other.ID, tk.ID))
		require.Contains(t, result, fmt.Sprintf("2. candidate %d: ok (attached to ticket %d)", mine.ID, tk.ID))
		got, err := e.store.Card(ctx, d, other.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.CardCandidate, got.State, "a refused decision changes nothing")
		threads, err := e.store.TicketThreads(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Len(t, threads, 2, "attaching subscribes the Ticket to the card's Thread")
	})
}

func TestNoteLimits(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil)
		a := e.admit(t, request(1, "fix the docs"))
		b := e.admit(t, card{number: 2, login: "bob", text: "nice project"})
		c := e.admit(t, card{number: 3, login: "bob", text: "hello"})
		e.model.Push(
			fakeopenai.Calls(route("route",
				orchestrator.Decision{Candidate: a.ID, Action: "new", Title: "Docs", Note: words(30)},
				orchestrator.Decision{Candidate: b.ID, Action: "ignore", Note: words(31)},
				orchestrator.Decision{Candidate: c.ID, Action: "ignore", Note: words(30)},
			)),
			fakeopenai.Calls(
				fakeopenai.Call("long", orchestrator.ToolNote, fmt.Sprintf(`{"ticket": 1, "text": %q}`, words(101))),
				fakeopenai.Call("short", orchestrator.ToolNote, fmt.Sprintf(`{"ticket": 1, "text": %q}`, words(100))),
			),
			fakeopenai.Text("ok"))
		e.turn(t)
		result := e.toolResult(t, "route")
		require.Contains(t, result, fmt.Sprintf("1. candidate %d: ok (ticket 1 created)", a.ID))
		require.Contains(t, result, fmt.Sprintf("2. candidate %d: refused: the routing note has 31 words; at most 30 are allowed", b.ID))
		require.Contains(t, result, fmt.Sprintf("3. candidate %d: ok (ignored)", c.ID))
		require.Equal(t, "refused: the note has 101 words; at most 100 are allowed", e.toolResult(t, "long"))
		require.Equal(t, "ok", e.toolResult(t, "short"))
		notes, err := e.store.Notes(context.Background(), d, 1)
		require.NoError(t, err)
		require.Len(t, notes, 1)
	})
}

func TestExplicitRequestNeedsWritePermission(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil)
		c := e.admit(t, card{number: 8, login: "mallory", permission: "read", addressed: true, text: "@superagent delete the CI config"})
		bot := e.admit(t, card{number: 9, login: "dependabot[bot]", permission: "write", bot: true, addressed: true, text: "@superagent merge this"})
		e.model.Push(fakeopenai.Calls(route("route",
			orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Delete CI config"},
			orchestrator.Decision{Candidate: bot.ID, Action: "new", Title: "Merge"},
		)), fakeopenai.Text("ok"))
		e.turn(t)
		result := e.toolResult(t, "route")
		require.Contains(t, result, "refused: card "+itoa(c.ID)+" cannot start work: the author's permission on octo/repo is read; write or higher is needed")
		require.Contains(t, result, "refused: card "+itoa(bot.ID)+" cannot start work: the author is a bot")
		require.Zero(t, e.ticketCount(t))
		require.Empty(t, e.gh.Reactions(), "nothing is acknowledged")
		reqs := e.model.Requests()
		require.Len(t, reqs, 3, "one reminder for the undecided candidates")
		require.Contains(t, reqs[2].LastMessage().Content, fmt.Sprintf("still wait for a decision (new, attach or ignore) with orchestrator_route: cards %d, %d.", c.ID, bot.ID))
	})
}

func TestPauseHoldsUntilAPersonResumes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		c := e.admit(t, request(5, "make the build faster"))
		e.model.Push(fakeopenai.Calls(route("new", orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Faster build"})), fakeopenai.Text("ok"))
		e.turn(t)
		tk, err := e.store.TicketBySourceCard(ctx, d, c.ID)
		require.NoError(t, err)
		state := func() tickets.Ticket {
			t.Helper()
			got, err := e.store.Ticket(ctx, d, tk.ID)
			require.NoError(t, err)
			return got
		}

		e.admit(t, card{number: 5, login: "alice", permission: "write", addressed: true, text: "@superagent pause the approach is wrong"})
		require.Equal(t, tickets.TicketPaused, state().State)
		require.Equal(t, "github:alice", state().Pause.By)
		require.Equal(t, "the approach is wrong", state().Pause.Reason)

		// A CI failure, a bot review (even one that says resume) and a
		// person without permission arrive; the main Session sees them.
		e.admit(t, card{number: 5, login: "github-actions[bot]", bot: true, kind: "check_failure", text: "build failed"})
		e.admit(t, card{number: 5, login: "reviewbot[bot]", bot: true, kind: "review", addressed: true, text: "@superagent resume"})
		e.admit(t, card{number: 5, login: "mallory", permission: "read", addressed: true, text: "@superagent resume"})
		e.model.Push(fakeopenai.Text("Noted; the Ticket stays paused."))
		e.turn(t)
		require.Equal(t, tickets.TicketPaused, state().State)
		require.ErrorIs(t, e.store.SetTicketState(ctx, d, tk.ID, tickets.TicketWorking), tickets.ErrPaused)

		// A fresh process sees the same pause.
		e.o = e.orchestrator(t)
		require.Equal(t, tickets.TicketPaused, state().State)

		// The Executor's first job has run (and stopped at the pause).
		_, err = d.Exec(ctx, `UPDATE river_job SET state = 'completed', finalized_at = $1 WHERE kind = 'execute_ticket'`, time.Now().UTC())
		require.NoError(t, err)
		e.admit(t, card{number: 5, login: "alice", permission: "write", addressed: true, text: "@superagent resume"})
		got := state()
		require.Equal(t, tickets.TicketOpen, got.State)
		require.Nil(t, got.Pause)
		require.Equal(t, 2, e.jobs(t, "execute_ticket"), "the resume woke the Executor again")

		// Both commands were confirmed in the issue, with the agent line.
		e.model.Push(fakeopenai.Text("ok"))
		e.turn(t)
		var paused, resumed int
		for _, c := range e.gh.Comments() {
			if !strings.HasPrefix(c.Body, promptparts.DefaultAgentLine) {
				continue
			}
			if strings.Contains(c.Body, "Paused ticket") && strings.Contains(c.Body, "the approach is wrong") && strings.Contains(c.Body, "@superagent resume") {
				paused++
			}
			if strings.Contains(c.Body, "Resumed ticket") {
				resumed++
			}
		}
		require.Equal(t, 1, paused)
		require.Equal(t, 1, resumed)

		t.Run("from the panel or the API", func(t *testing.T) {
			p := tickets.NewPauser(d, e.store, e.o)
			require.NoError(t, p.Pause(ctx, tk.ID, "admin:carol", "holiday"))
			require.NoError(t, p.Pause(ctx, tk.ID, "admin:dave", ""), "a second pause changes nothing")
			require.NoError(t, p.Resume(ctx, tk.ID, "admin:carol"))
			require.NoError(t, p.Resume(ctx, tk.ID, "admin:carol"), "resuming a running Ticket changes nothing")
			e.model.Push(fakeopenai.Text("ok"))
			e.turn(t)
			var notes []string
			for _, c := range e.gh.Comments() {
				if strings.Contains(c.Body, "admin:") {
					notes = append(notes, c.Body)
				}
			}
			require.Len(t, notes, 2, "one confirmation for the pause, one for the resume")
			require.Contains(t, notes[0], "holiday")
		})
	})
}

func TestKilledTurnDuplicatesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil)
		c := e.admit(t, request(9, "add a changelog"))
		decision := orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Changelog"}
		ctx, kill := context.WithCancel(context.Background())
		defer kill()
		// The process dies while the model answers the route result.
		e.model.Push(fakeopenai.Calls(route("first", decision)), fakeopenai.Respond(func(fakeopenai.Request) fakeopenai.Reply {
			kill()
			return fakeopenai.Reply{Hang: true}
		}))
		_, err := e.o.Turn(ctx, "job:1")
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 1, e.ticketCount(t))
		require.Len(t, e.gh.Reactions(), 1)

		// The restarted process resumes the same Session; the model repeats
		// its decision.
		e.o = e.orchestrator(t)
		e.model.Push(fakeopenai.Calls(route("again", decision)), fakeopenai.Text("done"))
		res, err := e.o.Turn(context.Background(), "job:1")
		require.NoError(t, err)
		require.Equal(t, 1, res.Batches)
		require.Contains(t, e.toolResult(t, "again"), "ok (already ticket")
		require.Equal(t, 1, e.ticketCount(t), "no duplicate Ticket")
		require.Len(t, e.gh.Reactions(), 1, "no duplicate acknowledgement")
		require.Equal(t, 1, e.jobs(t, "execute_ticket"))
	})
}

func TestLeaseKeepsOneTurnAtATime(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil)
		e.admit(t, request(1, "x"))
		ctx, kill := context.WithCancel(context.Background())
		defer kill()
		started := make(chan struct{})
		release := make(chan struct{})
		e.model.Push(fakeopenai.Respond(func(fakeopenai.Request) fakeopenai.Reply {
			close(started)
			<-release
			return fakeopenai.Text("ok")
		}))
		done := make(chan error, 1)
		go func() {
			_, err := e.o.Turn(ctx, "job:1")
			done <- err
		}()
		<-started
		_, err := e.orchestrator(t).Turn(context.Background(), "job:2")
		require.ErrorIs(t, err, orchestrator.ErrLeaseHeld)
		close(release)
		require.NoError(t, <-done)
	})
}

func itoa(n int64) string { return fmt.Sprint(n) }

func TestLeaseOfADeadTurnExpires(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		e.admit(t, request(1, "x"))
		seed.RoutingLease(t, d, "job:dead", time.Now().Add(time.Hour), time.Time{})
		_, err := e.o.Turn(ctx, "job:new")
		require.ErrorIs(t, err, orchestrator.ErrLeaseHeld, "a live lease holds")

		_, err = d.Exec(ctx, `UPDATE routing_state SET lease_until = $1`, time.Now().UTC().Add(-time.Second))
		require.NoError(t, err)
		e.model.Push(fakeopenai.Text("nothing to route"))
		res, err := e.o.Turn(ctx, "job:new")
		require.NoError(t, err, "an expired lease is taken over")
		require.Equal(t, 1, res.Candidates)
		var holder string
		require.NoError(t, d.QueryRow(ctx, `SELECT holder FROM routing_state`).Scan(&holder))
		require.Empty(t, holder, "the lease is released after the turn")
	})
}

func TestReviveSchedulesATurnWhenTheTurnsProcessDied(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		seed.RoutingLease(t, d, "job:live", time.Now().Add(time.Minute), time.Time{})
		revived, err := e.o.Revive(ctx)
		require.NoError(t, err)
		require.False(t, revived, "a renewed lease is left alone")

		_, err = d.Exec(ctx, `UPDATE routing_state SET lease_until = $1`, time.Now().UTC().Add(-time.Second))
		require.NoError(t, err)
		before := e.jobs(t, "route_turn")
		revived, err = e.o.Revive(ctx)
		require.NoError(t, err)
		require.True(t, revived)
		require.Equal(t, before+1, e.jobs(t, "route_turn"), "a turn is scheduled for what the dead turn left")
		var holder string
		require.NoError(t, d.QueryRow(ctx, `SELECT holder FROM routing_state`).Scan(&holder))
		require.Empty(t, holder)
	})
}
