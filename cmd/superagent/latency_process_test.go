package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// TestLoneRequestLatency measures, through the binary at the default
// routing settings, how long a lone request waits for its 👀: from the
// delivery's 2xx to GitHub receiving the reaction, with a model that
// answers at once. The figures are logged, not asserted (see
// docs/benchmarks.md).
func TestLoneRequestLatency(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databasesInTurn(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		gh.AddRepo(t, helloRepo, "main", map[string]string{"README.md": "# Hello World\n"})
		gh.SetPermission(helloRepo, "Codertocat", "write")
		model := fakeopenai.New(t)
		model.Fallback(fakeopenai.Respond(func(req fakeopenai.Request) fakeopenai.Reply {
			if req.Model == "router-model" {
				return router(req)
			}
			return fakeopenai.Text("Nothing to do.")
		}))
		const secret = "latency-webhook-secret"
		p := start(t, "serve", map[string]string{
			"SUPERAGENT_ADDR":                  freeAddr(t),
			"SUPERAGENT_DATA_DIR":              t.TempDir(),
			"SUPERAGENT_DATABASE_URL":          dbURL,
			"SUPERAGENT_ADMIN_TOKEN":           "latency-admin-token-0123456789",
			"SUPERAGENT_GITHUB_APP_ID":         fmt.Sprint(gh.AppID),
			"SUPERAGENT_GITHUB_PRIVATE_KEY":    string(gh.PrivateKey()),
			"SUPERAGENT_GITHUB_API_URL":        gh.URL,
			"SUPERAGENT_GITHUB_WEBHOOK_SECRET": secret,
			"SUPERAGENT_MODEL_BASE_URL":        model.URL(),
			"SUPERAGENT_MODEL_API_KEY":         "sk-test-latency-key-0001",
			"SUPERAGENT_MODEL":                 "executor-model",
			"SUPERAGENT_ROUTER_MODEL":          "router-model",
		}, "serve")
		p.waitHTTP("/readyz", 30*time.Second)
		installApp(t, p, secret, "latency-install", dbURL)
		raw, err := os.ReadFile(filepath.Join("testdata", "issue_comment.created.json"))
		require.NoError(t, err)

		var took []time.Duration
		for i := range 3 {
			// Lone: the request comes to a quiet service, more than the
			// default debounce (2 s) after its last routing turn (the one
			// at start, or the one reading the last Executor's report).
			time.Sleep(4 * time.Second)
			// Each request is a comment of its own: the fixture's comment
			// id, wherever it appears, made new.
			var payload map[string]any
			require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(string(raw), "492700400", fmt.Sprint(7_000_000+i))), &payload))
			payload["installation"] = map[string]any{"id": 957387, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTU3Mzg3"}
			comment := payload["comment"].(map[string]any)
			comment["body"] = fmt.Sprintf("@superagent please fix typo number %d in the README", i+1)
			issue := payload["issue"].(map[string]any)
			issue["number"] = 100 + i
			body, err := json.Marshal(payload)
			require.NoError(t, err)
			before := len(gh.Reactions())
			begin := time.Now()
			deliverGitHub(t, p, secret, "issue_comment", fmt.Sprintf("latency-%d", i), body)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("reactions: %+v", gh.Reactions())
					rows, err := openDB(t, dbURL).Query(context.Background(), "SELECT key, kind, target, state FROM outgoing_messages ORDER BY id")
					if err == nil {
						for rows.Next() {
							var k, kind, target, state string
							_ = rows.Scan(&k, &kind, &target, &state)
							t.Logf("outgoing %s %s %s %s", k, kind, target, state)
						}
						rows.Close()
					}
				}
			})
			waitFor(t, 30*time.Second, "the 👀", func() bool { return len(gh.Reactions()) > before })
			took = append(took, time.Since(begin))
		}
		slices.Sort(took)
		var parts []string
		for _, d := range took {
			parts = append(parts, d.Round(time.Millisecond).String())
		}
		t.Logf("a lone request's 👀 after %s (p50 %s)", strings.Join(parts, ", "), took[len(took)/2].Round(time.Millisecond))
		code, _ := p.stop(shutdownWithin)
		require.Equal(t, 0, code)
	})
}
