package executor_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/tickets"
)

// theirFixer fixes the README typo on the branch it is given, tries to
// mark the pull request ready, and reports done.
func theirFixer(req fakeopenai.Request) fakeopenai.Reply {
	ss := steps(req)
	card := firstCard(req)
	switch {
	case !done(ss, "reply"):
		return call("reply", `{"purpose":"confirm","in_reply_to":`+card+`,"text":"I will fix the misspelled word that makes ./test.sh fail, on your branch."}`)
	case !done(ss, "edit_file"):
		return call("edit_file", `{"path":"README.md","old_text":"projetc","new_text":"project"}`)
	case !done(ss, "git_commit"):
		return call("git_commit", `{"message":"Fix the README typo that fails test.sh"}`)
	case !done(ss, "git_push"):
		return call("git_push", `{}`)
	case !called(ss, "pr_update"):
		return call("pr_update", `{"ready":true}`)
	case !done(ss, "report"):
		return call("report", `{"state":"done","summary":"Fixed the README typo on carol's branch; ./test.sh passes on it now."}`)
	}
	return fakeopenai.Text("Done.")
}

// A request on a person's pull request in the same repository commits to
// their branch; their pull request becomes the Ticket's, yet stays theirs.
func TestAFixOnAPersonsPullRequestGoesToTheirBranch(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, theirFixer)
		ctx := context.Background()
		before := e.gh.PushAs(t, repo, "carol/greeting", map[string]string{"GREETING.md": "Hello!\n"}, "Add a greeting")
		pr := e.gh.AddPullRequest(t, repo, fakegithub.PullRequestSpec{Login: "carol", Head: "carol/greeting", Title: "Add a greeting", Draft: true})
		tk := e.ticketOf(t, e.admit(t, pr, "alice", "@superagent fix the failing test"), "Fix the failing test")
		e.run(t, tk.ID)

		after := e.pull(t, pr)
		require.NotEqual(t, before, after.HeadSHA, "the fix is on their branch")
		require.Contains(t, gitShow(t, e.bare, after.HeadSHA+":README.md"), "This project says hello.")
		require.Contains(t, gitShow(t, e.bare, after.HeadSHA+":GREETING.md"), "Hello!", "on top of their work")
		require.Len(t, e.gh.PullRequests(repo), 1, "no pull request of its own")
		_, ok := e.gh.Branch(t, repo, "superagent/ticket-"+itoa(tk.ID))
		require.False(t, ok)
		require.True(t, after.Draft, "their draft stays theirs")
		update := e.modelCalls("pr_update")
		require.Len(t, update, 1)
		require.Equal(t, fmt.Sprintf("refused: %s#%d is carol's pull request: only they change, close or merge it; the Ticket pushes to its branch", repo, pr), update[0].result)

		got, err := e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, pr, got.PullNumber)
		require.Equal(t, "carol/greeting", got.Branch)
		require.Equal(t, tickets.TicketInReview, got.State, "done on a person's open pull request: in review until it ends")
		require.Contains(t, e.modelInput(), "this Ticket works on its branch carol/greeting")
		require.Contains(t, e.logs.String(), "working on a person's pull request")
	})
}

// A person's pull request from a fork that does not allow edits by
// maintainers is not pushed to: the Executor is told to say so and offer
// a pull request onto theirs.
func TestAForkWithoutMaintainerEditsIsNotPushedTo(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
			if !done(steps(req), "reply") {
				return call("reply", `{"purpose":"decline","in_reply_to":`+firstCard(req)+`,"text":"I cannot push to your fork's branch because it does not allow edits by maintainers, so I can open a pull request onto yours instead."}`)
			}
			return fakeopenai.Text("Offered.")
		})
		ctx := context.Background()
		e.gh.AddRepo(t, "dave/hello", "main", map[string]string{"README.md": readme})
		before := e.gh.PushAs(t, repo, "dave-greeting", map[string]string{"GREETING.md": "Hi!\n"}, "Add a greeting")
		pr := e.gh.AddPullRequest(t, repo, fakegithub.PullRequestSpec{Login: "dave", Head: "dave-greeting", HeadRepo: "dave/hello", Title: "Add a greeting"})
		tk := e.ticketOf(t, e.admit(t, pr, "alice", "@superagent fix the failing test"), "Fix the failing test")
		e.run(t, tk.ID)

		require.Contains(t, e.modelInput(), fmt.Sprintf("host: the request is on dave's pull request %s#%d from dave/hello:dave-greeting, a fork whose author does not allow edits by maintainers", repo, pr))
		require.Equal(t, before, e.pull(t, pr).HeadSHA, "nothing was pushed to theirs")
		got, err := e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Zero(t, got.PullNumber)
		require.Equal(t, "superagent/ticket-"+itoa(tk.ID), got.Branch, "the Ticket keeps its own branch")
		var said bool
		for _, c := range e.gh.Comments() {
			said = said || strings.Contains(c.Body, "does not allow edits by maintainers")
		}
		require.True(t, said, "said in one sentence under the request")
	})
}
