package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// TestRequestIsRoutedIntoATicket drives the wired binary end to end: a
// signed comment that asks the bot for work becomes a card, the main Session
// (a scripted model) routes it into a Ticket, and the host acknowledges the
// request with 👀 on GitHub.
func TestRequestIsRoutedIntoATicket(t *testing.T) {
	t.Parallel()
	databases(t, func(t *testing.T, url string) {
		gh := fakegithub.New(t)
		gh.ServeConversations()
		gh.SetPermission("Codertocat/Hello-World", "Codertocat", "write")

		var payload map[string]any
		raw, err := os.ReadFile(filepath.Join("testdata", "issue_comment.created.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &payload))
		payload["installation"] = map[string]any{"id": 957387, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTU3Mzg3"} // as webhooks carry it
		payload["comment"].(map[string]any)["body"] = "@superagent please fix the typo in the README"
		body, err := json.Marshal(payload)
		require.NoError(t, err)

		routed := fakeopenai.Calls(fakeopenai.Call("r1", "orchestrator_route",
			`{"decisions":[{"candidate":1,"action":"new","title":"Fix the README typo","repo":"Codertocat/Hello-World","note":"explicit request from a writer"}]}`))
		model := fakeopenai.New(t, routed, fakeopenai.Text("Routed one request."))

		const secret, token = "routing-webhook-secret", "routing-admin-token-0123456789"
		p := start(t, "serve", map[string]string{
			"SUPERAGENT_ADDR":                  freeAddr(t),
			"SUPERAGENT_DATA_DIR":              t.TempDir(),
			"SUPERAGENT_DATABASE_URL":          url,
			"SUPERAGENT_ADMIN_TOKEN":           token,
			"SUPERAGENT_GITHUB_APP_ID":         fmt.Sprint(gh.AppID),
			"SUPERAGENT_GITHUB_PRIVATE_KEY":    string(gh.PrivateKey()),
			"SUPERAGENT_GITHUB_API_URL":        gh.URL,
			"SUPERAGENT_GITHUB_WEBHOOK_SECRET": secret,
			"SUPERAGENT_MODEL_BASE_URL":        model.URL(),
			"SUPERAGENT_MODEL_API_KEY":         "sk-test-routing-key-0001",
			"SUPERAGENT_MODEL":                 "router-model",
			"SUPERAGENT_ROUTING_DEBOUNCE":      "100ms",
		}, "serve")
		p.waitHTTP("/readyz", 30*time.Second)

		deliver := func(event, guid string, body []byte) { deliverGitHub(t, p, secret, event, guid, body) }
		// The App is installed on the repository first (GitHub sends this
		// when the team installs it), then someone asks for work.
		installation, err := os.ReadFile(filepath.Join("testdata", "installation.created.json"))
		require.NoError(t, err)
		deliver("installation", "routing-install", installation)
		waitFor(t, 30*time.Second, "the installation to be recorded", func() bool {
			var n int
			d := openDB(t, url)
			require.NoError(t, d.QueryRow(context.Background(), "SELECT count(*) FROM github_repositories WHERE full_name = 'Codertocat/Hello-World'").Scan(&n))
			return n == 1
		})
		deliver("issue_comment", "routing-1", body)

		var list struct {
			Tickets []map[string]any `json:"tickets"`
		}
		t.Cleanup(func() {
			if t.Failed() {
				for i, r := range model.Requests() {
					t.Logf("model request %d, last message: %s", i, r.LastMessage().Content)
				}
			}
		})
		waitFor(t, 2*time.Minute, "the request to become a Ticket", func() bool {
			list.Tickets = nil
			getJSON(t, "http://"+p.addr+"/api/tickets", token, &list)
			return len(list.Tickets) == 1
		})
		require.Equal(t, "Fix the README typo", list.Tickets[0]["title"])
		waitFor(t, 30*time.Second, "the 👀 acknowledgement", func() bool {
			for _, r := range gh.Reactions() {
				if r.Content == "eyes" && strings.Contains(r.Subject, "Codertocat/Hello-World") {
					return true
				}
			}
			return false
		})
		// A job's end reaches the metrics through River's event stream,
		// a moment after the work it did.
		var exposition []byte
		waitFor(t, 10*time.Second, "the metrics", func() bool {
			metrics, err := http.Get("http://" + p.addr + "/metrics")
			require.NoError(t, err)
			exposition, err = io.ReadAll(metrics.Body)
			_ = metrics.Body.Close()
			require.NoError(t, err)
			for _, name := range []string{"superagent_github_requests_total", "superagent_main_candidates_per_request", "superagent_jobs_finished_total"} {
				if !strings.Contains(string(exposition), name) {
					return false
				}
			}
			return true
		})
		reqs := model.Requests()
		require.NotEmpty(t, reqs)
		require.Equal(t, "router-model", reqs[0].Model)
		require.NotContains(t, p.stderr.String(), "sk-test-routing-key-0001", "the model key never reaches the logs")
		code, _ := p.stop(shutdownWithin)
		require.Equal(t, 0, code)
	})
}

// installApp delivers the App's installation on helloRepo to p, as GitHub
// does when a team installs it, and waits until it is recorded.
func installApp(t *testing.T, p *proc, secret, guid, dbURL string) {
	t.Helper()
	installation, err := os.ReadFile(filepath.Join("testdata", "installation.created.json"))
	require.NoError(t, err)
	deliverGitHub(t, p, secret, "installation", guid, installation)
	d := openDB(t, dbURL)
	waitFor(t, 30*time.Second, "the installation to be recorded", func() bool {
		var n int
		require.NoError(t, d.QueryRow(context.Background(), "SELECT count(*) FROM github_repositories WHERE full_name = $1", helloRepo).Scan(&n))
		return n == 1
	})
}

// commentPayload is the issue_comment.created fixture asking text, for
// the installation installApp records, as webhooks carry it.
func commentPayload(t *testing.T, text string) []byte {
	t.Helper()
	var payload map[string]any
	raw, err := os.ReadFile(filepath.Join("testdata", "issue_comment.created.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &payload))
	payload["installation"] = map[string]any{"id": 957387, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTU3Mzg3"}
	payload["comment"].(map[string]any)["body"] = text
	body, err := json.Marshal(payload)
	require.NoError(t, err)
	return body
}

// deliverGitHub posts a signed webhook delivery to p, as GitHub does, and
// requires that it is accepted.
func deliverGitHub(t *testing.T, p *proc, secret, event, guid string, body []byte) {
	t.Helper()
	fakegithub.CheckWebhook(t, event, body)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+p.addr+"/webhooks/github", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", guid)
	req.Header.Set("X-Hub-Signature-256", fakegithub.SignWebhook(secret, body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
}

// openedDBs are the test's own connections to the databases it inspects,
// one per test and URL however often openDB is called (tests call it in
// polling loops; a connection each would exhaust PostgreSQL's).
var openedDBs = struct {
	sync.Mutex
	m map[*testing.T]map[string]*db.DB
}{m: map[*testing.T]map[string]*db.DB{}}

func openDB(t *testing.T, url string) *db.DB {
	t.Helper()
	openedDBs.Lock()
	defer openedDBs.Unlock()
	if d, ok := openedDBs.m[t][url]; ok {
		return d
	}
	// A few connections: a test may query while it reads another result.
	d, err := db.Open(context.Background(), url, db.Options{MaxConns: 3})
	require.NoError(t, err)
	if openedDBs.m[t] == nil {
		openedDBs.m[t] = map[string]*db.DB{}
		t.Cleanup(func() {
			openedDBs.Lock()
			defer openedDBs.Unlock()
			for _, d := range openedDBs.m[t] {
				_ = d.Close()
			}
			delete(openedDBs.m, t)
		})
	}
	openedDBs.m[t][url] = d
	return d
}

func getJSON(t *testing.T, url, token string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.NoError(t, json.Unmarshal(b, v), string(b))
}
