package webhooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/queue"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/tickets"
	"github.com/superagent-dev/superagent/webhooks"
)

const secret = "It's a Secret to Everybody"

type env struct {
	d      *db.DB
	q      *queue.Queue
	svc    *webhooks.Service
	srv    *httptest.Server
	fake   *fakegithub.Server
	store  *tickets.Store
	hooked []tickets.Card
	hookMu sync.Mutex
	seq    atomic.Int64
}

// setup builds the service on d with a fake GitHub, an insert-only queue
// (tests work deliveries through the worker) and a test HTTP server.
func setup(t *testing.T, d *db.DB, mods ...func(*webhooks.Config)) *env {
	t.Helper()
	e := &env{d: d, fake: fakegithub.New(t)}
	e.fake.SetPermission("Codertocat/Hello-World", "Codertocat", "admin")
	gh, err := githubapp.New(githubapp.Config{AppID: e.fake.AppID, PrivateKey: e.fake.PrivateKey(), BaseURL: e.fake.URL})
	require.NoError(t, err)
	e.q = queue.New(d, queue.Config{InsertOnly: true})
	cfg := webhooks.Config{GitHub: webhooks.GitHubConfig{WebhookSecret: secret, AppID: e.fake.AppID, Slug: "superagent"}}
	cfg.Hooks = []tickets.Hook{tickets.HookFunc(func(_ context.Context, _ *db.Tx, c tickets.Card) error {
		e.hookMu.Lock()
		defer e.hookMu.Unlock()
		e.hooked = append(e.hooked, c)
		return nil
	})}
	for _, m := range mods {
		m(&cfg)
	}
	e.svc, err = webhooks.New(cfg, d, e.q, gh, nil, nil)
	require.NoError(t, err)
	require.NoError(t, e.q.Init())
	e.store = e.svc.Store()
	r := chi.NewRouter()
	e.svc.Routes(r)
	r.Route("/api", e.svc.APIRoutes)
	e.srv = httptest.NewServer(r)
	t.Cleanup(e.srv.Close)
	return e
}

func fixture(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/github/" + path)
	require.NoError(t, err)
	return b
}

// patch decodes a payload, lets fn change it, and encodes it again.
func patch(t testing.TB, body []byte, fn func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	fn(m)
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

func obj(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

// request builds a webhook request signed and headed as GitHub sends it;
// the payload must match GitHub's schema for event (rawRequest skips that,
// for payloads GitHub would not send).
func (e *env) request(t testing.TB, event, guid string, body []byte) *http.Request {
	t.Helper()
	fakegithub.CheckWebhook(t, event, body)
	return e.rawRequest(t, event, guid, body)
}

func (e *env) rawRequest(t testing.TB, event, guid string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/webhooks/github", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/044aadd")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", guid)
	req.Header.Set("X-GitHub-Hook-ID", "292430182")
	req.Header.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	req.Header.Set("X-GitHub-Hook-Installation-Target-ID", fmt.Sprint(e.fake.AppID))
	req.Header.Set("X-Hub-Signature-256", fakegithub.SignWebhook(secret, body))
	return req
}

type answer struct {
	Status   int
	Delivery int64  `json:"delivery"`
	State    string `json:"status"`
}

func (e *env) send(t testing.TB, req *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var a answer
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &a), "%s", raw)
	}
	a.Status = resp.StatusCode
	return a
}

// deliver posts a signed payload under a fresh delivery id, requires 202
// and works the delivery's job; it returns the delivery id.
func (e *env) deliver(t testing.TB, event string, body []byte) int64 {
	t.Helper()
	return e.deliverRequest(t, e.request(t, event, e.guid(), body))
}

// deliverHostile is deliver for a payload GitHub would not send (it is not
// held to GitHub's schema).
func (e *env) deliverHostile(t testing.TB, event string, body []byte) int64 {
	t.Helper()
	return e.deliverRequest(t, e.rawRequest(t, event, e.guid(), body))
}

func (e *env) deliverRequest(t testing.TB, req *http.Request) int64 {
	t.Helper()
	a := e.send(t, req)
	require.Equal(t, http.StatusAccepted, a.Status)
	require.NotZero(t, a.Delivery)
	e.work(t, a.Delivery)
	return a.Delivery
}

func (e *env) guid() string {
	return fmt.Sprintf("72d3162e-cc78-11e3-81ab-%012d", e.seq.Add(1))
}

// work runs the real worker on a delivery, as River would.
func (e *env) work(t testing.TB, delivery int64) {
	t.Helper()
	job := &river.Job[webhooks.ProcessArgs]{JobRow: &rivertype.JobRow{Attempt: 1}, Args: webhooks.ProcessArgs{DeliveryID: delivery}}
	require.NoError(t, e.svc.Worker().Work(context.Background(), job))
}

// card returns the card made from a delivery.
func (e *env) card(t testing.TB, delivery int64) tickets.Card {
	t.Helper()
	c, err := e.store.CardByDelivery(context.Background(), e.d, delivery)
	require.NoError(t, err)
	return c
}

func (e *env) delivery(t testing.TB, id int64) webhooks.Delivery {
	t.Helper()
	d, err := e.svc.Delivery(context.Background(), id)
	require.NoError(t, err)
	return d
}

func count(t testing.TB, d *db.DB, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, d.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func mustOpen(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}
