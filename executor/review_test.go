package executor_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// fixAndResolve answers a review comment by fixing what it asks, verifying,
// pushing and resolving its thread, without a reply.
func fixAndResolve(tn turn, comment string) fakeopenai.Reply {
	switch {
	case !tn.called("edit_file"):
		return call("edit_file", `{"path":"README.md","old_text":"This project says hello.","new_text":"This project says hello to the world."}`)
	case !tn.called("run_command"):
		return call("run_command", `{"command":"sh test.sh","timeout_seconds":30}`)
	case !tn.called("git_commit"):
		return call("git_commit", `{"message":"Say whom the README greets"}`)
	case !tn.called("git_push"):
		return call("git_push", `{}`)
	case !tn.called("github_read"):
		return call("github_read", `{"what":"review_threads"}`)
	case !tn.called("review_resolve"):
		return call("review_resolve", `{"thread":"`+threadOf(tn.result("github_read"), comment)+`"}`)
	}
	return fakeopenai.Text("Fixed, verified and resolved.")
}

func TestReviewCommentFixedIsResolvedWithoutAReply(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, afterPR(func(tn turn) fakeopenai.Reply {
			if m := discussion.FindStringSubmatch(tn.cards); m != nil {
				return fixAndResolve(tn, m[1])
			}
			return fakeopenai.Text("Nothing to do.")
		}))
		tk, pr := e.openPR(t)
		before, _ := e.gh.Branch(t, repo, e.pull(t, pr).Head)

		id, threadID, c := e.reviewComment(t, pr, fakegithub.ReviewCommentSpec{Login: "bob", Body: "Say whom the project greets."})
		require.Equal(t, tickets.CardFollowUp, c.State, "a review thread of the Ticket's pull request follows it")
		require.Equal(t, tk.ID, c.TicketID)
		e.run(t, tk.ID)

		require.Contains(t, e.modelInput(), "Say whom the project greets.", "the review comment reached the Executor")
		require.Equal(t, tickets.DeliveryDelivered, e.delivery(t, tk.ID, c.ID).State)

		threads := e.gh.ReviewThreads(repo, pr)
		require.Len(t, threads, 1)
		require.Equal(t, threadID, threads[0].ID)
		require.True(t, threads[0].Resolved, "the fixed comment's thread is resolved")
		require.Len(t, threads[0].Comments, 1, "no reply was posted")
		require.Equal(t, id, threads[0].Comments[0].ID)
		require.Empty(t, e.modelCalls("review_reply"))
		for _, cm := range e.gh.Comments() {
			require.NotEqual(t, pr, cm.Number, "nor a comment on the pull request: %s", cm.Body)
		}

		head := e.pull(t, pr).HeadSHA
		require.NotEqual(t, before, head, "the fix was pushed to the pull request's branch")
		require.Contains(t, gitShow(t, e.bare, head+":README.md"), "This project says hello to the world.")
		require.Contains(t, gitLog(t, e.bare, e.pull(t, pr).Head), "Say whom the README greets")
		for _, s := range e.modelCalls("run_command") {
			require.True(t, strings.HasPrefix(s.result, "exit code 0"), "verified before pushing: %s", s.result)
		}
	})
}

func TestDeclinedReviewCommentGetsOneSentence(t *testing.T) {
	t.Parallel()
	const (
		twoSentences = "The README stays in English. Its readers read English."
		oneSentence  = "The README stays in English because everyone who reads it works in English."
	)
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, afterPR(func(tn turn) fakeopenai.Reply {
			m := discussion.FindStringSubmatch(tn.cards)
			if m == nil {
				return fakeopenai.Text("Nothing to do.")
			}
			tries := 0
			for _, s := range tn.steps {
				if s.name == "review_reply" {
					tries++
				}
			}
			switch tries {
			case 0:
				return call("review_reply", `{"comment":`+m[1]+`,"purpose":"decline","text":"`+twoSentences+`"}`)
			case 1:
				return call("review_reply", `{"comment":`+m[1]+`,"purpose":"decline","text":"`+oneSentence+`"}`)
			}
			return fakeopenai.Text("Declined.")
		}))
		tk, pr := e.openPR(t)
		before := e.pull(t, pr).HeadSHA
		id, _, _ := e.reviewComment(t, pr, fakegithub.ReviewCommentSpec{Login: "bob", Body: "Rewrite the README in French."})
		e.run(t, tk.ID)

		replies := e.modelCalls("review_reply")
		require.Len(t, replies, 2)
		require.Equal(t, "refused: a decline is one sentence of reason", replies[0].result)
		require.True(t, strings.HasPrefix(replies[1].result, "replied: "), replies[1].result)

		threads := e.gh.ReviewThreads(repo, pr)
		require.Len(t, threads, 1)
		require.Len(t, threads[0].Comments, 2, "one reply, the one-sentence decline")
		reply := threads[0].Comments[1]
		require.Equal(t, "superagent[bot]", reply.Login)
		require.True(t, strings.HasPrefix(reply.Body, promptparts.DefaultAgentLine+"\n\n"+oneSentence), reply.Body)
		require.NotContains(t, reply.Body, twoSentences)
		require.False(t, threads[0].Resolved, "a person's declined comment stays open for them")
		require.Equal(t, id, threads[0].Comments[0].ID)
		require.Equal(t, before, e.pull(t, pr).HeadSHA, "a declined comment changes nothing")
	})
}

func TestAutomatedReviewerGetsThreeRounds(t *testing.T) {
	t.Parallel()
	const bot = "lint-bot[bot]"
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, afterPR(func(tn turn) fakeopenai.Reply {
			m := discussion.FindStringSubmatch(tn.cards)
			switch {
			case m == nil:
				return fakeopenai.Text("Nothing to change.")
			case !tn.called("review_reply"):
				return call("review_reply", `{"comment":`+m[1]+`,"purpose":"answer","text":"Line 3 has no trailing whitespace; git diff --check is clean."}`)
			case !tn.called("github_read"):
				return call("github_read", `{"what":"review_threads"}`)
			case !tn.called("review_resolve"):
				return call("review_resolve", `{"thread":"`+threadOf(tn.result("github_read"), m[1])+`"}`)
			}
			return fakeopenai.Text("Answered the bot and resolved its thread.")
		}))
		tk, pr := e.openPR(t)

		// Round 1: a review with a comment, answered and resolved.
		rv, r1 := e.review(t, pr, bot, "COMMENTED", "Round 1: style findings.")
		_, _, c1 := e.reviewComment(t, pr, fakegithub.ReviewCommentSpec{Login: bot, Body: "Trailing whitespace on line 3.", ReviewID: rv})
		e.run(t, tk.ID)
		threads := e.gh.ReviewThreads(repo, pr)
		require.Len(t, threads, 1)
		require.True(t, threads[0].Resolved, "an automated reviewer's thread is resolved once answered")
		require.Len(t, threads[0].Comments, 2)
		require.Contains(t, threads[0].Comments[1].Body, "git diff --check is clean")
		require.Contains(t, e.modelInput(), "host: lint-bot[bot] is an automated reviewer (round 1 of at most 3)")

		// Rounds 2 and 3 are delivered.
		_, r2 := e.review(t, pr, bot, "COMMENTED", "Round 2: nothing new.")
		e.run(t, tk.ID)
		_, r3 := e.review(t, pr, bot, "COMMENTED", "Round 3: nothing new.")
		e.run(t, tk.ID)
		require.Contains(t, e.modelInput(), "host: lint-bot[bot] is an automated reviewer (round 3 of at most 3)")
		for _, c := range []tickets.Card{r1, c1, r2, r3} {
			require.Equal(t, tickets.DeliveryDelivered, e.delivery(t, tk.ID, c.ID).State, "card %d", c.ID)
		}

		// Round 4 and its comment are recorded, not delivered.
		requests := len(e.model.Requests())
		rv4, r4 := e.review(t, pr, bot, "CHANGES_REQUESTED", "Round 4: ROUND-FOUR-FINDINGS.")
		_, _, c4 := e.reviewComment(t, pr, fakegithub.ReviewCommentSpec{Login: bot, Body: "ROUND-FOUR-COMMENT on line 3.", ReviewID: rv4})
		e.run(t, tk.ID)
		for _, c := range []tickets.Card{r4, c4} {
			dl := e.delivery(t, tk.ID, c.ID)
			require.Equal(t, tickets.DeliveryWithheld, dl.State, "card %d", c.ID)
			require.Contains(t, dl.Reason, "round 4 of automated reviewer lint-bot[bot]; the limit is 3 per pull request")
		}
		require.Len(t, e.model.Requests(), requests, "nothing new reached the model")
		input := e.modelInput()
		require.NotContains(t, input, "ROUND-FOUR")
		require.NotContains(t, input, "card "+strconv.FormatInt(r4.ID, 10)+" ·")
		require.Len(t, e.gh.ReviewThreads(repo, pr)[1].Comments, 1, "the withheld comment got no answer")
	})
}

// The team's Communication list makes a person-like login an automated
// reviewer too.
func TestTeamReviewBotsAreAutomatedReviewers(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, afterPR(func(turn) fakeopenai.Reply { return fakeopenai.Text("Noted.") }))
		saveSettings(t, e, `{"communication": {"review_bots": ["Style-Checker"]}}`)
		tk, pr := e.openPR(t)
		var cards []tickets.Card
		for i := 1; i <= 4; i++ {
			_, c := e.review(t, pr, "style-checker", "COMMENTED", "Pass "+strconv.Itoa(i)+".")
			cards = append(cards, c)
		}
		// A person's reviews are never limited.
		_, human := e.review(t, pr, "bob", "COMMENTED", "Looks fine.")
		e.run(t, tk.ID)
		for _, c := range cards[:3] {
			require.Equal(t, tickets.DeliveryDelivered, e.delivery(t, tk.ID, c.ID).State)
		}
		require.Equal(t, tickets.DeliveryWithheld, e.delivery(t, tk.ID, cards[3].ID).State)
		require.Equal(t, tickets.DeliveryDelivered, e.delivery(t, tk.ID, human.ID).State)
		require.Contains(t, e.modelInput(), "host: style-checker is an automated reviewer (round 3 of at most 3)")
		require.NotContains(t, e.modelInput(), "host: bob is an automated reviewer")
	})
}
