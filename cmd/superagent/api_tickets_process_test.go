package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// TestOpenTicketThroughTheAPI opens a Ticket through POST /api/tickets on
// the binary: a writer's request is answered 201 with the Ticket's id and
// page once it is stored, and reaches its Executor; a reader's is refused
// 403 with the reason, a malformed request 400 with every problem, and a
// caller without the token 401 — none of them stores anything.
func TestOpenTicketThroughTheAPI(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		gh.AddRepo(t, helloRepo, "main", map[string]string{"README.md": "# Hello World\n"})
		gh.SetPermission(helloRepo, "Codertocat", "write")
		gh.SetPermission(helloRepo, "reader", "read")
		model := scriptedModel(t, func(fakeopenai.Request) fakeopenai.Reply { return fakeopenai.Text("Looking.") })
		const secret, token = "api-tickets-webhook-secret", "api-tickets-admin-token-0123456789"
		p, store := serveFor(t, dbURL, gh, model, secret, token, map[string]string{"SUPERAGENT_PUBLIC_URL": "https://agent.example.com"})
		count := func(table string) int {
			var n int
			require.NoError(t, store.QueryRow(t.Context(), `SELECT count(*) FROM `+table).Scan(&n))
			return n
		}
		cardsBefore := count("cards")
		post := func(body, bearer string) (int, map[string]any) {
			code, raw := apiCall(t, p, "POST", "/api/tickets", body, bearer)
			var out map[string]any
			require.NoError(t, json.Unmarshal([]byte(raw), &out), raw)
			return code, out
		}

		code, out := post(`{"repo":"`+helloRepo+`","title":"Add a NOTES.md","body":"Say what the repository is for.","requester":"reader"}`, token)
		require.Equal(t, 403, code, out)
		require.Equal(t, "reader's permission on "+helloRepo+" is read; write or higher is needed to open work there", out["error"])

		code, out = post(`{}`, token)
		require.Equal(t, 400, code, out)
		require.Len(t, out["problems"], 4, "repo, title, body and requester")
		code, out = post(`{"repo":"nobody/nothing","title":"x","body":"`+strings.Repeat("y", 20001)+`","requester":"Codertocat"}`, token)
		require.Equal(t, 400, code, out)
		require.Equal(t, []any{"body is 20001 characters; at most 20000", "repo nobody/nothing is unknown: the GitHub App is not installed on it"}, out["problems"])
		code, _ = apiCall(t, p, "POST", "/api/tickets", `{"repo":"`+helloRepo+`","title":"x","body":"y","requester":"Codertocat"}`, "")
		require.Equal(t, 401, code)
		require.Zero(t, count("tickets"), "nothing stored on a refusal")
		require.Equal(t, cardsBefore, count("cards"))

		code, out = post(`{"repo":"`+helloRepo+`","title":"Add a NOTES.md","body":"Say what the repository is for.","requester":"Codertocat"}`, token)
		require.Equal(t, 201, code, out)
		id := int64(out["id"].(float64))
		require.Equal(t, "https://agent.example.com/admin/tickets/"+strconv.FormatInt(id, 10), out["url"])
		var state, requester string
		require.NoError(t, store.QueryRow(t.Context(), `SELECT state, mandate FROM tickets WHERE id = $1`, id).Scan(&state, &requester))
		require.Contains(t, requester, `"login":"Codertocat"`)
		var cardState string
		require.NoError(t, store.QueryRow(t.Context(), `SELECT state FROM cards WHERE kind = 'api_request'`).Scan(&cardState))
		require.Equal(t, "routed", cardState)
		waitFor(t, 2*time.Minute, "the request to reach its Executor", func() bool {
			for _, r := range model.Requests() {
				if r.Model != "router-model" && strings.Contains(r.Text(), "Say what the repository is for.") {
					return true
				}
			}
			return false
		})
		code, _ = p.stop(10 * time.Second)
		require.Equal(t, 0, code)
	})
}
