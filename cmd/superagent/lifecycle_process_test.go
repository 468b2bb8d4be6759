package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTypoFixTellsItsStoryInTheLog follows the typo fix through the binary
// at the default log level and reads the story back from its log: each
// lifecycle step is one INFO line carrying its ids, the Trigger and the
// routing steps exactly once, and River's own chatter stays below INFO.
func TestTypoFixTellsItsStoryInTheLog(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh, _ := typoRepo(t)
		model := scriptedModel(t, readmeFixer)
		const secret, token = "lifecycle-webhook-secret", "lifecycle-admin-token-0123456789"
		p := start(t, "serve", serviceEnv(t, dbURL, gh, model, secret, token), "serve")
		p.waitHTTP("/readyz", 30*time.Second)

		installApp(t, p, secret, "story-install", dbURL)
		body := commentPayload(t, "@superagent please fix the typo in the README")
		deliverGitHub(t, p, secret, "issue_comment", "story-1", body)

		var ticket struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
			PR    int    `json:"pull_request"`
		}
		waitFor(t, 3*time.Minute, "the Ticket to be in review", func() bool {
			var list struct {
				Tickets []json.RawMessage `json:"tickets"`
			}
			getJSON(t, "http://"+p.addr+"/api/tickets", token, &list)
			if len(list.Tickets) != 1 {
				return false
			}
			require.NoError(t, json.Unmarshal(list.Tickets[0], &ticket))
			return ticket.State == "in_review"
		})
		// What the work cost, and where the Tickets stand, on /metrics.
		resp, err := http.Get("http://" + p.addr + "/metrics")
		require.NoError(t, err)
		scraped, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		metrics := string(scraped)
		for _, series := range []string{
			`superagent_model_tokens_total{kind="input",model="executor-model",repository="Codertocat/Hello-World",role="executor"} `,
			`superagent_model_tokens_total{kind="output",model="router-model",repository="",role="main"} `,
			`superagent_model_request_seconds_count{model="executor-model",role="executor"} `,
			`superagent_executor_tool_seconds_count{tool="run_command"} `,
		} {
			i := strings.Index(metrics, series)
			require.GreaterOrEqual(t, i, 0, "%s on /metrics", series)
			value := strings.Fields(metrics[i+len(series):])[0]
			require.NotEqual(t, "0", value, series)
		}
		require.Contains(t, metrics, `superagent_tickets{state="in_review"} 1`)
		require.Contains(t, metrics, `superagent_tickets{state="working"} 0`)

		code, _ := p.stop(shutdownWithin)
		require.Equal(t, 0, code)

		lines := logLines(t, p.stderr.String())
		byMsg := map[string][]map[string]any{}
		for _, l := range lines {
			if l["level"] == "INFO" {
				byMsg[l["msg"].(string)] = append(byMsg[l["msg"].(string)], l)
			}
			require.NotContains(t, l["msg"], "River client", "River's chatter is below INFO")
			if route, _ := l["route"].(string); l["msg"] == "http request" && (strings.HasPrefix(route, "/webhooks/") || route == "/readyz") {
				require.NotEqual(t, "INFO", l["level"], "webhook and probe access is logged at DEBUG: %v", l)
			}
		}
		id := float64(ticket.ID)
		once := func(msg string, want map[string]any) map[string]any {
			t.Helper()
			require.Len(t, byMsg[msg], 1, "%q once; log:\n%s", msg, withoutAccessLogs(p.stderr.String()))
			l := byMsg[msg][0]
			for k, v := range want {
				require.Equal(t, v, l[k], "%q carries %s", msg, k)
			}
			return l
		}
		stored := byMsg["delivery stored"]
		require.Len(t, stored, 2, "the installation and the comment")
		for _, l := range stored {
			require.Positive(t, l["delivery"])
			require.Equal(t, "github", l["source"])
		}
		card := once("card made", map[string]any{"repo": helloRepo, "kind": "comment"})
		require.Positive(t, card["card"])
		require.Equal(t, stored[1]["delivery"], card["delivery"], "the card names its delivery")
		once("card routed", map[string]any{"card": card["card"], "decision": "new", "ticket": id, "repo": helloRepo})
		once("ticket opened", map[string]any{"ticket": id, "card": card["card"], "repo": helloRepo})
		once("pull request opened", map[string]any{"ticket": id, "repo": helloRepo, "pr": float64(ticket.PR)})
		once("report", map[string]any{"ticket": id, "state": "done"})
		once("ticket in review", map[string]any{"ticket": id, "repo": helloRepo, "pr": float64(ticket.PR)})
		require.NotEmpty(t, byMsg["executor started"])
		require.Len(t, byMsg["executor stopped"], len(byMsg["executor started"]), "every start has its stop")
		for _, l := range append(byMsg["executor started"], byMsg["executor stopped"]...) {
			require.Equal(t, id, l["ticket"])
			require.Positive(t, l["session"])
		}
		last := byMsg["executor stopped"][len(byMsg["executor stopped"])-1]
		require.NotEmpty(t, last["why"], "a stop says why")
	})
}

// logLines parses a JSON log.
func logLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "a log line is JSON: %s", sc.Text())
		out = append(out, m)
	}
	return out
}
