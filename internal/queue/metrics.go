package queue

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
)

type metrics struct {
	finished *prometheus.CounterVec
	run      *prometheus.HistogramVec
	wait     *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "superagent_jobs_finished_total",
			Help: "Job runs finished by this process, by kind, queue and outcome.",
		}, []string{"kind", "queue", "outcome"}),
		run: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "superagent_job_run_seconds",
			Help:    "Time a job spent in its worker.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"kind"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "superagent_job_queue_wait_seconds",
			Help:    "Time a job waited between becoming available and starting.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"queue"}),
	}
	for _, c := range []prometheus.Collector{m.finished, m.run, m.wait} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering job metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) consume(events <-chan *river.Event) {
	for ev := range events {
		if ev.Job == nil {
			continue
		}
		m.finished.WithLabelValues(ev.Job.Kind, ev.Job.Queue, string(ev.Kind)).Inc()
		if ev.JobStats != nil {
			m.run.WithLabelValues(ev.Job.Kind).Observe(ev.JobStats.RunDuration.Seconds())
			m.wait.WithLabelValues(ev.Job.Queue).Observe(ev.JobStats.QueueWaitDuration.Seconds())
		}
	}
}
