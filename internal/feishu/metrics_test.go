package feishu_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/feishu"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	"github.com/superagent-dev/superagent/internal/testkit/metrictest"
)

func setupMetrics(t *testing.T) (*feishu.Client, *fakefeishu.Server, *fakeClock, *prometheus.Registry) {
	t.Helper()
	srv := fakefeishu.New(t)
	clock := &fakeClock{now: testNow}
	reg := prometheus.NewRegistry()
	c, err := feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: srv.URL, Registerer: reg}, clock, nil)
	require.NoError(t, err)
	return c, srv, clock, reg
}

func TestMetricsRateLimitAndRetry(t *testing.T) {
	c, srv, _, reg := setupMetrics(t)
	ctx := context.Background()
	m := srv.AddMessage(fakefeishu.Message{ChatID: "oc_1", Content: `{"text":"hi"}`})
	srv.RateLimit(http.MethodPost, "/open-apis/im/v1/messages/"+m.ID+"/reactions", 2, 3)

	_, err := c.React(ctx, m.ID, "oc_1", feishu.EmojiOnIt)
	require.NoError(t, err)
	require.Equal(t, 2.0, metrictest.Value(t, reg, "superagent_feishu_rate_limited_total", "operation", "react"))
	require.Equal(t, 2.0, metrictest.Value(t, reg, "superagent_feishu_rate_limit_waits_total", "operation", "react"))
	require.Equal(t, 6.0, metrictest.Value(t, reg, "superagent_feishu_rate_limit_wait_seconds_total", "operation", "react"))
	require.Equal(t, 1.0, metrictest.Value(t, reg, "superagent_feishu_calls_total", "operation", "react", "outcome", "ok"))

	// Still limited after the retries: the call's outcome is rate_limited.
	srv.RateLimit(http.MethodGet, "/open-apis/bot/v3/info", 1, 3600)
	_, err = c.BotInfo(ctx)
	require.Error(t, err)
	require.Equal(t, 1.0, metrictest.Value(t, reg, "superagent_feishu_calls_total", "operation", "bot_info", "outcome", "rate_limited"))
	require.Equal(t, 1.0, metrictest.Value(t, reg, "superagent_feishu_rate_limited_total", "operation", "bot_info"))
	require.Equal(t, 0.0, metrictest.Value(t, reg, "superagent_feishu_rate_limit_waits_total", "operation", "bot_info"))

	srv.Fail(http.MethodGet, "/open-apis/im/v1/messages/", 1, fakefeishu.Failure{Code: 230002, Msg: "no"})
	_, err = c.GetMessage(ctx, m.ID)
	require.Error(t, err)
	require.Equal(t, 1.0, metrictest.Value(t, reg, "superagent_feishu_calls_total", "operation", "get_message", "outcome", "api_error"))
}

func TestMetricsChatPacing(t *testing.T) {
	c, _, clock, reg := setupMetrics(t)
	text, err := feishu.Text("hi")
	require.NoError(t, err)
	for i, chat := range []string{"oc_a", "oc_a", "oc_b", "oc_a"} {
		_, err := c.Send(context.Background(), feishu.OutgoingMessage{UUID: "p" + itoa(i), ChatID: chat, Content: text})
		require.NoError(t, err)
	}
	require.Len(t, clock.Slept(), 2)
	require.Equal(t, 2.0, metrictest.Value(t, reg, "superagent_feishu_chat_pacing_waits_total", "operation", "send"))
	require.InDelta(t, 0.4, metrictest.Value(t, reg, "superagent_feishu_chat_pacing_wait_seconds_total", "operation", "send"), 1e-9)
	require.Equal(t, 4.0, metrictest.Value(t, reg, "superagent_feishu_calls_total", "operation", "send", "outcome", "ok"))
}

func TestMetricsSharedRegistry(t *testing.T) {
	srv := fakefeishu.New(t)
	reg := prometheus.NewRegistry()
	for range 2 {
		_, err := feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: srv.URL, Registerer: reg}, nil, nil)
		require.NoError(t, err)
	}
}
