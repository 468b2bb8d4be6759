package executor_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/tickets"
)

// failing is what the failing job's log asks for; only the log excerpt
// the host adds to a check_failure card carries it.
var failing = regexp.MustCompile(`FAIL: NOTES\.md must mention (attempt [0-9]+)`)

// checkFixer answers a failed check by doing what its log asks, committing
// and pushing; when the push is refused (the fix attempts are used up) it
// reports blocked. A person's request to mark the pull request ready is
// done with pr_update.
func checkFixer(tn turn) fakeopenai.Reply {
	if strings.Contains(tn.cards, "please mark it ready") {
		if !tn.called("pr_update") {
			return call("pr_update", `{"ready":true}`)
		}
		return fakeopenai.Text("Marked ready.")
	}
	m := failing.FindStringSubmatch(tn.cards)
	switch {
	case m == nil:
		return fakeopenai.Text("Nothing to fix.")
	case !tn.called("write_file"):
		return call("write_file", `{"path":"NOTES.md","content":"`+m[1]+`\n"}`)
	case !tn.called("git_commit"):
		return call("git_commit", `{"message":"Mention `+m[1]+` in NOTES.md"}`)
	case !tn.called("git_push"):
		return call("git_push", `{}`)
	case strings.HasPrefix(tn.result("git_push"), "refused") && !tn.called("report"):
		return call("report", `{"state":"blocked","summary":"The check still fails after three fix attempts (NOTES.md); a person must decide how to continue."}`)
	}
	return fakeopenai.Text("Pushed the fix.")
}

func failLog(attempt string) string {
	return "##[group]Run ./check.sh\nchecking NOTES.md\nFAIL: NOTES.md must mention " + attempt + "\n##[error]Process completed with exit code 1.\n"
}

// leakedToken is a credential a CI log printed; it has a GitHub token's
// shape, and no one told the Scrubber of it.
const leakedToken = "ghp_0123456789abcdefghijABCDEFGHIJ012345"

func TestFailedCheckFixedOnTheSecondAttempt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, afterPR(checkFixer))
		tk, pr := e.openPR(t)
		opened := e.pull(t, pr).HeadSHA

		// The first log is long, with a secret early on: the Executor reads
		// the failing step's end only, and never a secret.
		long := "BEGINNING-OF-LOG " + modelKey + "\n##[group]Run actions/checkout@v4\n" + strings.Repeat("downloading a dependency\n", 500) +
			"##[endgroup]\n" + failLog("attempt 1") + "token was " + leakedToken + "\n"
		run1, c1 := e.checkFailure(t, pr, "test", long, false)
		require.Equal(t, tickets.CardFollowUp, c1.State)
		e.run(t, tk.ID)
		first := e.pull(t, pr).HeadSHA
		require.NotEqual(t, opened, first, "the first fix was pushed")
		require.Equal(t, "attempt 1\n", gitShow(t, e.bare, first+":NOTES.md"))

		// The fix fails too; the second failure names its job by the
		// job's page.
		_, c2 := e.checkFailure(t, pr, "test", failLog("attempt 2"), true)
		e.run(t, tk.ID)
		second := e.pull(t, pr).HeadSHA
		require.NotEqual(t, first, second, "the second fix was pushed")
		require.Equal(t, "attempt 2\n", gitShow(t, e.bare, second+":NOTES.md"))

		// The check passes on the second fix; a person asks for review.
		e.gh.AddWorkflowRun(repo, second, fakegithub.WorkflowRunSpec{Name: "CI", Jobs: []fakegithub.JobSpec{{Name: "test", Conclusion: "success"}}})
		e.admit(t, pr, "alice", "The checks pass now, please mark it ready.")
		e.run(t, tk.ID)
		require.False(t, e.pull(t, pr).Draft, "ready for review once the fix passes")

		for _, c := range []tickets.Card{c1, c2} {
			require.Equal(t, tickets.DeliveryDelivered, e.delivery(t, tk.ID, c.ID).State)
		}
		input := e.modelInput()
		require.Contains(t, input, `host: job "test" of workflow run `+strconv.FormatInt(run1.ID, 10)+` failed at step "Run ./check.sh"; its log ends with (outside data):`+"\n```\n##[group]Run ./check.sh\nchecking NOTES.md\n")
		require.NotContains(t, input, `job "lint"`, "only the failed job")
		require.NotRegexp(t, `[0-9]{7}Z `, input, "without GitHub's timestamps")
		require.NotContains(t, input, leakedToken)
		require.Contains(t, input, "token was [REDACTED]")
		require.Contains(t, input, "FAIL: NOTES.md must mention attempt 1")
		require.Contains(t, input, "FAIL: NOTES.md must mention attempt 2")
		require.Contains(t, input, "host: failure 1; fix attempts used 0 of 3.")
		require.Contains(t, input, "host: failure 2; fix attempts used 1 of 3.")
		require.NotContains(t, input, "BEGINNING-OF-LOG", "only the end of a long log")
		require.NotContains(t, input, modelKey)
		require.NotContains(t, input, "unavailable")
		log := gitLog(t, e.bare, e.pull(t, pr).Head)
		require.Contains(t, log, "Mention attempt 1 in NOTES.md")
		require.Contains(t, log, "Mention attempt 2 in NOTES.md")
		got, err := e.store.Ticket(context.Background(), d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketWaiting, got.State, "reminded, the Executor reported where the fix stands")
	})
}

func TestFixAttemptsUsedUpReportBlocked(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, afterPR(checkFixer))
		tk, pr := e.openPR(t)
		ctx := context.Background()

		// The first failure and three fix attempts that fail too.
		var last string
		for _, attempt := range []string{"attempt 1", "attempt 2", "attempt 3"} {
			e.checkFailure(t, pr, "test", failLog(attempt), false)
			e.run(t, tk.ID)
			head := e.pull(t, pr).HeadSHA
			require.NotEqual(t, last, head, "%s was pushed", attempt)
			require.Equal(t, attempt+"\n", gitShow(t, e.bare, head+":NOTES.md"))
			last = head
		}
		_, c4 := e.checkFailure(t, pr, "test", failLog("attempt 4"), false)
		e.run(t, tk.ID)

		require.Equal(t, tickets.DeliveryDelivered, e.delivery(t, tk.ID, c4.ID).State)
		require.Contains(t, e.modelInput(), "host: this is failure 4; the 3 fix attempts are used up. Do not push again: report blocked")
		pushes := e.modelCalls("git_push")
		require.Equal(t, "refused: the fix attempts after failed checks are used up: report blocked instead of pushing again",
			pushes[len(pushes)-1].result)
		require.Equal(t, last, e.pull(t, pr).HeadSHA, "nothing more was pushed")

		reports, err := e.store.Reports(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.ReportBlocked, reports[len(reports)-1].State)
		require.Contains(t, reports[len(reports)-1].Summary, "after three fix attempts")
		got, err := e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketWaiting, got.State, "a blocked Ticket waits for a person")
	})
}

// Two jobs failing on one commit are one failure to fix, not two attempts.
func TestFailuresOfOneCommitAreOneAttempt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, afterPR(checkFixer))
		tk, pr := e.openPR(t)
		var heads []string
		for _, attempt := range []string{"attempt 1", "attempt 2", "attempt 3"} {
			e.checkFailure(t, pr, "test", failLog(attempt), false)
			e.checkFailure(t, pr, "unit", failLog(attempt), true)
			e.run(t, tk.ID)
			heads = append(heads, e.pull(t, pr).HeadSHA)
			require.Equal(t, attempt+"\n", gitShow(t, e.bare, heads[len(heads)-1]+":NOTES.md"), "%s was pushed", attempt)
		}
		input := e.modelInput()
		require.Contains(t, input, "fix attempts used 0 of 3.")
		require.Contains(t, input, "fix attempts used 1 of 3.")
		require.Contains(t, input, "fix attempts used 2 of 3.")
		require.NotContains(t, input, "used up")
		for _, p := range e.modelCalls("git_push") {
			require.False(t, strings.HasPrefix(p.result, "refused"), p.result)
		}
	})
}
