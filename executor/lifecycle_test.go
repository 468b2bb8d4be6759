package executor_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/tickets"
)

// afterDone is a brain that fixes the typo and reports done with the draft
// left for a person (typoFixer), then answers each later turn with next.
func afterDone(next func(turn) fakeopenai.Reply) func(fakeopenai.Request) fakeopenai.Reply {
	return func(req fakeopenai.Request) fakeopenai.Reply {
		if tn := current(req); !tn.first {
			return next(tn)
		}
		return typoFixer(req)
	}
}

// resumer is the brain of a Ticket continued after a limit: typoFixer
// until the continue; the new Session, reading the handoff, commits what
// is left (it may have committed before its limit: "nothing to commit" is
// fine), pushes, opens the draft and, when report is not empty, reports
// with it.
func resumer(report string) func(fakeopenai.Request) fakeopenai.Reply {
	return func(req fakeopenai.Request) fakeopenai.Reply {
		if !strings.Contains(req.Text(), "asked to continue") {
			return typoFixer(req)
		}
		ss := steps(req)
		switch {
		case len(ss) == 0:
			return call("git_commit", `{"message":"Fix a typo in the README"}`)
		case !done(ss, "git_push"):
			return call("git_push", `{}`)
		case !done(ss, "pr_open"):
			return call("pr_open", `{"title":"Fix a typo in the README","body":"Fixes the misspelled word."}`)
		case report != "" && !done(ss, "report"):
			return call("report", report)
		}
		return fakeopenai.Text("Done.")
	}
}

// A review comment that arrives after the Executor reported done reaches
// it (the Ticket is in review): the fix goes to the same branch and the
// thread is resolved.
func TestReviewAfterTheReportIsFixedOnTheSameBranch(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, afterDone(func(tn turn) fakeopenai.Reply {
			if m := discussion.FindStringSubmatch(tn.cards); m != nil {
				return fixAndResolve(tn, m[1])
			}
			return fakeopenai.Text("Nothing to do.")
		}))
		ctx := context.Background()
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)
		tk, err := e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketInReview, tk.State)
		pr := e.pull(t, tk.PullNumber)
		require.True(t, pr.Draft)

		_, threadID, c := e.reviewComment(t, pr.Number, fakegithub.ReviewCommentSpec{Login: "bob", Body: "Say whom the project greets."})
		require.Equal(t, tickets.CardFollowUp, c.State, "in review, the Ticket follows its pull request's review threads")
		require.Equal(t, tk.ID, c.TicketID)
		e.run(t, tk.ID)

		require.Equal(t, tickets.DeliveryDelivered, e.delivery(t, tk.ID, c.ID).State)
		after := e.pull(t, pr.Number)
		require.Equal(t, pr.Head, after.Head, "the same branch")
		require.NotEqual(t, pr.HeadSHA, after.HeadSHA, "the fix was pushed")
		require.Contains(t, gitShow(t, e.bare, after.HeadSHA+":README.md"), "This project says hello to the world.")
		threads := e.gh.ReviewThreads(repo, pr.Number)
		require.Len(t, threads, 1)
		require.Equal(t, threadID, threads[0].ID)
		require.True(t, threads[0].Resolved)
		require.Len(t, e.gh.PullRequests(repo), 1, "no second pull request")
		got, err := e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketInReview, got.State, "still in review until the pull request ends")
	})
}

// A person's message to a Ticket whose Session stopped at a limit starts
// a new Session of it on the same branch, with a handoff; a bot's card
// waits instead of going to a Session that will not read it.
func TestAPersonsMessageContinuesATicketStoppedAtALimit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, resumer(""))
		e.session.MaxSteps = 5
		e.x = e.executor(t)
		ctx := context.Background()
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)
		atLimit, err := e.x.StoppedAtLimit(ctx, d, tk.ID)
		require.NoError(t, err)
		require.True(t, atLimit)
		e.session.MaxSteps = 0
		e.x = e.executor(t)

		// A bot's comment does not continue it, and is not lost.
		bot := e.admitCard(t, tickets.NewCard{Source: tickets.SourceGitHub, Kind: "comment", Thread: pullThread(1),
			Author: author("ci-bot[bot]"), Text: "Coverage report: 81%."})
		require.Equal(t, tickets.CardFollowUp, bot.State)
		e.run(t, tk.ID)
		ses, err := e.x.Sessions().Store().ForTicket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Len(t, ses, 1)
		ds, err := e.store.Deliveries(ctx, d, tk.ID)
		require.NoError(t, err)
		for _, dl := range ds {
			require.NotEqual(t, bot.ID, dl.CardID, "the bot's card waits for the next Session")
		}

		// The requester writes: a new Session of the same Ticket.
		please := e.admit(t, 1, "alice", "Please continue.")
		require.Equal(t, tickets.CardFollowUp, please.State)
		e.run(t, tk.ID)

		ses, err = e.x.Sessions().Store().ForTicket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Len(t, ses, 2, "a new Session of the same Ticket")
		msgs, err := e.x.Sessions().Store().Messages(ctx, d, ses[1].ID, 0)
		require.NoError(t, err)
		require.Contains(t, msgs[0].Content, "@alice asked to continue ticket")
		require.Contains(t, msgs[0].Content, "stopped: max_steps")
		require.Contains(t, msgs[0].Content, "branch superagent/ticket-"+itoa(tk.ID))
		var second strings.Builder
		for _, m := range msgs {
			second.WriteString(m.Content + "\n")
		}
		require.Contains(t, second.String(), "Please continue.", "the message that continued it is in the new Session")
		require.Contains(t, second.String(), "Coverage report: 81%.", "and what waited")
		require.Equal(t, tickets.DeliveryDelivered, e.delivery(t, tk.ID, please.ID).State)
		prs := e.gh.PullRequests(repo)
		require.Len(t, prs, 1)
		require.Equal(t, "superagent/ticket-"+itoa(tk.ID), prs[0].Head, "the same branch")
		require.Contains(t, e.logs.String(), "a person's message continues a ticket stopped at a limit")
	})
}

// A person's pull request that says it fixes the Ticket's issue reaches
// the Executor with the facts; it reads theirs and decides to yield.
func TestAPersonsPullRequestFixingTheIssueIsToldToTheExecutor(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, afterPR(func(tn turn) fakeopenai.Reply {
			m := regexp.MustCompile(`host: pull request octo/hello#([0-9]+) by carol references #1`).FindStringSubmatch(tn.cards)
			switch {
			case m == nil:
				return fakeopenai.Text("Nothing to do.")
			case !tn.called("github_read"):
				return call("github_read", `{"what":"pull_request","number":`+m[1]+`}`)
			case !tn.called("pr_close"):
				return call("pr_close", `{"reason":"Carol's pull request makes the same fix, so I am closing this one in favour of it:","pointer":"octo/hello#`+m[1]+`"}`)
			}
			return fakeopenai.Text("Yielded.")
		}))
		ctx := context.Background()
		tk, mine := e.openPR(t)

		e.gh.PushAs(t, repo, "carol/typo", map[string]string{"README.md": strings.Replace(readme, "projetc", "project", 1)}, "Fix the typo")
		theirs := e.gh.AddPullRequest(t, repo, fakegithub.PullRequestSpec{Login: "carol", Head: "carol/typo", Title: "Fix the typo", Body: "Fixes #1."})
		// As ingestion makes it from pull_request.opened: in the pull
		// request's Thread, related to the issue it references.
		c := e.admitCard(t, tickets.NewCard{Source: tickets.SourceGitHub, Kind: "pr_opened", Thread: pullThread(theirs), Author: author("carol"),
			References: []tickets.Reference{{Repo: repo, Number: 1}}, Related: []string{pullThread(1).Key},
			Text: "Fix the typo\n\nFixes #1.", URL: fmt.Sprintf("https://github.com/%s/pull/%d", repo, theirs)})
		require.Equal(t, tickets.CardFollowUp, c.State)
		require.Equal(t, tk.ID, c.TicketID)
		e.run(t, tk.ID)

		require.Contains(t, e.modelInput(), fmt.Sprintf("host: pull request %s#%d by carol references #1, which this Ticket works on", repo, theirs))
		require.Equal(t, "closed", e.pull(t, mine).State, "the Executor decided to yield")
		require.Equal(t, "open", e.pull(t, theirs).State)
		got, err := e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketCancelled, got.State, "closing its pull request ended the Ticket")
		require.Contains(t, e.logs.String(), "msg=\"ticket ended\"")
	})
}
