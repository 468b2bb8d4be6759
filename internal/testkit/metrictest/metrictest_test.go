package metrictest_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/testkit/metrictest"
)

func TestValue(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "calls_total", Help: "h"}, []string{"op"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "left", Help: "h"})
	reg.MustRegister(c, g)
	c.WithLabelValues("send").Add(3)
	g.Set(7)
	require.Equal(t, 3.0, metrictest.Value(t, reg, "calls_total", "op", "send"))
	require.Zero(t, metrictest.Value(t, reg, "calls_total", "op", "reply"))
	require.Equal(t, 7.0, metrictest.Value(t, reg, "left"))
}
