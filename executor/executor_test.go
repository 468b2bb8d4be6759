package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/internal/testkit/metrictest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

var fakeToken = regexp.MustCompile(`ghs_fake[0-9_]+`)

// The typo fix becomes a draft pull request; the Ticket is in review, not
// done, until a person merges it; then it ends and its workspace goes.
func TestTypoFixBecomesADraftPullRequest(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
			if r := typoFixer(req); len(r.ToolCalls) == 1 && r.ToolCalls[0].Name == "report" && !called(steps(req), "report") {
				// It first says done without a word on the draft.
				return call("report", `{"state":"done","summary":"Fixed the README typo in a draft pull request; verified with ./test.sh, which passes."}`)
			}
			return typoFixer(req)
		})
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)
		ctx := context.Background()

		branch := "superagent/ticket-" + strconv.FormatInt(tk.ID, 10)
		log := gitLog(t, e.bare, branch)
		require.Contains(t, log, "superagent[bot] <", "commits as the App's bot account")
		require.Contains(t, log, "+superagent[bot]@users.noreply.github.com> Fix a typo in the README")
		require.Contains(t, gitShow(t, e.bare, branch+":README.md"), "This project says hello.")

		prs := e.gh.PullRequests(repo)
		require.Len(t, prs, 1)
		require.True(t, prs[0].Draft, "a pull request opens as a draft")
		require.Equal(t, branch, prs[0].Head)
		require.True(t, strings.HasPrefix(prs[0].Body, promptparts.DefaultAgentLine), "the description begins with the agent line")

		var confirm, result string
		for _, c := range e.gh.Comments() {
			switch {
			case strings.Contains(c.Body, "I will fix the misspelled word"):
				confirm = c.Body
			case strings.Contains(c.Body, "draft pull request"):
				result = c.Body
			}
		}
		require.True(t, strings.HasPrefix(confirm, promptparts.DefaultAgentLine+"\n\n"), "the confirmation carries the agent line: %q", confirm)
		require.True(t, strings.HasPrefix(result, promptparts.DefaultAgentLine+"\n\n"), "the result carries the agent line: %q", result)

		got, err := e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketInReview, got.State, "an open pull request is not the end of the work")
		require.Equal(t, prs[0].Number, got.PullNumber)
		reportCalls := e.modelCalls("report")
		require.Len(t, reportCalls, 2)
		require.Equal(t, fmt.Sprintf("refused: %s#%d is still a draft: mark it ready for review (pr_update ready) once it meets the Delivery requirements, "+
			"or report done with human_action saying what is left for a person", repo, got.PullNumber), reportCalls[0].result)
		require.True(t, strings.HasPrefix(reportCalls[1].result, fmt.Sprintf("reported done; the Ticket is in review while %s#%d is open", repo, got.PullNumber)),
			reportCalls[1].result)
		reports, err := e.store.Reports(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.ReportDone, reports[len(reports)-1].State)
		require.Contains(t, reports[len(reports)-1].HumanAction, "mark it ready")
		require.Contains(t, reports[len(reports)-1].Summary, "verified with ./test.sh")
		require.Regexp(t, `Usage: [0-9]+ tokens .* over [0-9]+ model requests in 1 Sessions; cost [0-9]+\.[0-9]{4}; the Ticket's budget: .+\.$`, reports[len(reports)-1].Summary,
			"the final report states the Ticket's token use and cost")
		// The cost is the Ticket's when it reported: in review, its Session
		// went on to end its turn.
		totals, err := e.x.Sessions().Store().TicketTotals(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Positive(t, totals.Usage.Cost)
		var reported float64
		_, err = fmt.Sscanf(reports[len(reports)-1].Summary[strings.LastIndex(reports[len(reports)-1].Summary, "cost ")+5:], "%f", &reported)
		require.NoError(t, err)
		require.Positive(t, reported)
		require.LessOrEqual(t, reported, totals.Usage.Cost)

		// The test ran in the sandbox and the model saw it pass.
		var ran bool
		for _, r := range e.model.Requests() {
			for _, s := range steps(r) {
				ran = ran || (s.name == "run_command" && strings.HasPrefix(s.result, "exit code 0") && strings.Contains(s.result, "ok"))
			}
		}
		require.True(t, ran)

		// The token was used (git over HTTPS needs it) yet appears nowhere.
		require.Positive(t, e.gh.TokensIssued())
		var seen []string
		for _, r := range e.gh.Requests() {
			if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "token "); ok {
				seen = append(seen, tok)
			}
		}
		require.NotEmpty(t, seen)
		transcript := e.transcript(t)
		for _, r := range e.model.Requests() {
			transcript += r.Text() + r.System()
		}
		require.Empty(t, fakeToken.FindAllString(transcript, -1), "no installation token in the transcript or the model's input")
		require.Empty(t, fakeToken.FindAllString(e.logs.String(), -1), "no installation token in the logs")
		require.NotContains(t, transcript, modelKey)

		require.Equal(t, 1.0, metrictest.Value(t, e.reg, "superagent_executor_tool_calls_total", "tool", "pr_open", "result", "ok"))
		require.Equal(t, 2.0, metrictest.Value(t, e.reg, "superagent_executor_tool_calls_total", "tool", "reply", "result", "ok"))

		// The AGENTS.md of the repository was part of the prompt.
		require.Contains(t, e.model.Last().System(), "Run ./test.sh before committing.")

		// In review, the workspace stays and the pull request's cards reach
		// the Ticket.
		ws := filepath.Join(e.dataDir, "workspaces", "ticket-"+strconv.FormatInt(tk.ID, 10))
		require.DirExists(t, ws)
		require.Equal(t, 1, strings.Count(e.logs.String(), "msg=\"ticket in review\""), e.logs.String())
		c := e.admit(t, got.PullNumber, "carol", "Looks good to me.")
		require.Equal(t, tickets.CardFollowUp, c.State)
		require.Equal(t, tk.ID, c.TicketID)

		// A person marks it ready and merges it: the Ticket is done, with a
		// short final Report, and the next job removes the workspace.
		e.gh.ReadyForReview(t, repo, got.PullNumber)
		e.gh.MergeAs(t, repo, got.PullNumber)
		merged := e.pullEnded(t, got.PullNumber, true, "carol")
		got, err = e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketDone, got.State)
		reports, err = e.store.Reports(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("Pull request %s#%d was merged by carol; the Ticket is done.", repo, got.PullNumber), reports[len(reports)-1].Summary)
		e.run(t, tk.ID)
		_, err = os.Stat(ws)
		require.True(t, os.IsNotExist(err), "workspace removed: %v", err)
		require.Equal(t, tickets.DeliveryWithheld, e.delivery(t, tk.ID, merged.ID).State, "the merge ended the work; nothing was left to read")
	})
}

func TestPushAndPullRequestWaitForTheConfirmation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
			ss := steps(req)
			switch {
			case len(ss) == 0:
				return call("git_push", `{}`)
			case len(ss) == 1:
				return call("pr_open", `{"title":"x","body":"y"}`)
			case len(ss) == 2:
				return call("reply", `{"purpose":"confirm","in_reply_to":`+firstCard(req)+`,"text":"ok"}`)
			}
			return fakeopenai.Text("stopping")
		})
		tk, _ := e.request(t, "@superagent please fix the typo")
		e.run(t, tk.ID)
		ss := steps(e.model.Last())
		require.Len(t, ss, 3)
		require.Contains(t, ss[0].result, "refused: confirm the request first")
		require.Contains(t, ss[1].result, "refused: confirm the request first")
		require.Contains(t, ss[2].result, "refused: a confirmation names the object")
		require.Equal(t, 1.0, metrictest.Value(t, e.reg, "superagent_executor_tool_calls_total", "tool", "git_push", "result", "refused"))
		require.Equal(t, 1.0, metrictest.Value(t, e.reg, "superagent_executor_tool_calls_total", "tool", "reply", "result", "refused"))
		require.Empty(t, e.gh.PullRequests(repo))
		_, ok := e.gh.Branch(t, repo, "superagent/ticket-"+strconv.FormatInt(tk.ID, 10))
		require.False(t, ok, "nothing was pushed")
	})
}

// An Executor's installation tokens are narrowed to its Ticket's
// repository and to what its tools need, within what the installation was
// granted: its git pushes and API calls cannot reach the installation's
// other repositories.
func TestExecutorTokensNameOnlyTheTicketsRepository(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, typoFixer)
		// This installation's owner has not accepted Actions' logs yet.
		e.gh.SetGranted(map[string]string{"contents": "write", "issues": "write", "pull_requests": "write", "checks": "write", "metadata": "read"})
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)
		got, err := e.store.Ticket(context.Background(), d, tk.ID)
		require.NoError(t, err)
		require.NotZero(t, got.PullNumber, "the work was done with narrowed tokens")

		scopes := e.gh.TokenScopes()
		require.NotEmpty(t, scopes)
		for _, s := range scopes {
			require.Equal(t, []string{"hello"}, s, "every token names only the Ticket's repository")
		}
		for _, r := range e.gh.Requests() {
			if r.Method != http.MethodPost || !strings.HasSuffix(r.Path, "/access_tokens") {
				continue
			}
			var body struct {
				Permissions map[string]string `json:"permissions"`
			}
			require.NoError(t, json.Unmarshal(r.Body, &body))
			require.Equal(t, map[string]string{"contents": "write", "issues": "write", "pull_requests": "write", "checks": "write", "metadata": "read"},
				body.Permissions, "what the tools need, within what was granted")
		}
	})
}
