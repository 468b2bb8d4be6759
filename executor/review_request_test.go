package executor_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/tickets"
)

// pr_review refuses, before anything reaches GitHub, a verdict the policy
// does not allow and a comment on a file the pull request does not
// change; it posts one review, and a second is refused pointing to it.
func TestPRReviewIsCheckedBeforeItIsPosted(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		review := func(event, path string) fakeopenai.Reply {
			if event != "" {
				event = `"event":"` + event + `",`
			}
			return call("pr_review", `{"body":"Read the fix; sh test.sh passes.",`+event+`"comments":[{"path":"`+path+
				`","line":3,"body":"Good catch.\n`+"```suggestion\\nThis project says hello!\\n```"+`"}]}`)
		}
		e := setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
			n := 0
			for _, s := range steps(req) {
				if s.name == "pr_review" {
					n++
				}
			}
			switch n {
			case 0:
				return review("APPROVE", "README.md")
			case 1:
				return review("COMMENT", "test.sh")
			case 2:
				return review("", "README.md")
			case 3:
				return review("", "README.md")
			}
			return fakeopenai.Text("Reviewed.")
		})
		sha := e.gh.PushAs(t, repo, "bob-typo", map[string]string{"README.md": "# Hello\n\nThis project says hello.\n"}, "Fix the typo")
		pr := e.gh.AddPullRequest(t, repo, fakegithub.PullRequestSpec{Login: "bob", Head: "bob-typo", Title: "Fix the typo"})
		c := e.admit(t, pr, "alice", "@superagent review")
		ctx := context.Background()
		var tk tickets.Ticket
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			author := c.Author
			tk, err = e.store.CreateTicket(ctx, tx, tickets.Ticket{Title: "Review the typo fix", Repo: repo, SourceCardID: c.ID,
				Mandate: tickets.Mandate{RequestedBy: &author, Source: c.Source, Repos: []string{repo}, Actions: tickets.ReviewActions}})
			if err != nil {
				return err
			}
			if err := e.store.Subscribe(ctx, tx, tk.ID, c.Thread.ID); err != nil {
				return err
			}
			return e.store.SetCardState(ctx, tx, c.ID, tickets.CardRouted, tk.ID)
		}))
		e.run(t, tk.ID)

		var results []string
		for _, s := range steps(e.model.Requests()[len(e.model.Requests())-1]) {
			if s.name == "pr_review" {
				results = append(results, s.result)
			}
		}
		require.Len(t, results, 4)
		require.Contains(t, results[0], "event APPROVE is not allowed by the policy (allowed: COMMENT)")
		require.Contains(t, results[1], "comments[0] (test.sh line 3): the pull request does not change test.sh (it changes README.md)")
		require.True(t, strings.HasPrefix(results[2], "posted the review (COMMENT, 1 inline comments)"), results[2])
		require.Contains(t, results[3], "this Ticket has posted its review already")

		var bot []fakegithub.Review
		for _, r := range e.gh.Reviews(repo, pr) {
			if strings.HasSuffix(r.Login, "[bot]") {
				bot = append(bot, r)
			}
		}
		require.Len(t, bot, 1, "one review; the refused ones posted nothing")
		require.Equal(t, "COMMENTED", bot[0].State)
		threads := e.gh.ReviewThreads(repo, pr)
		require.Len(t, threads, 1)
		require.Equal(t, "README.md", threads[0].Path)
		require.Contains(t, threads[0].Comments[0].Body, "This is by an automated agent", "the agent line on the inline comment too")
		got, err := e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, pr, got.PullNumber, "the Ticket reviews their pull request")
		require.Equal(t, sha, e.gh.PullRequests(repo)[0].HeadSHA, "nothing pushed")
	})
}
