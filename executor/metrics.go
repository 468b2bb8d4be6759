package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/superagent-dev/superagent/internal/metric"
	"github.com/superagent-dev/superagent/session"
)

// metrics of the Executors; with no Registerer they are kept but not
// exported.
type metrics struct {
	runs     *prometheus.CounterVec
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_executor_runs_total",
			Help: "Executor jobs by outcome: finished, busy (another job held the Ticket), cancelled, failed.",
		}, []string{"outcome"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_executor_tool_calls_total",
			Help: "Executor tool calls by tool and result: ok, refused (a host check), error.",
		}, []string{"tool", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "superagent_executor_tool_seconds",
			Help:    "Time an Executor tool's handler took, by tool: with superagent_model_request_seconds, the latency of a step.",
			Buckets: []float64{0.005, 0.02, 0.1, 0.5, 1, 2, 5, 15, 60, 300, 1200},
		}, []string{"tool"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.runs, err = metric.Register(reg, m.runs); err != nil {
		return nil, fmt.Errorf("registering executor metrics: %w", err)
	}
	if m.calls, err = metric.Register(reg, m.calls); err != nil {
		return nil, fmt.Errorf("registering executor metrics: %w", err)
	}
	if m.duration, err = metric.Register(reg, m.duration); err != nil {
		return nil, fmt.Errorf("registering executor metrics: %w", err)
	}
	return m, nil
}

// counted wraps a tool so that each call is counted by its result.
func (m *metrics) counted(t session.Tool) session.Tool {
	check, handler := t.Check, t.Handler
	if check != nil {
		t.Check = func(ctx context.Context, call session.Call) error {
			err := check(ctx, call)
			if err != nil {
				m.calls.WithLabelValues(call.Name, "refused").Inc()
			}
			return err
		}
	}
	t.Handler = func(ctx context.Context, call session.Call) (string, error) {
		began := time.Now()
		out, err := handler(ctx, call)
		m.duration.WithLabelValues(call.Name).Observe(time.Since(began).Seconds())
		var refusal *session.Refusal
		switch {
		case err == nil:
			m.calls.WithLabelValues(call.Name, "ok").Inc()
		case errors.As(err, &refusal):
			m.calls.WithLabelValues(call.Name, "refused").Inc()
		default:
			m.calls.WithLabelValues(call.Name, "error").Inc()
		}
		return out, err
	}
	return t
}

// outcome names how a job ended, for superagent_executor_runs_total.
func outcome(err error) string {
	switch {
	case err == nil:
		return "finished"
	case errors.Is(err, ErrBusy):
		return "busy"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	}
	return "failed"
}

// repository is the Ticket's repository, for the model metrics' label:
// one indexed read beside a model request.
func (e *Executor) repository(ctx context.Context, ticketID int64) string {
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, ticketID)
	if err != nil {
		return ""
	}
	return t.Repo
}
