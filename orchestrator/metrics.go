package orchestrator

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the main Session; nil-safe when no Registerer is configured.
type metrics struct {
	turns      *prometheus.CounterVec
	latency    prometheus.Histogram
	candidates prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_main_turns_total",
			Help: "Turns of the main Session by outcome (done, error, lease_held); rate() gives turns per hour.",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "superagent_main_turn_seconds",
			Help:    "Duration of one turn of the main Session.",
			Buckets: []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600},
		}),
		candidates: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "superagent_main_candidates_per_request",
			Help:    "Candidates appended to the main Session per routing model request batch.",
			Buckets: []float64{1, 2, 5, 10, 20, 30, 50, 100},
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.turns, m.latency, m.candidates} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering main Session metrics: %w", err)
		}
	}
	return m, nil
}
