package executor_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/tickets"
)

// A person pauses the Ticket while the model decides its next call; the
// Executor stops before doing more, stays stopped while follow-ups arrive,
// and after the resume finishes the work from where it stopped.
func TestPauseStopsTheExecutorAndResumeContinuesIt(t *testing.T) {
	t.Parallel()
	for _, next := range []string{"run_command", "git_push"} {
		t.Run("before "+next, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, d *db.DB) {
				testPause(t, d, next)
			})
		})
	}
}

func testPause(t *testing.T, d *db.DB, next string) {
	ctx := context.Background()
	var (
		e       *env
		tk      tickets.Ticket
		once    sync.Once
		pauseTo error
		pausedN int // the model request that saw the pause arrive
	)
	e = setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
		r := typoFixer(req)
		if len(r.ToolCalls) == 1 && r.ToolCalls[0].Name == next {
			once.Do(func() {
				pausedN = len(e.model.Requests())
				pauseTo = tickets.NewPauser(d, e.store).Pause(ctx, tk.ID, "carol", "let me look first")
			})
		}
		return r
	})
	tk, _ = e.request(t, "@superagent please fix the typo in the README")
	e.run(t, tk.ID)
	require.NoError(t, pauseTo)
	require.NotZero(t, pausedN, "the pause arrived")

	got, err := e.store.Ticket(ctx, d, tk.ID)
	require.NoError(t, err)
	require.Equal(t, tickets.TicketPaused, got.State)
	require.NotNil(t, got.Pause)
	require.Len(t, e.model.Requests(), pausedN, "no model request after the pause")
	push := "refs/heads/superagent/ticket-" + itoa(tk.ID)
	require.Zero(t, e.gh.Pushes(repo, push), "nothing was pushed while paused")
	require.Empty(t, e.gh.PullRequests(repo))

	// A follow-up while paused is kept for later and resumes nothing.
	e.admit(t, 1, "bob", "Please also keep the greeting on one line.")
	got, err = e.store.Ticket(ctx, d, tk.ID)
	require.NoError(t, err)
	require.Equal(t, tickets.TicketPaused, got.State, "a follow-up does not lift a person's pause")
	e.run(t, tk.ID)
	require.Len(t, e.model.Requests(), pausedN, "a paused Ticket's Executor does nothing")
	got, err = e.store.Ticket(ctx, d, tk.ID)
	require.NoError(t, err)
	require.Equal(t, tickets.TicketPaused, got.State)

	// A person resumes it: the work continues where it stopped.
	require.NoError(t, tickets.NewPauser(d, e.store).Resume(ctx, tk.ID, "carol"))
	e.run(t, tk.ID)

	got, err = e.store.Ticket(ctx, d, tk.ID)
	require.NoError(t, err)
	require.Equal(t, tickets.TicketInReview, got.State)
	prs := e.gh.PullRequests(repo)
	require.Len(t, prs, 1)
	require.Equal(t, prs[0].Number, got.PullNumber)
	require.Equal(t, 1, e.gh.Pushes(repo, push), "pushed once, after the resume")
	var confirms, results int
	for _, c := range e.gh.Comments() {
		confirms += strings.Count(c.Body, "I will fix the misspelled word")
		results += strings.Count(c.Body, "The fix is in a draft pull request")
	}
	require.Equal(t, 1, confirms)
	require.Equal(t, 1, results)

	// The earlier steps were not redone, and the follow-up reached the model
	// after the resume.
	last := steps(e.model.Last())
	for _, name := range []string{"reply", "read_file", "edit_file", "git_commit"} {
		n := 0
		for _, s := range last {
			if s.name == name {
				n++
			}
		}
		want := 1
		if name == "reply" {
			want = 2
		}
		require.Equal(t, want, n, "%s calls in the conversation", name)
	}
	var heard bool
	for _, r := range e.model.Requests()[pausedN:] {
		for _, m := range r.Messages {
			heard = heard || (m.Role == "user" && strings.Contains(m.Content, "keep the greeting on one line"))
		}
	}
	require.True(t, heard, "the follow-up admitted while paused reached the Executor after the resume")
}

// A pause that arrives while the model decides on pr_update, pr_close or
// review_resolve: the call runs at the step's end, but it writes nothing to
// GitHub (those tools write without the outbox, so they check the hold
// themselves).
func TestWritesWithoutTheOutboxRespectAPause(t *testing.T) {
	t.Parallel()
	for _, write := range []struct{ name, args string }{
		{"pr_update", `{"title":"Fix the README typo","ready":true}`},
		{"pr_close", `{"reason":"Another pull request fixes it.","pointer":"octo/hello#7"}`},
		{"review_resolve", `{"thread":"PRRT_1"}`},
	} {
		t.Run(write.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, d *db.DB) {
				ctx := context.Background()
				var (
					e    *env
					tk   tickets.Ticket
					once sync.Once
				)
				e = setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
					ss := steps(req)
					if !done(ss, "pr_open") {
						return typoFixer(req)
					}
					if len(ss) > 0 && ss[len(ss)-1].name == write.name {
						return fakeopenai.Text("Stopping.")
					}
					once.Do(func() {
						require.NoError(t, tickets.NewPauser(d, e.store).Pause(ctx, tk.ID, "carol", "hold on"))
					})
					return call(write.name, write.args)
				})
				tk, _ = e.request(t, "@superagent please fix the typo in the README")
				e.run(t, tk.ID)

				// The call ran after the pause (its result is in the
				// transcript; no model request followed) and was refused.
				require.Contains(t, e.transcript(t), "refused: ticket "+itoa(tk.ID)+" is paused by carol")
				// (The host's own progress comment may still be edited.)
				for _, r := range e.gh.Requests() {
					if (r.Method == http.MethodPatch && strings.Contains(r.Path, "/pulls/")) || (r.Path == "/graphql" && strings.Contains(string(r.Body), "mutation")) {
						t.Errorf("%s %s written during the pause: %s", r.Method, r.Path, r.Body)
					}
				}
				require.True(t, e.gh.PullRequests(repo)[0].Draft, "still a draft")
			})
		})
	}
}
