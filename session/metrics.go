package session

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/superagent-dev/superagent/internal/metric"
)

// Metrics count what the model requests of Sessions use and cost, by
// role, model and repository. The main Session and the Executors share
// one set in a process.
type Metrics struct {
	tokens  *prometheus.CounterVec
	cost    *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// NewMetrics registers the superagent_model_* metrics on reg, or returns
// the set already registered there.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_model_tokens_total",
			Help: "Tokens of model requests by role (main, executor), model, repository (empty for the main Session) and kind (input, cache_read, cache_write, output; reasoning is part of output).",
		}, []string{"role", "model", "repository", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_model_cost_total",
			Help: "Cost of model requests, in the configured prices' currency, by role, model and repository; zero for a model without a price.",
		}, []string{"role", "model", "repository"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "superagent_model_request_seconds",
			Help:    "Time from sending a model request to its complete answer, by role and model.",
			Buckets: []float64{0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256},
		}, []string{"role", "model"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.tokens, err = metric.Register(reg, m.tokens); err != nil {
		return nil, fmt.Errorf("registering model metrics: %w", err)
	}
	if m.cost, err = metric.Register(reg, m.cost); err != nil {
		return nil, fmt.Errorf("registering model metrics: %w", err)
	}
	if m.latency, err = metric.Register(reg, m.latency); err != nil {
		return nil, fmt.Errorf("registering model metrics: %w", err)
	}
	return m, nil
}

// observe counts one answered request.
func (m *Metrics) observe(role Role, modelName, repo string, rec *Request) {
	u := rec.Usage
	for kind, n := range map[string]int64{"input": u.Input, "cache_read": u.CacheRead, "cache_write": u.CacheWrite, "output": u.Output} {
		m.tokens.WithLabelValues(string(role), modelName, repo, kind).Add(float64(n))
	}
	m.cost.WithLabelValues(string(role), modelName, repo).Add(u.Cost)
	m.latency.WithLabelValues(string(role), modelName).Observe(rec.Latency.Seconds())
}

// observe records rec in the runtime's metrics, when it has them.
func (r *Runtime) observe(ctx context.Context, s *Session, rec *Request) {
	if r.cfg.Metrics == nil {
		return
	}
	repo := ""
	if r.cfg.Repository != nil && s.TicketID != 0 {
		repo = r.cfg.Repository(ctx, s.TicketID)
	}
	r.cfg.Metrics.observe(s.Role, r.model.Model(), repo, rec)
}
