package executor_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/tickets"
)

// A follow-up that arrives while the Executor works is in its next model
// request.
func TestFollowUpReachesTheExecutorAtItsNextStep(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		var (
			e        *env
			once     sync.Once
			at       int // index of the request during which the card arrived
			reached  = make(chan struct{})
			admitted = make(chan struct{})
		)
		e = setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
			r := typoFixer(req)
			if len(r.ToolCalls) == 1 && r.ToolCalls[0].Name == "read_file" {
				once.Do(func() {
					at = len(e.model.Requests()) - 1
					close(reached)
					select {
					case <-admitted:
					case <-time.After(time.Minute):
					}
				})
			}
			return r
		})
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		finished := make(chan error, 1)
		go func() { finished <- e.x.Execute(ctx, tk.ID, "test") }()
		select {
		case <-reached:
		case <-time.After(time.Minute):
			t.Fatal("the Executor never got to read the file")
		}
		const text = "Also fix the title while you are at it."
		e.admit(t, 1, "bob", text)
		close(admitted)
		require.NoError(t, <-finished)

		carries := func(r fakeopenai.Request) bool {
			for _, m := range r.Messages {
				if m.Role == "user" && strings.Contains(m.Content, text) {
					return true
				}
			}
			return false
		}
		reqs := e.model.Requests()
		require.Greater(t, len(reqs), at+1)
		require.False(t, carries(reqs[at]), "the card arrived during request %d", at)
		require.True(t, carries(reqs[at+1]), "the next request carries the follow-up")
		// It came after the read_file result, as a new card in the Thread.
		var afterRead bool
		for _, m := range reqs[at+1].Messages {
			afterRead = afterRead || m.Role == "tool"
			if m.Role == "user" && strings.Contains(m.Content, text) {
				require.True(t, afterRead)
				require.Contains(t, m.Content, "New card in a Thread ticket")
			}
		}
	})
}

// The Executor writes only in Threads its Ticket follows for its work:
// not in an unrelated issue, not in one it follows for context.
func TestRepliesOutsideTheTicketsThreadsAreRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, callsInOrder(
			[2]string{"reply", `{"thread":"github:octo/hello#2","purpose":"answer","text":"This is related to the typo fix."}`},
			[2]string{"thread_subscribe", `{"thread":"octo/hello#3","reason":"the same typo is discussed there"}`},
			[2]string{"reply", `{"thread":"github:octo/hello#3","purpose":"answer","text":"I am fixing this in the README."}`},
		))
		e.gh.AddIssue(repo, 2, "Unrelated", "Something else.", "erin")
		e.gh.AddIssue(repo, 3, "Same typo", "projetc again", "erin")
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)

		ss := steps(e.model.Last())
		require.Len(t, ss, 3)
		require.True(t, strings.HasPrefix(ss[0].result, "refused: the Ticket does not follow github:octo/hello#2"), ss[0].result)
		require.True(t, strings.HasPrefix(ss[1].result, "following github:octo/hello#3 for context"), ss[1].result)
		require.True(t, strings.HasPrefix(ss[2].result, "refused: the Ticket does not follow github:octo/hello#3 for its work"), ss[2].result)

		ctx := context.Background()
		followed, contextOnly, err := e.store.Follows(ctx, d, tk.ID, "github:octo/hello#3")
		require.NoError(t, err)
		require.True(t, followed && contextOnly, "issue 3 is followed for context only")
		for _, c := range e.gh.Comments() {
			require.NotEqual(t, "superagent[bot]", c.Login, "nothing was posted: %q on #%d", c.Body, c.Number)
		}
		require.Zero(t, e.gh.Count("POST", "/repos/"+repo+"/issues/2/comments"))
		require.Zero(t, e.gh.Count("POST", "/repos/"+repo+"/issues/3/comments"))
	})
}

// A Thread marked unrelated is no longer followed and gives back what it
// brought; a follow-up handed back becomes a candidate with its reason.
func TestUnrelatedThreadsAndHandBacksReturnCardsToTheMainSession(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		var tk tickets.Ticket
		var attached, later, aside tickets.Card
		e := setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
			return callsInOrder(
				[2]string{"orchestrator_thread_unrelated", `{"thread":"octo/hello#4","reason":"a different bug"}`},
				[2]string{"hand_back", fmt.Sprintf(`{"message":%d,"reason":"a feature request beyond this Ticket"}`, aside.ID)},
				[2]string{"orchestrator_thread_unrelated", `{"thread":"octo/hello#1","reason":"wrong"}`},
			)(req)
		})
		tk, _ = e.request(t, "@superagent please fix the typo in the README")
		// The main Session attached a card from issue 4 to the Ticket, which
		// then follows issue 4; a later comment there is a follow-up.
		e.gh.AddIssue(repo, 4, "Crash on start", "It crashes.", "dave")
		attached = e.admit(t, 4, "dave", "@superagent this crashes too, maybe the same README problem")
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
			if err := e.store.Subscribe(ctx, tx, tk.ID, attached.Thread.ID); err != nil {
				return err
			}
			return e.store.SetCardState(ctx, tx, attached.ID, tickets.CardRouted, tk.ID)
		}))
		later = e.admit(t, 4, "dave", "Here is the stack trace.")
		require.Equal(t, tickets.CardFollowUp, later.State)
		aside = e.admit(t, 1, "bob", "Could you also add a dark mode?")
		require.Equal(t, tickets.CardFollowUp, aside.State)
		e.run(t, tk.ID)

		ss := steps(e.model.Last())
		require.Len(t, ss, 3)
		require.Equal(t, "no longer following github:octo/hello#4; 1 attached card(s) went back to the main Session; nothing was posted there", ss[0].result)
		require.Equal(t, "handed back; the main Session routes it", ss[1].result)
		require.True(t, strings.HasPrefix(ss[2].result, "refused: github:octo/hello#1 is where the Ticket's request came from"), ss[2].result)

		followed, _, err := e.store.Follows(ctx, d, tk.ID, "github:octo/hello#4")
		require.NoError(t, err)
		require.False(t, followed)
		followed, _, err = e.store.Follows(ctx, d, tk.ID, "github:octo/hello#1")
		require.NoError(t, err)
		require.True(t, followed, "the request's Thread is still followed")

		for _, c := range []struct {
			card   tickets.Card
			reason string
		}{{attached, ""}, {later, "unrelated thread: a different bug"}, {aside, "a feature request beyond this Ticket"}} {
			got, err := e.store.Card(ctx, d, c.card.ID)
			require.NoError(t, err)
			require.Equal(t, tickets.CardCandidate, got.State, "card %d is the main Session's again", c.card.ID)
			require.Zero(t, got.TicketID)
			hb, err := e.store.HandBacks(ctx, d, c.card.ID)
			require.NoError(t, err)
			if c.reason == "" {
				require.Empty(t, hb)
				continue
			}
			require.Len(t, hb, 1)
			require.Equal(t, tk.ID, hb[0].TicketID)
			require.Equal(t, c.reason, hb[0].Reason)
		}
		require.Zero(t, e.gh.Count("POST", "/repos/"+repo+"/issues/4/comments"), "nothing was posted in the unrelated Thread")
	})
}
