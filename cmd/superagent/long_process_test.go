package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// approxTokens is a request's size as the fake model reports it in its
// usage: a token for every four bytes of the body, what the runtime's own
// estimate assumes between two measured requests.
func approxTokens(req fakeopenai.Request) int64 {
	b, _ := json.Marshal(req.Body)
	return int64(len(b) / 4)
}

// longWorker plays an Executor that asks a person one question at once and
// then works through steps commands, each printing about 8 KB, before it
// reports done; its handoffs are sloppy: the first is empty, the others
// say only that work goes on, never the request or the question.
type longWorker struct {
	mu       sync.Mutex
	steps    int
	ran      int
	handoffs int
}

const (
	longQuestion = "Which port should the server listen on?"
	longRequest  = "please run the long checks one by one (case-long)"
)

func (w *longWorker) reply(req fakeopenai.Request) fakeopenai.Reply {
	w.mu.Lock()
	defer w.mu.Unlock()
	usage := fakeopenai.UsageOpenAI(approxTokens(req), 0, 40)
	reply := func(r fakeopenai.Reply) fakeopenai.Reply {
		r.Usage = usage
		return r
	}
	if req.ToolChoice == "none" {
		w.handoffs++
		if w.handoffs == 1 {
			return reply(fakeopenai.Empty())
		}
		return reply(fakeopenai.Text("Ran more of the checks in order; keep going with the next ones."))
	}
	asked := strings.Contains(req.Text(), `"question":`) || strings.Contains(req.Text(), "Open question to a person")
	switch {
	case !asked && w.ran == 0:
		return reply(fakeopenai.Calls(fakeopenai.Call("", "human_action", `{"question":"`+longQuestion+`"}`)))
	case w.ran < w.steps:
		w.ran++
		return reply(fakeopenai.Calls(fakeopenai.Call("", "run_command",
			fmt.Sprintf(`{"command":"head -c 8000 /dev/zero | tr '\\000' a; echo ' check %d'","timeout_seconds":30}`, w.ran))))
	case !strings.Contains(req.Text(), "reported done"):
		return reply(fakeopenai.Calls(fakeopenai.Call("", "report",
			fmt.Sprintf(`{"state":"done","summary":"Ran the %d checks one by one; every one printed its output and exited 0."}`, w.steps))))
	}
	return reply(fakeopenai.Text("Done."))
}

// TestLongSessionStaysInItsWindow runs one Ticket through the binary for
// 300 model requests whose commands print 8 KB each, in a context window
// of 40,000 tokens, with sloppy handoffs (the first empty). The
// conversation rolls over many times; every request stays under the
// window, and the last one still holds the original request and the
// question that was never answered, which the host carried across every
// rollover.
func TestLongSessionStaysInItsWindow(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		gh.AddRepo(t, helloRepo, "main", map[string]string{"README.md": "# Hello World\n"})
		gh.SetPermission(helloRepo, "Codertocat", "write")
		const window = 40_000
		w := &longWorker{steps: 296}
		model := fakeopenai.New(t)
		model.Fallback(fakeopenai.Respond(func(req fakeopenai.Request) fakeopenai.Reply {
			if req.Model == "router-model" {
				return router(req)
			}
			return w.reply(req)
		}))
		const secret, token = "long-webhook-secret", "long-admin-token-0123456789"
		p, store := serveFor(t, dbURL, gh, model, secret, token, map[string]string{
			"SUPERAGENT_MODEL_CONTEXT_WINDOW": fmt.Sprint(window),
			"SUPERAGENT_EXECUTOR_MAX_STEPS":   "400",
		})
		deliverGitHub(t, p, secret, "issue_comment", "long-1", commentPayload(t, "@superagent "+longRequest))
		waitFor(t, 12*time.Minute, "the long Ticket to be done", func() bool {
			var state string
			_ = store.QueryRow(t.Context(), `SELECT state FROM tickets WHERE id = 1`).Scan(&state)
			return state == "done"
		})
		code, _ := p.stop(shutdownWithin)
		require.Equal(t, 0, code)

		var executor []fakeopenai.Request
		for _, r := range model.Requests() {
			if r.Model == "executor-model" {
				executor = append(executor, r)
			}
		}
		require.GreaterOrEqual(t, len(executor), 300)
		var largest int64
		for i, r := range executor {
			n := approxTokens(r)
			largest = max(largest, n)
			require.Less(t, n, int64(window), "request %d is under the window", i)
		}
		var sessions, rolled int
		require.NoError(t, store.QueryRow(t.Context(), `SELECT count(*), count(*) FILTER (WHERE state = 'rolled_over') FROM sessions WHERE ticket_id = 1`).Scan(&sessions, &rolled))
		t.Logf("%d executor requests, the largest about %d tokens of %d; %d Sessions, %d handoffs asked", len(executor), largest, window, sessions, w.handoffs)
		require.Greater(t, rolled, 5, "the conversation rolled over many times")

		last := executor[len(executor)-1].Text()
		require.Contains(t, last, longRequest, "the last request holds the original request")
		require.Contains(t, last, longQuestion, "and the open question")
		var emptyHandoffs int
		require.NoError(t, store.QueryRow(t.Context(), `SELECT count(*) FROM session_requests WHERE finish_reason = 'retried:empty_handoff'`).Scan(&emptyHandoffs))
		require.Equal(t, 1, emptyHandoffs, "the empty handoff was asked again, once")
	})
}
