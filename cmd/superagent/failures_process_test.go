package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// TestFailuresAreSeenWhereOperatorsLook drives the binary as a new
// operator meets it: the main Session's model refuses every request, a
// Ticket's Executor job fails, and a webhook secret is wrong. Each is a
// WARN line with its ids at the default log level, and the model's
// failure is on the overview, in GET /api/connections and on the cards it
// holds up (the panel's inbox and GET /api/cards).
func TestFailuresAreSeenWhereOperatorsLook(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		var refuse atomic.Bool
		refuse.Store(true)
		model := fakeopenai.New(t)
		model.Fallback(fakeopenai.Respond(func(req fakeopenai.Request) fakeopenai.Reply {
			switch {
			case req.Model == "router-model" && refuse.Load():
				return fakeopenai.Status(http.StatusServiceUnavailable, "")
			case req.Model == "router-model":
				return router(req)
			}
			// The Executors' model turns every request down.
			return fakeopenai.Status(http.StatusBadRequest, "")
		}))
		const (
			secret = "failures-webhook-secret"
			token  = "failures-admin-token-0123456789"
			apiKey = "sk-test-failures-key-0001"
		)
		p := serveHelloWorld(t, dbURL, model, secret, map[string]string{
			"SUPERAGENT_ADMIN_TOKEN":      token,
			"SUPERAGENT_MODEL_API_KEY":    apiKey,
			"SUPERAGENT_ROUTING_DEBOUNCE": "100ms",
		})
		base := "http://" + p.addr

		// A bad signature, again and again: one WARN line, naming the
		// setting, however many were refused within the minute.
		body := commentPayload(t, "hello")
		for i := range 3 {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, base+"/webhooks/github", bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "issue_comment")
			req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("bad-signature-%d", i))
			req.Header.Set("X-Hub-Signature-256", fakegithub.SignWebhook("the secret GitHub was given", body))
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		}
		refusals := linesWith(p.stderr.String(), "webhook request refused")
		require.Len(t, refusals, 1, "once a minute, not once per request")
		require.Contains(t, refusals[0], `"level":"WARN"`)
		require.Contains(t, refusals[0], "SUPERAGENT_GITHUB_WEBHOOK_SECRET")
		require.Contains(t, refusals[0], `"endpoint":"/webhooks/github"`)

		// The main Session's model refuses: the first failure is a WARN
		// line at once, within the turn's first attempt (the client
		// retries for about a minute before the attempt fails), naming
		// the job and the card it holds up.
		deliverGitHub(t, p, secret, "issue_comment", "failures-request", commentPayload(t, "@superagent please fix the typo in the README"))
		p.waitLog(`"msg":"model request failed"`, 30*time.Second)
		failed := linesWith(p.stderr.String(), `"msg":"model request failed"`)
		require.Len(t, failed, 1, "one line while it keeps failing, not one per retry")
		for _, want := range []string{`"level":"WARN"`, `"role":"main"`, `"model":"router-model"`, `"kind":"route_turn"`, `"attempt":1`, `"cards":"[`, "503"} {
			require.Contains(t, failed[0], want)
		}

		var conns []struct {
			Kind         string    `json:"kind"`
			Healthy      bool      `json:"healthy"`
			Failure      string    `json:"failure"`
			FailingSince time.Time `json:"failing_since"`
		}
		// The WARN line is written as the failure is recorded; the record's
		// commit may land a moment later on a busy PostgreSQL, so read
		// until the model shows as failing (or the deadline passes).
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			conns = conns[:0]
			getJSON(t, base+"/api/connections", token, &conns)
			failing := false
			for _, c := range conns {
				failing = failing || (c.Kind == "model" && !c.Healthy)
			}
			if failing || time.Now().After(deadline) {
				break
			}
		}
		var sawModel bool
		for _, c := range conns {
			if c.Kind == "model" {
				sawModel = true
				require.False(t, c.Healthy)
				require.False(t, c.FailingSince.IsZero(), "it says since when")
				require.Contains(t, c.Failure, "the main Session's model router-model")
				require.Contains(t, c.Failure, "503", "and why")
			}
		}
		require.True(t, sawModel)

		var cards []struct {
			ID     int64  `json:"id"`
			State  string `json:"state"`
			HeldUp *struct {
				Model string    `json:"model"`
				Since time.Time `json:"since"`
				Error string    `json:"error"`
			} `json:"held_up"`
		}
		getJSON(t, base+"/api/cards", token, &cards)
		require.Len(t, cards, 1)
		require.Equal(t, "candidate", cards[0].State)
		require.NotNil(t, cards[0].HeldUp, "the waiting card says what holds it up")
		require.Equal(t, "router-model", cards[0].HeldUp.Model)
		require.False(t, cards[0].HeldUp.Since.IsZero())
		require.Contains(t, cards[0].HeldUp.Error, "503")
		require.Contains(t, failed[0], fmt.Sprintf(`"cards":"[%d]"`, cards[0].ID))

		page := panelPage(t, base, token, "/admin/")
		require.Contains(t, page, "failing since")
		require.Contains(t, page, "held up")
		require.Contains(t, page, "the main Session's model router-model has been failing since")
		require.NotContains(t, page, "waiting</span> <span class=\"muted\">for the main Session")

		// The model answers again: the card is routed, and the Ticket's
		// Executor job fails (its model refuses the request): a WARN line
		// naming the Ticket.
		refuse.Store(false)
		p.waitLog(`"msg":"model answering again"`, 90*time.Second)
		p.waitLog(`"msg":"ticket opened"`, 30*time.Second)
		p.waitLog(`"msg":"job attempt failed; it is tried again later"`, 90*time.Second)
		var jobLine string
		for _, l := range linesWith(p.stderr.String(), `"msg":"job attempt failed; it is tried again later"`) {
			if strings.Contains(l, `"kind":"execute_ticket"`) {
				jobLine = l
			}
		}
		require.NotEmpty(t, jobLine, "the Executor job's failure is the one logged")
		var ticket int64
		require.NoError(t, openDB(t, dbURL).QueryRow(context.Background(), "SELECT id FROM tickets").Scan(&ticket))
		for _, want := range []string{`"level":"WARN"`, fmt.Sprintf(`"ticket":%d`, ticket), `"attempt":1`, `"job":`, "400"} {
			require.Contains(t, jobLine, want)
		}
		require.NotContains(t, p.stderr.String(), apiKey, "the model key never reaches the logs")

		code, _ := p.stop(shutdownWithin)
		require.Equal(t, 0, code)
	})
}

// linesWith are the lines of a process's log that contain substr.
func linesWith(log, substr string) []string {
	var out []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return out
}

// panelPage signs in to the panel with the admin token and reads path.
func panelPage(t *testing.T, base, token, path string) string {
	t.Helper()
	c := browserClient(t)
	resp, err := c.PostForm(base+"/admin/signin", url.Values{"token": {token}, "next": {path}})
	require.NoError(t, err)
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)
	return string(page)
}

// TestShutdownEndsABackoffAtOnce: a turn whose model asks it to wait a
// minute before trying again is sleeping when SIGTERM comes; the stop
// ends the sleep at once and puts the turn back to run again, rather than
// waiting for the shutdown deadline and cancelling it.
func TestShutdownEndsABackoffAtOnce(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		model := fakeopenai.New(t)
		model.Fallback(fakeopenai.Status(http.StatusTooManyRequests, "60"))
		const secret = "backoff-webhook-secret"
		p := serveHelloWorld(t, dbURL, model, secret, nil)
		deliverGitHub(t, p, secret, "issue_comment", "backoff-request", commentPayload(t, "@superagent please fix the typo in the README"))
		// The first refusal: the turn now sleeps the minute the model
		// asked for.
		p.waitLog(`"msg":"model request failed"`, 30*time.Second)

		code, took := p.stop(shutdownWithin)
		require.Equal(t, 0, code)
		t.Logf("stopped %s after SIGTERM, with the turn in a 60 s backoff (the shutdown deadline is 30 s)", took.Round(time.Millisecond))
		log := p.stderr.String()
		require.Contains(t, log, "job interrupted by the shutdown while waiting to try again")
		require.NotContains(t, log, "jobs still running at shutdown deadline", "the stop did not wait for the deadline")
		var state string
		require.NoError(t, openDB(t, dbURL).QueryRow(context.Background(),
			"SELECT state FROM river_job WHERE kind = 'route_turn' ORDER BY id DESC LIMIT 1").Scan(&state))
		require.Equal(t, "available", state, "the turn runs again after the restart")
	})
}

// serveHelloWorld starts serve on dbURL with the App installed on
// helloRepo (Codertocat may write there), the router and Executor models
// of model, and env's settings besides; it returns once the installation
// is recorded.
func serveHelloWorld(t *testing.T, dbURL string, model *fakeopenai.Server, secret string, env map[string]string) *proc {
	t.Helper()
	gh := fakegithub.New(t)
	gh.AddRepo(t, helloRepo, "main", map[string]string{"README.md": "# Hello World\n"})
	gh.SetPermission(helloRepo, "Codertocat", "write")
	settings := map[string]string{
		"SUPERAGENT_ADDR":                  freeAddr(t),
		"SUPERAGENT_DATA_DIR":              t.TempDir(),
		"SUPERAGENT_DATABASE_URL":          dbURL,
		"SUPERAGENT_GITHUB_APP_ID":         fmt.Sprint(gh.AppID),
		"SUPERAGENT_GITHUB_PRIVATE_KEY":    string(gh.PrivateKey()),
		"SUPERAGENT_GITHUB_API_URL":        gh.URL,
		"SUPERAGENT_GITHUB_WEBHOOK_SECRET": secret,
		"SUPERAGENT_MODEL_BASE_URL":        model.URL(),
		"SUPERAGENT_MODEL":                 "executor-model",
		"SUPERAGENT_ROUTER_MODEL":          "router-model",
	}
	maps.Copy(settings, env)
	p := start(t, "serve", settings, "serve")
	p.waitHTTP("/readyz", 30*time.Second)
	installApp(t, p, secret, "install-"+secret, dbURL)
	return p
}
