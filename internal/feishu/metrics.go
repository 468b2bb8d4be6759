package feishu

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/superagent-dev/superagent/internal/metric"
)

// metrics of outgoing Feishu calls. The collectors always exist; they are
// only exported when Config.Registerer is set. Chats are not a label: there
// are too many of them.
type metrics struct {
	calls        *prometheus.CounterVec
	rateLimited  *prometheus.CounterVec
	waits        *prometheus.CounterVec
	waitSeconds  *prometheus.CounterVec
	paced        *prometheus.CounterVec
	pacedSeconds *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	op := []string{"operation"}
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_feishu_calls_total",
			Help: "Feishu API calls (retries included in one call) by operation and outcome (ok, rate_limited, api_error, error).",
		}, []string{"operation", "outcome"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_feishu_rate_limited_total",
			Help: "Feishu answers that were rate limits (HTTP 429 or code 99991400), by operation.",
		}, op),
		waits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_feishu_rate_limit_waits_total",
			Help: "Waits for a Feishu rate-limit reset before a retry, by operation.",
		}, op),
		waitSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_feishu_rate_limit_wait_seconds_total",
			Help: "Seconds spent waiting for Feishu rate-limit resets (x-ogw-ratelimit-reset), by operation.",
		}, op),
		paced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_feishu_chat_pacing_waits_total",
			Help: "Feishu calls that waited for their chat's pacing slot (about 5 per second per chat), by operation.",
		}, op),
		pacedSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_feishu_chat_pacing_wait_seconds_total",
			Help: "Seconds Feishu calls spent waiting for their chat's pacing slot, by operation.",
		}, op),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []**prometheus.CounterVec{&m.calls, &m.rateLimited, &m.waits, &m.waitSeconds, &m.paced, &m.pacedSeconds} {
		// Several Clients on one registry share the metrics.
		shared, err := metric.Register(reg, *c)
		if err != nil {
			return nil, fmt.Errorf("registering feishu client metrics: %w", err)
		}
		*c = shared
	}
	return m, nil
}

func (m *metrics) pacing(op string, d time.Duration) {
	if d <= 0 {
		return
	}
	m.paced.WithLabelValues(op).Inc()
	m.pacedSeconds.WithLabelValues(op).Add(d.Seconds())
}

func (m *metrics) waited(op string, d time.Duration) {
	m.waits.WithLabelValues(op).Inc()
	m.waitSeconds.WithLabelValues(op).Add(d.Seconds())
}
