package session_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/secret"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/session"
)

func TestRolloverThroughHandoff(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(e *env) {
			e.cfg.ContextWindow = 10_000
			e.cfg.RolloverAt = 0.5
		},
			fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("c1", "grep", `{}`)}, Usage: fakeopenai.UsageOpenAI(4_900, 0, 50)},
			fakeopenai.Reply{Content: "HANDOFF: goal X; grep found 3 hits; next: fix them.", Usage: fakeopenai.UsageOpenAI(5_100, 4_900, 40)},
			fakeopenai.Reply{Content: "fixed all 3", Usage: fakeopenai.UsageOpenAI(300, 0, 10)},
		)
		tools := registry(t, tool("grep", true, func(context.Context, session.Call) (string, error) {
			return strings.Repeat("match\n", 200), nil
		}))
		s := e.create(t, session.RoleExecutor, 5, "fix the hits")
		out, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{
			Handoff: func(context.Context, *session.Session) (string, error) {
				return "Write your handoff (runtime/handoff/worker).", nil
			},
		})
		require.NoError(t, err)
		require.NotEqual(t, s.ID, out.SessionID)
		require.Equal(t, []int64{s.ID}, out.RolledOver)
		require.Equal(t, session.StateDone, out.State)
		require.Equal(t, "fixed all 3", out.Final)
		require.Equal(t, 3, out.Steps)

		reqs := e.srv.Requests()
		require.Len(t, reqs, 3)
		handoff := reqs[1]
		require.Equal(t, "none", handoff.ToolChoice, "the handoff is text only")
		require.Equal(t, "Write your handoff (runtime/handoff/worker).", handoff.LastMessage().Content)
		require.Equal(t, []string{"system", "user"}, roles(reqs[2]), "the successor starts from the handoff alone")
		require.Contains(t, reqs[2].Messages[1].Content, "HANDOFF: goal X")

		old := e.get(t, s.ID)
		require.Equal(t, session.StateRolledOver, old.State)
		require.Equal(t, session.ReasonRollover, old.StateReason)
		next := e.get(t, out.SessionID)
		require.Equal(t, s.ID, next.PredecessorID)
		require.EqualValues(t, 5, next.TicketID)
		require.Equal(t, session.RoleExecutor, next.Role)
		purposes := []string{}
		for _, r := range e.requests(t, s.ID) {
			purposes = append(purposes, r.Purpose)
		}
		require.Equal(t, []string{"step", "handoff"}, purposes)

		// Callers holding the old id reach the successor.
		got, err := e.rt.Append(t.Context(), d, s.ID, "one more")
		require.NoError(t, err)
		require.Equal(t, out.SessionID, got)
		e.srv.Push(fakeopenai.Text("handled"))
		out2, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, out.SessionID, out2.SessionID)
		require.Equal(t, "handled", out2.Final)

		totals, err := e.rt.Store().TicketTotals(t.Context(), d, 5)
		require.NoError(t, err)
		require.EqualValues(t, 2, totals.Sessions)
		require.EqualValues(t, 4, totals.Requests)
	})
}

// budgetReplies are two Sessions of one Ticket: the first uses 700 tokens,
// the second crosses a budget of 1,000 with its first step (320), is asked
// to wrap up, and reports (420).
func budgetReplies() []fakeopenai.Reply {
	return []fakeopenai.Reply{
		{Content: "first pass done", Usage: fakeopenai.UsageOpenAI(650, 0, 50)},
		{ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("c1", "run_command", `{}`)}, Usage: fakeopenai.UsageOpenAI(300, 0, 20)},
		{ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("c2", "report", `{"state":"blocked"}`)}, Usage: fakeopenai.UsageOpenAI(400, 0, 20)},
	}
}

// budgetTools runs commands and collects reports.
func budgetTools(t *testing.T, reports *[]string) *session.Registry {
	return registry(t,
		tool("run_command", false, func(context.Context, session.Call) (string, error) { return "ok", nil }),
		tool("report", false, func(_ context.Context, c session.Call) (string, error) {
			*reports = append(*reports, string(c.Arguments))
			return "reported", nil
		}),
	)
}

func TestBudgetStop(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(e *env) { e.cfg.TokenBudget = 1_000 }, budgetReplies()...)
		var reports []string
		tools := budgetTools(t, &reports)
		first := e.create(t, session.RoleExecutor, 9, "part one")
		_, err := e.rt.Run(t.Context(), first.ID, tools, session.RunOptions{})
		require.NoError(t, err)

		s := e.create(t, session.RoleExecutor, 9, "part two")
		out, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.StateStopped, out.State)
		require.Equal(t, session.ReasonTokenBudget, out.Reason)
		require.Equal(t, []string{`{"state":"blocked"}`}, reports)
		require.Len(t, e.srv.Requests(), 3, "no request after the wrap-up")
		require.Contains(t, e.srv.Last().LastMessage().Content, "token_budget limit")
		require.Equal(t, 0, e.srv.Pending())

		reqs := e.requests(t, s.ID)
		require.Equal(t, "wrap_up", reqs[1].Purpose)
		got := e.get(t, s.ID)
		require.Equal(t, session.StateStopped, got.State)
		require.Equal(t, session.ReasonTokenBudget, got.StateReason)
		totals, err := e.rt.Store().TicketTotals(t.Context(), d, 9)
		require.NoError(t, err)
		require.EqualValues(t, 700+320+420, totals.Usage.Total())

		// Running it again does nothing more.
		out, err = e.runtime(t).Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.StateStopped, out.State)
		require.Len(t, e.srv.Requests(), 3)
	})
}

// The cost cap stops a Ticket the way the token budget does: the
// Session that crosses it is asked to wrap up, reports and gets no further
// turn; the cap counts every Session of the Ticket.
func TestCostBudgetStop(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(e *env) {
			// 1,000 a million tokens: a request of 700 tokens costs 0.70.
			e.mcfg.Prices = map[string]model.Price{"fake-model": {Input: 1000, Output: 1000}}
			e.cfg.CostBudget = 1.00
		}, budgetReplies()...)
		var reports []string
		tools := budgetTools(t, &reports)
		first := e.create(t, session.RoleExecutor, 9, "part one")
		out, err := e.rt.Run(t.Context(), first.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.ReasonEndTurn, out.Reason, "0.70 is under the cap")

		s := e.create(t, session.RoleExecutor, 9, "part two")
		out, err = e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.StateStopped, out.State)
		require.Equal(t, session.ReasonCostBudget, out.Reason)
		require.Equal(t, []string{`{"state":"blocked"}`}, reports, "the wrap-up asked for a report and got one")
		require.Len(t, e.srv.Requests(), 3, "no request after the wrap-up")
		require.Contains(t, e.srv.Last().LastMessage().Content, "cost_budget limit")
		reqs := e.requests(t, s.ID)
		require.Equal(t, []string{"step", "wrap_up"}, []string{reqs[0].Purpose, reqs[1].Purpose})
		totals, err := e.rt.Store().TicketTotals(t.Context(), d, 9)
		require.NoError(t, err)
		require.InDelta(t, 0.70+0.32+0.42, totals.Usage.Cost, 1e-9)
	})
}

func TestMaxSteps(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(e *env) { e.cfg.MaxSteps = 2 })
		e.srv.Fallback(fakeopenai.Calls(fakeopenai.Call("", "noop", `{}`)))
		tools := registry(t, tool("noop", true, func(context.Context, session.Call) (string, error) { return "ok", nil }))
		s := e.create(t, session.RoleMain, 0, "loop forever")
		out, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.ReasonMaxSteps, out.Reason)
		require.Equal(t, 3, out.Steps, "two steps and the wrap-up")
	})
}

func TestSecretsNeverReachStoreOrModel(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		minted := "ghs_MintedDuringTheRun0123456789abcd"
		e := setup(t, d, nil,
			fakeopenai.Calls(fakeopenai.Call("c1", "run_command", `{"command":"git remote -v && env"}`)),
			fakeopenai.Calls(fakeopenai.Call("c2", "run_command", `{"command":"git push"}`)),
			fakeopenai.Text("pushed"),
		)
		n := 0
		tools := registry(t, tool("run_command", false, func(context.Context, session.Call) (string, error) {
			n++
			if n == 1 {
				return "origin https://x-access-token:" + ghToken + "@github.com/acme/app.git (fetch)\n" +
					"OPENAI_API_KEY=" + apiKey + "\n" +
					"AUTH=" + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+ghToken)) + "\n" +
					"URL=" + url.QueryEscape(apiKey+"/"), nil
			}
			// A token minted mid-run is registered before it can leak.
			e.scrub.Add(minted)
			return "", errors.New("push failed for https://x-access-token:" + minted + "@github.com")
		}))
		s := e.create(t, session.RoleExecutor, 2, "push with token "+ghToken)
		_, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)

		stored := dump(t, d)
		var sent strings.Builder
		for _, r := range e.srv.Requests() {
			sent.WriteString(r.Text())
		}
		for _, where := range []string{stored, sent.String()} {
			for _, secretValue := range []string{ghToken, apiKey, minted, url.QueryEscape(apiKey + "/")} {
				require.NotContains(t, where, secretValue)
			}
			require.NotContains(t, where, base64.StdEncoding.EncodeToString([]byte("x-access-token:" + ghToken))[:24])
			require.Contains(t, where, secret.Redacted)
		}
		require.Contains(t, sent.String(), "error: push failed for https://x-access-token:[REDACTED]@github.com")
	})
}

func TestReasoningReplayDeepSeekLike(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(e *env) { e.mcfg.ReasoningReplay = model.ReplayAlways },
			fakeopenai.Reply{Reasoning: "The user wants the tests run first.",
				ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("c1", "run_tests", `{}`)},
				Usage:     fakeopenai.UsageDeepSeek(0, 120, 40, 25)},
			fakeopenai.Text("tests pass"),
		)
		tools := registry(t, tool("run_tests", true, func(context.Context, session.Call) (string, error) { return "PASS", nil }))
		s := e.create(t, session.RoleExecutor, 8, "run the tests")
		// Stop after the first step, then resume in a new process: the
		// reasoning comes back from the store.
		checks := 0
		_, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{StopCheck: func(context.Context) (bool, string) {
			checks++
			return checks == 2, "restart"
		}})
		require.NoError(t, err)
		require.NoError(t, e.rt.Store().Reopen(t.Context(), d, s.ID))
		_, err = e.runtime(t).Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)

		assistant := e.srv.Last().Messages[2]
		require.Equal(t, "assistant", assistant.Role)
		require.Equal(t, "The user wants the tests run first.", assistant.ReasoningContent)
		msgs := e.messages(t, s.ID)
		require.Equal(t, "The user wants the tests run first.", msgs[1].Reasoning)
		require.EqualValues(t, 25, e.requests(t, s.ID)[0].Usage.Reasoning)
	})
}

func TestWallTime(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(e *env) { e.cfg.MaxWallTime = time.Hour },
			fakeopenai.Calls(fakeopenai.Call("c1", "build", `{}`)),
			fakeopenai.Text("build takes long; stopping here"))
		tools := registry(t, tool("build", false, func(context.Context, session.Call) (string, error) {
			e.clock.Advance(61 * time.Minute)
			return "built", nil
		}))
		s := e.create(t, session.RoleExecutor, 6, "build it")
		out, err := e.rt.Run(t.Context(), s.ID, tools, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, session.StateStopped, out.State)
		require.Equal(t, session.ReasonWallTime, out.Reason)
		require.Equal(t, "build takes long; stopping here", out.Final)
	})
}

func TestSecretInPromptIsScrubbed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil, fakeopenai.Text("ok"))
		e.prompts.Save("Use the key " + apiKey + " for nothing.")
		s := e.create(t, session.RoleMain, 0, "hi")
		_, err := e.rt.Run(t.Context(), s.ID, nil, session.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, "Use the key [REDACTED] for nothing.", e.srv.Last().System())
	})
}
