package executor_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/executor"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

const publicURL = "https://agent.example.com"

// withProgress is setup with the progress comment and check run on.
func withProgress(t *testing.T, d *db.DB, brain func(fakeopenai.Request) fakeopenai.Reply, mod func(*env)) *env {
	t.Helper()
	e := setup(t, d, brain)
	e.progress, e.publicURL = true, publicURL
	if mod != nil {
		mod(e)
	}
	e.x = e.executor(t)
	return e
}

// progressComments are the comments carrying the Ticket's progress marker.
func progressComments(e *env, ticketID int64) []fakegithub.Comment {
	var out []fakegithub.Comment
	for _, c := range e.gh.Comments() {
		if strings.Contains(c.Body, outbox.Marker("progress:ticket:"+itoa(ticketID))) {
			out = append(out, c)
		}
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// progressStates are the Ticket states the progress intents recorded, in
// order: one per write.
func progressStates(t *testing.T, e *env, ticketID int64) []string {
	t.Helper()
	all, err := e.store.Outgoings(context.Background(), e.d, ticketID)
	require.NoError(t, err)
	var out []string
	for _, o := range all {
		if o.Kind == "progress" {
			require.Equal(t, tickets.OutgoingSent, o.State, o.Key)
			out = append(out, o.Body)
		}
	}
	return out
}

func TestProgressCommentIsEditedInPlaceAndTheCheckRunLinksTheTicket(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := withProgress(t, d, typoFixer, nil)
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)

		pcs := progressComments(e, tk.ID)
		require.Len(t, pcs, 1, "one progress comment per Ticket")
		pc := pcs[0]
		require.Equal(t, 1, pc.Number, "on the issue the request came from")
		require.Equal(t, "superagent[bot]", pc.Login)
		require.Equal(t, 1, e.gh.Count("POST", "/repos/"+repo+"/issues/1/comments")-2, "posted once; the confirmation and the result are the other two")
		states := progressStates(t, e, tk.ID)
		require.Equal(t, tickets.TicketWorking, states[0], "first posted when the work starts")
		require.Equal(t, tickets.TicketInReview, states[len(states)-1], "last edited when it is in review")
		require.Equal(t, len(states)-1, pc.Edits, "every later state is an edit of the same comment")
		require.Contains(t, pc.Body, "This is by an automated agent, not a human")
		require.Contains(t, pc.Body, "is **in review**")
		require.Contains(t, pc.Body, "- [x] `git_push`")
		require.Contains(t, pc.Body, "[Watch and steer this Ticket]("+publicURL+"/admin/tickets/"+itoa(tk.ID)+")")

		prs := e.gh.PullRequests(repo)
		require.Len(t, prs, 1)
		runs := e.gh.CheckRuns(repo)
		require.Len(t, runs, 1, "one check run, created when the pull request was opened")
		run := runs[0]
		require.Equal(t, executor.CheckRunName, run.Name)
		require.Equal(t, prs[0].HeadSHA, run.HeadSHA, "on the pull request's head")
		require.Equal(t, publicURL+"/admin/tickets/"+itoa(tk.ID), run.DetailsURL)
		require.Equal(t, "completed", run.Status, "completed at the Session's end")
		require.Equal(t, "success", run.Conclusion, "the work is delivered")
		require.Contains(t, run.Summary, "Latest report (done)")

		// Another job with nothing new writes nothing.
		edits := pc.Edits
		e.run(t, tk.ID)
		require.Equal(t, edits, progressComments(e, tk.ID)[0].Edits)
		require.Len(t, e.gh.CheckRuns(repo), 1)
	})
}

func TestProgressWithoutAPublicURLHasNoLink(t *testing.T) {
	t.Parallel()
	e := withProgress(t, dbtest.SQLite(t), typoFixer, func(e *env) { e.publicURL = "" })
	tk, _ := e.request(t, "@superagent please fix the typo in the README")
	e.run(t, tk.ID)
	pcs := progressComments(e, tk.ID)
	require.Len(t, pcs, 1)
	require.NotContains(t, pcs[0].Body, "/admin/tickets/", "no link is invented")
	runs := e.gh.CheckRuns(repo)
	require.Len(t, runs, 1)
	require.Empty(t, runs[0].DetailsURL)
}

func TestCrashWhilePostingTheProgressCommentPostsItOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := withProgress(t, d, typoFixer, nil)
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		// The first comment the work posts is the progress comment.
		e.gh.FailNext("POST", "/repos/"+repo+"/issues/1/comments", fakegithub.Fault{Delay: 5 * time.Minute})
		ctx, crash := context.WithCancel(context.Background())
		defer crash()
		died := make(chan error, 1)
		go func() { died <- e.x.Execute(ctx, tk.ID, "process-1") }()
		pollUntil(t, "the progress comment lands on GitHub", func() bool { return len(progressComments(e, tk.ID)) == 1 })
		crash()
		select {
		case err := <-died:
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(time.Minute):
			t.Fatal("the first process did not stop")
		}
		x := e.executor(t)
		run, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var err error
		pollUntil(t, "the first process's lease lapses", func() bool {
			err = x.Execute(run, tk.ID, "process-2")
			return !errors.Is(err, executor.ErrBusy)
		})
		require.NoError(t, err)
		pcs := progressComments(e, tk.ID)
		require.Len(t, pcs, 1, "the restarted process found the comment and edited it")
		require.Contains(t, pcs[0].Body, "is **in review**")
		require.Positive(t, pcs[0].Edits)
	})
}

// stopper is the Stopper the panel and the API use, over the test's
// executor.
func (e *env) stopper() *tickets.Stopper {
	return tickets.NewStopper(e.d, e.store, e.x.StoppedAtLimit)
}

func TestStopEndsTheSessionAndWritesNothingMore(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		var e *env
		var tk tickets.Ticket
		stopped := false
		e = withProgress(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
			ss := steps(req)
			if done(ss, "edit_file") && !stopped {
				// A person presses Stop while the model is thinking; the
				// push it asks for next must not reach GitHub.
				stopped = true
				require.NoError(t, e.stopper().Stop(context.Background(), tk.ID, "github:carol", "wrong approach"))
				return call("git_push", `{}`)
			}
			return typoFixer(req)
		}, nil)
		tk, _ = e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)

		require.True(t, stopped)
		got, err := e.store.Ticket(context.Background(), d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketCancelled, got.State)
		require.Equal(t, "github:carol", got.Stop.By, "the record keeps the account")
		ses, err := e.x.Sessions().Store().ForTicket(context.Background(), d, tk.ID)
		require.NoError(t, err)
		msgs, err := e.x.Sessions().Store().Messages(context.Background(), d, ses[len(ses)-1].ID, 0)
		require.NoError(t, err)
		last := msgs[len(msgs)-1]
		require.Equal(t, "tool", last.Role, "the push asked for before the stop was answered")
		require.True(t, strings.HasPrefix(last.Content, "refused: ticket "+itoa(tk.ID)+" was stopped by github:carol"), last.Content)
		require.Zero(t, e.gh.Pushes(repo, "refs/heads/superagent/ticket-"+itoa(tk.ID)), "nothing was pushed after the stop")
		require.Empty(t, e.gh.PullRequests(repo))
		require.Equal(t, session.StateStopped, ses[len(ses)-1].State)
		require.Equal(t, "stopped by github:carol", ses[len(ses)-1].StateReason, "the next step ended the Session")
		pcs := progressComments(e, tk.ID)
		require.Len(t, pcs, 1)
		require.Contains(t, pcs[0].Body, "is **stopped** by @carol: nothing more is written here", "the comment names the person as GitHub does")

		require.NoError(t, e.stopper().Continue(context.Background(), tk.ID, "dave"), "a stopped Ticket can be continued")
	})
}

func TestContinueAfterALimitStartsANewSessionWithAHandoff(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		// The continued Session reads the handoff and goes on from the
		// edit the first one made before its limit.
		e := withProgress(t, d, resumer(`{"state":"done","summary":"Fixed the README typo in a draft pull request after the continue; verified with ./test.sh, which passes.",`+
			`"human_action":"Please review the draft pull request."}`), func(e *env) { e.session.MaxSteps = 4 })
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)
		got, err := e.store.Ticket(context.Background(), d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketWaiting, got.State, "the step limit stopped the work")
		require.Empty(t, e.gh.PullRequests(repo))
		require.Contains(t, progressComments(e, tk.ID)[0].Body, "is **waiting**")
		first, err := e.x.Sessions().Store().ForTicket(context.Background(), d, tk.ID)
		require.NoError(t, err)
		require.Len(t, first, 1)

		atLimit, err := e.x.StoppedAtLimit(context.Background(), d, tk.ID)
		require.NoError(t, err)
		require.True(t, atLimit)
		e.session.MaxSteps = 0
		e.x = e.executor(t)
		require.NoError(t, e.stopper().Continue(context.Background(), tk.ID, "dave"))
		e.run(t, tk.ID)

		ses, err := e.x.Sessions().Store().ForTicket(context.Background(), d, tk.ID)
		require.NoError(t, err)
		require.Len(t, ses, 2, "a new Session of the same Ticket")
		msgs, err := e.x.Sessions().Store().Messages(context.Background(), d, ses[1].ID, 0)
		require.NoError(t, err)
		require.Contains(t, msgs[0].Content, "dave asked to continue ticket")
		require.Contains(t, msgs[0].Content, "stopped: max_steps")
		require.Contains(t, msgs[0].Content, "branch superagent/ticket-"+itoa(tk.ID))
		require.Contains(t, msgs[0].Content, "please fix the typo", "the assignment travels with the handoff")
		got, err = e.store.Ticket(context.Background(), d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketInReview, got.State, e.transcript(t))
		require.Nil(t, got.Continue, "the request was taken")
		require.Len(t, e.gh.PullRequests(repo), 1, "the new Session finished the work on the same branch")
	})
}
