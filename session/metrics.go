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
	// How each model behaves: the host's refusals of its calls, its
	// reminders, the loops and stalls it noted or stopped, and the
	// unusable answers asked again.
	refusals *prometheus.CounterVec
	nudges   *prometheus.CounterVec
	loops    *prometheus.CounterVec
	faults   *prometheus.CounterVec
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
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_model_refusals_total",
			Help: "Tool calls the host refused, by role, model and kind (unknown_tool, bad_json, bad_arguments, host_rule).",
		}, []string{"role", "model", "kind"}),
		nudges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_model_nudges_total",
			Help: "Turns the model ended with work left undone, by role, model and outcome (reminded: the host reminded it once; stopped: it ended the turn again and the host stopped the Session).",
		}, []string{"role", "model", "outcome"}),
		loops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_model_loops_total",
			Help: "Loops the host saw, by role, model, kind (repeated_call, no_progress) and outcome (noted, stopped).",
		}, []string{"role", "model", "kind", "outcome"}),
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_model_faults_total",
			Help: "Unusable answers (no_choices, refusal, truncated, empty, empty_handoff), by role, model, kind and outcome (retried: asked again in place; failed: the Run gave up; accepted: an empty answer taken as the end of the turn).",
		}, []string{"role", "model", "kind", "outcome"}),
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
	for _, c := range []**prometheus.CounterVec{&m.refusals, &m.nudges, &m.loops, &m.faults} {
		if *c, err = metric.Register(reg, *c); err != nil {
			return nil, fmt.Errorf("registering model metrics: %w", err)
		}
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

// count adds one to a behaviour counter of the Session's role and model,
// when the runtime has metrics.
func (r *Runtime) count(c func(*Metrics) *prometheus.CounterVec, s *Session, labels ...string) {
	if r.cfg.Metrics == nil {
		return
	}
	c(r.cfg.Metrics).WithLabelValues(append([]string{string(s.Role), r.model.Model()}, labels...)...).Inc()
}

func refusalsOf(m *Metrics) *prometheus.CounterVec { return m.refusals }
func nudgesOf(m *Metrics) *prometheus.CounterVec   { return m.nudges }
func loopsOf(m *Metrics) *prometheus.CounterVec    { return m.loops }
func faultsOf(m *Metrics) *prometheus.CounterVec   { return m.faults }
