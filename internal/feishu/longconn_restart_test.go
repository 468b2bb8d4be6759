package feishu_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/feishu"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

func TestLongConnRestartBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		rand     float64
		failed   int
		min, max time.Duration
	}{
		{"first restart, low draw", 0, 0, 500 * time.Millisecond, 500 * time.Millisecond},
		{"first restart, high draw", 0.999, 0, 999 * time.Millisecond, time.Second},
		{"doubles", 0, 3, 4 * time.Second, 4 * time.Second},
		{"capped", 0.999, 20, 59 * time.Second, time.Minute},
		{"capped without overflow", 0, 1 << 20, 30 * time.Second, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lc, err := feishu.NewLongConn(feishu.LongConnConfig{AppID: "a", AppSecret: "s", RestartDelay: time.Second,
				MaxRestartDelay: time.Minute, Rand: func() float64 { return tc.rand }}, (&received{}).handle, nil, nil)
			require.NoError(t, err)
			got := lc.RestartDelay(tc.failed)
			require.GreaterOrEqual(t, got, tc.min)
			require.LessOrEqual(t, got, tc.max)
		})
	}
}

// syncBuffer is a log destination safe for the SDK's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A client that connected and then gave up reconnecting (Feishu's config
// limits its retries) only logs it; Run notices, waits its backoff and
// starts a fresh client, and every connect is counted and logged.
func TestLongConnRestartsAfterTheSDKGivesUp(t *testing.T) {
	fakefeishu.SkipUnderRace(t)
	srv := fakefeishu.New(t)
	srv.SetReconnect(1, 0)
	clock := &fakeClock{now: testNow}
	reg := prometheus.NewRegistry()
	var logs syncBuffer
	lc, err := feishu.NewLongConn(feishu.LongConnConfig{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: srv.URL,
		Registerer: reg, RestartDelay: time.Second, Rand: func() float64 { return 0 }},
		(&received{}).handle, clock, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = lc.Run(ctx) }()
	require.NoError(t, srv.WaitConnects(waitCtx(t), 1))

	// The SDK's one retry fails; Run's restart connects.
	srv.Fail(http.MethodPost, "/callback/ws/endpoint", 1, fakefeishu.Failure{HTTPStatus: http.StatusServiceUnavailable})
	srv.DropConnections()
	require.NoError(t, srv.WaitConnects(waitCtx(t), 2))
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "feishu long connection reconnected") {
		require.True(t, time.Now().Before(deadline), "no reconnect logged:\n%s", logs.String())
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, []time.Duration{500 * time.Millisecond}, clock.Slept(), "one restart, after the first backoff step")
	require.Contains(t, logs.String(), `level=INFO msg="feishu long connection connected" connects=1`)
	require.NotContains(t, logs.String(), "ticket", "the connection URL's credentials are not logged")
	values := map[string]float64{}
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		values[f.GetName()] = f.GetMetric()[0].GetCounter().GetValue()
	}
	require.Equal(t, map[string]float64{"superagent_feishu_longconn_connects_total": 2, "superagent_feishu_longconn_restarts_total": 1}, values)
}

// hostRewrite sends requests for Feishu's and Lark's Open API hosts to the
// fake and records which host each was for.
type hostRewrite struct {
	to    *url.URL
	next  http.RoundTripper
	mu    sync.Mutex
	hosts map[string]int
}

func (h *hostRewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == "open.feishu.cn" || r.URL.Host == "open.larksuite.com" {
		h.mu.Lock()
		h.hosts[r.URL.Host]++
		h.mu.Unlock()
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = h.to.Scheme, h.to.Host
	}
	return h.next.RoundTrip(r)
}

// Both the API client and the long connection use the configured base:
// Feishu's by default, Lark's (international) when set. Not parallel: the
// SDK's long connection uses http.DefaultClient, so the test swaps
// http.DefaultTransport.
func TestFeishuAndLarkBaseURLs(t *testing.T) {
	fakefeishu.SkipUnderRace(t)
	srv := fakefeishu.New(t)
	to, err := url.Parse(srv.URL)
	require.NoError(t, err)
	rw := &hostRewrite{to: to, next: http.DefaultTransport, hosts: map[string]int{}}
	http.DefaultTransport = rw
	t.Cleanup(func() { http.DefaultTransport = rw.next })
	for _, tc := range []struct{ base, host string }{
		{"", "open.feishu.cn"},
		{lark.FeishuBaseUrl, "open.feishu.cn"},
		{lark.LarkBaseUrl + "/", "open.larksuite.com"},
	} {
		rw.mu.Lock()
		clear(rw.hosts)
		rw.mu.Unlock()
		c, err := feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: tc.base}, nil, nil)
		require.NoError(t, err)
		_, err = c.BotInfo(context.Background())
		require.NoError(t, err, tc.base)

		connects := srv.Connects()
		lc, err := feishu.NewLongConn(feishu.LongConnConfig{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: tc.base},
			(&received{}).handle, nil, nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _ = lc.Run(ctx) }()
		require.NoError(t, srv.WaitConnects(waitCtx(t), connects+1))
		cancel()
		rw.mu.Lock()
		// Bot info and the long connection's endpoint at least (the SDK
		// caches the tenant token across clients).
		require.Len(t, rw.hosts, 1, "base %q", tc.base)
		require.GreaterOrEqual(t, rw.hosts[tc.host], 2, "base %q", tc.base)
		rw.mu.Unlock()
	}
}
