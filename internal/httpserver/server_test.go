package httpserver_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/httpserver"
)

func newServer(t *testing.T, ready error) *httptest.Server {
	t.Helper()
	s := httpserver.New(httpserver.Config{
		APIBodyLimit:   64,
		Ready:          func(context.Context) error { return ready },
		Authenticators: []httpserver.Authenticator{httpserver.BearerToken{Token: "s3cret-admin-token"}},
	})
	s.API.Post("/echo", s.Handle(func(w http.ResponseWriter, r *http.Request) error {
		var body map[string]any
		if err := httpserver.DecodeJSON(r, &body); err != nil {
			return err
		}
		body["actor"] = httpserver.Actor(r.Context())
		httpserver.WriteJSON(w, http.StatusOK, body)
		return nil
	}))
	s.API.Get("/boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	s.API.Get("/fail", s.Handle(func(http.ResponseWriter, *http.Request) error {
		return errors.New("database password is hunter2")
	}))
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, url, token, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestAPI(t *testing.T) {
	srv := newServer(t, nil)
	tests := []struct {
		name, method, path, token, contentType, body string
		status                                       int
		contains                                     string
	}{
		{"no token", "POST", "/api/echo", "", "application/json", `{}`, 401, "authentication required"},
		{"wrong token", "POST", "/api/echo", "s3cret-admin-tokeX", "application/json", `{}`, 401, "authentication required"},
		{"unknown path needs auth first", "GET", "/api/nope", "", "", "", 401, "authentication required"},
		{"unknown path", "GET", "/api/nope", "s3cret-admin-token", "", "", 404, "no such endpoint"},
		{"ok", "POST", "/api/echo", "s3cret-admin-token", "application/json", `{"a":1}`, 200, `"actor":"admin"`},
		{"malformed", "POST", "/api/echo", "s3cret-admin-token", "application/json", `{"a":`, 400, "malformed JSON"},
		{"trailing data", "POST", "/api/echo", "s3cret-admin-token", "application/json", `{} {}`, 400, "data after"},
		{"content type", "POST", "/api/echo", "s3cret-admin-token", "text/plain", `{}`, 415, "application/json"},
		{"too large", "POST", "/api/echo", "s3cret-admin-token", "application/json", `{"a":"` + strings.Repeat("x", 100) + `"}`, 413, "too large"},
		{"panic", "GET", "/api/boom", "s3cret-admin-token", "", "", 500, "internal error"},
		{"cause hidden", "GET", "/api/fail", "s3cret-admin-token", "", "", 500, `{"error":"internal error"}`},
		{"health", "GET", "/healthz", "", "", "", 200, "ok"},
		{"ready", "GET", "/readyz", "", "", "", 200, "ready"},
		{"metrics", "GET", "/metrics", "", "", "", 200, "superagent_http_requests_total"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(t, tt.method, srv.URL+tt.path, tt.token, tt.contentType, tt.body)
			require.Equal(t, tt.status, status, body)
			require.Contains(t, body, tt.contains)
			require.NotContains(t, body, "hunter2")
		})
	}
}

func TestNotReady(t *testing.T) {
	srv := newServer(t, errors.New("database migrations pending"))
	status, body := do(t, "GET", srv.URL+"/readyz", "", "", "")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Contains(t, body, "migrations pending")
}

// Methods are whatever a client sends; as metric labels they must come from
// a fixed set, or junk requests grow /metrics for good.
func TestMetricsStayBoundedUnderJunkMethods(t *testing.T) {
	srv := newServer(t, nil)
	size := func() int {
		res, err := http.Get(srv.URL + "/metrics")
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return len(b)
	}
	before := size()
	client := &http.Client{}
	for i := range 20000 {
		req, err := http.NewRequest("X"+strconv.Itoa(i), srv.URL+"/healthz", nil)
		require.NoError(t, err)
		res, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	after := size()
	require.Less(t, after, 100<<10, "/metrics after 20,000 made-up methods (was %d bytes)", before)
	require.Less(t, after-before, 4<<10, "junk methods share one label value")
}

// Probes and webhook deliveries log their access lines at DEBUG; other
// requests at INFO.
func TestAccessLogLevels(t *testing.T) {
	var buf strings.Builder
	s := httpserver.New(httpserver.Config{Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	s.Root.Post("/webhooks/github", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	s.Root.Get("/admin/", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	for _, req := range []struct{ method, path string }{{"GET", "/healthz"}, {"GET", "/readyz"}, {"GET", "/metrics"}, {"POST", "/webhooks/github"}, {"GET", "/admin/"}} {
		r, err := http.NewRequest(req.method, srv.URL+req.path, nil)
		require.NoError(t, err)
		res, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		res.Body.Close()
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 1, "only the panel request is logged at INFO: %s", buf.String())
	require.Contains(t, lines[0], `"route":"/admin`)
}

// Wrong bearer tokens from one address are refused with 429 past the limit;
// the right token passes from that same address, before and after.
func TestWrongTokensAreLimitedButTheRightOneAlwaysPasses(t *testing.T) {
	s := httpserver.New(httpserver.Config{
		AuthLimit:      httpserver.AttemptLimitConfig{Burst: 3, Every: time.Hour},
		Authenticators: []httpserver.Authenticator{httpserver.BearerToken{Token: "s3cret-admin-token"}},
	})
	s.API.Get("/ping", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "pong") })
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	get := func(token string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/ping", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	for range 3 {
		require.Equal(t, http.StatusUnauthorized, get("guess").StatusCode)
	}
	res := get("guess")
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	require.Equal(t, "3600", res.Header.Get("Retry-After"))
	require.Equal(t, http.StatusOK, get("s3cret-admin-token").StatusCode, "the right token is never refused")
	require.Equal(t, http.StatusTooManyRequests, get("guess").StatusCode, "and it does not lift the limit")
	require.Equal(t, http.StatusUnauthorized, get("").StatusCode, "no credentials, no guess")
}
