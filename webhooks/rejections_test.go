package webhooks_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/internal/testkit/logbuf"
	"github.com/superagent-dev/superagent/webhooks"
)

// A wrong webhook secret refuses every delivery: the log says so once a
// minute per endpoint, naming the setting and counting what it refused.
func TestRefusedSignaturesAreLoggedOnceAMinute(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		var mu sync.Mutex
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		var log logbuf.Buffer
		q := queue.New(d, queue.Config{InsertOnly: true})
		svc, err := webhooks.New(webhooks.Config{GitHub: webhooks.GitHubConfig{WebhookSecret: secret}, Now: clock},
			d, q, nil, nil, slog.New(slog.NewJSONHandler(&log, nil)))
		require.NoError(t, err)
		srv := serveWebhooks(t, q, svc)

		body := []byte(`{"zen": "Keep it logically awesome.", "hook_id": 1}`)
		post := func(sign string) {
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/github", bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "ping")
			req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
			req.Header.Set("X-Hub-Signature-256", fakegithub.SignWebhook(sign, body))
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		}
		for range 5 {
			post("the secret GitHub has")
		}
		warned := log.Lines(`"msg":"webhook request refused; check SUPERAGENT_GITHUB_WEBHOOK_SECRET"`)
		require.Len(t, warned, 1, "one line for five refusals within the minute")
		require.Contains(t, warned[0], `"level":"WARN"`)
		require.Contains(t, warned[0], `"endpoint":"/webhooks/github"`)
		require.Contains(t, warned[0], `"refused":1`)
		require.NotContains(t, warned[0], "the secret GitHub has")

		mu.Lock()
		now = now.Add(61 * time.Second)
		mu.Unlock()
		post("the secret GitHub has")
		warned = log.Lines(`"msg":"webhook request refused; check SUPERAGENT_GITHUB_WEBHOOK_SECRET"`)
		require.Len(t, warned, 2, "a minute later, the next line")
		require.Contains(t, warned[1], `"refused":5`, "it counts the four kept quiet and itself")
	})
}

// Feishu events signed with another Encrypt Key: one line naming the
// setting, for the endpoint's minute.
func TestRefusedFeishuEventsNameTheEncryptKey(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		fake := fakefeishu.New(t)
		fs, err := feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: fake.URL}, nil, nil)
		require.NoError(t, err)
		var log logbuf.Buffer
		q := queue.New(d, queue.Config{InsertOnly: true})
		svc, err := webhooks.New(webhooks.Config{Feishu: webhooks.FeishuConfig{Verifier: feishu.VerifierConfig{VerificationToken: larkToken, EncryptKey: larkEncryptKey}}},
			d, q, nil, fs, slog.New(slog.NewJSONHandler(&log, nil)))
		require.NoError(t, err)
		srv := serveWebhooks(t, q, svc)

		plain := larkFixture(t, "im.message.receive_v1.p2p.json")
		for range 2 {
			resp, err := http.DefaultClient.Do(fakefeishu.EventRequest(t, srv.URL+"/webhooks/feishu", "the key in the Feishu console", plain, time.Now()))
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		}
		warned := log.Lines(`"msg":"webhook request refused; check SUPERAGENT_FEISHU_ENCRYPT_KEY"`)
		require.Len(t, warned, 1)
		require.Contains(t, warned[0], `"endpoint":"/webhooks/feishu"`)
		require.NotContains(t, warned[0], "the key in the Feishu console")
	})
}

// serveWebhooks readies q and serves svc's endpoints.
func serveWebhooks(t *testing.T, q *queue.Queue, svc *webhooks.Service) *httptest.Server {
	t.Helper()
	require.NoError(t, q.Init())
	r := chi.NewRouter()
	svc.Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}
