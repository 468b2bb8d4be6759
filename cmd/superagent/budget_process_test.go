package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// spendThenReport plays an Executor whose every answer costs 3,100
// tokens: it confirms and then looks at the workspace until the Ticket's
// budget stops it; the Session a person's continue starts reports done.
func spendThenReport(req fakeopenai.Request) fakeopenai.Reply {
	card := "0"
	confirmed := false
	for _, m := range req.Messages {
		if m.Role == "user" && card == "0" {
			if c := candidateCard.FindStringSubmatch(m.Content); c != nil {
				card = c[1]
			}
		}
		if m.Role == "tool" && strings.HasPrefix(m.Content, "sent") {
			confirmed = true
		}
	}
	call := func(name, args string) fakeopenai.Reply {
		return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("", name, args)}, Usage: fakeopenai.UsageOpenAI(3000, 0, 100)}
	}
	switch {
	case strings.Contains(req.Text(), "asked to continue"):
		if strings.Contains(req.LastMessage().Content, "reported done") {
			return fakeopenai.Text("Done.")
		}
		return call("report", `{"state":"done","summary":"Looked the workspace over again and found nothing left to change in it."}`)
	case !confirmed:
		return call("reply", `{"purpose":"confirm","in_reply_to":`+card+`,"text":"I will look at the README and fix what is wrong in it."}`)
	}
	return call("git_status", `{}`)
}

// TestBudgetStopsATicketAndContinueRaisesIt: through the binary, a Ticket
// whose Sessions spend the token budget stops and reports blocked with a
// sentence saying the budget is spent and how to raise it; the
// requester's "@superagent continue budget 50k tokens" gives it 50,000
// more than it spent, in a new Session that finishes the work.
func TestBudgetStopsATicketAndContinueRaisesIt(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		gh.AddRepo(t, helloRepo, "main", map[string]string{"README.md": "# Hello World\n"})
		gh.SetPermission(helloRepo, "Codertocat", "write")
		model := scriptedModel(t, spendThenReport)
		const secret, token = "budget-webhook-secret", "budget-admin-token-0123456789"
		p, store := serveFor(t, dbURL, gh, model, secret, token, map[string]string{
			"SUPERAGENT_TICKET_TOKEN_BUDGET": "10000", "SUPERAGENT_EXECUTOR_REPEAT_LIMIT": "1000"})
		deliverGitHub(t, p, secret, "issue_comment", "budget-request", commentPayload(t, "@superagent please fix the README"))

		waitFor(t, 3*time.Minute, "the Session to stop at the budget", func() bool {
			return strings.Contains(p.stderr.String(), `"why":"token_budget"`)
		})
		waitFor(t, time.Minute, "the requester to hear of it", func() bool {
			for _, c := range gh.Comments() {
				if strings.Contains(c.Body, "its budget of 10,000 tokens is spent") && strings.Contains(c.Body, `"continue budget 20M tokens"`) {
					return true
				}
			}
			return false
		})
		var state string
		require.NoError(t, store.QueryRow(t.Context(), `SELECT state FROM tickets WHERE id = 1`).Scan(&state))
		require.Equal(t, "waiting", state, "blocked, waiting for a person")

		c := readFixture(t, "issue_comment.created.json")
		c["installation"] = map[string]any{"id": 957387, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTU3Mzg3"}
		c["comment"].(map[string]any)["body"] = "@superagent continue budget 50k tokens"
		c["comment"].(map[string]any)["id"] = 434343
		deliverGitHub(t, p, secret, "issue_comment", "budget-continue", marshal(t, c))
		waitFor(t, 3*time.Minute, "the continued Ticket to be done", func() bool {
			_ = store.QueryRow(t.Context(), `SELECT state FROM tickets WHERE id = 1`).Scan(&state)
			return state == "done"
		})

		var budget, raise, spentBefore int64
		require.NoError(t, store.QueryRow(t.Context(), `SELECT tokens, raise_tokens FROM ticket_budgets WHERE ticket_id = 1`).Scan(&budget, &raise))
		require.Zero(t, raise, "the raise was taken by the new Session")
		require.NoError(t, store.QueryRow(t.Context(), `SELECT CAST(SUM(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens) AS BIGINT)
FROM sessions WHERE ticket_id = 1 AND id = (SELECT MIN(id) FROM sessions WHERE ticket_id = 1)`).Scan(&spentBefore))
		require.Equal(t, spentBefore+50_000, budget, "50,000 more than was spent when it continued")
		var handoff string
		for _, r := range model.Requests() {
			if r.Model != "router-model" && strings.Contains(r.Text(), "asked to continue") {
				handoff = r.Text()
				break
			}
		}
		require.Contains(t, handoff, "The Ticket's budget is now ")
		waitFor(t, time.Minute, "the continue to be confirmed", func() bool {
			for _, c := range gh.Comments() {
				if strings.Contains(c.Body, "with 50,000 tokens more to spend") {
					return true
				}
			}
			return false
		})
		page := panelPage(t, "http://"+p.addr, token, "/admin/tickets/1")
		require.Contains(t, page, "given by @Codertocat")
	})
}
