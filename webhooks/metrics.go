package webhooks

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/superagent-dev/superagent/internal/metric"
)

type metrics struct {
	deliveries *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_webhook_deliveries_total",
			Help: "Webhook deliveries by source, event and outcome (accepted, duplicate, ignored, malformed, rejected, processed, dropped, failed).",
		}, []string{"source", "event", "outcome"}),
	}
	if reg != nil {
		var err error
		if m.deliveries, err = metric.Register(reg, m.deliveries); err != nil {
			return nil, fmt.Errorf("registering webhook metrics: %w", err)
		}
	}
	return m, nil
}

// count records one outcome; event names outside the known set are folded
// into "other" so that a sender cannot grow the label set.
func (m *metrics) count(source, event, outcome string) {
	if source == "github" && !githubEvents[event] && event != "ping" {
		event = "other"
	}
	m.deliveries.WithLabelValues(source, event, outcome).Inc()
}
