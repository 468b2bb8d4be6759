package metric_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/metric"
)

func TestRegisterSharesAnExistingCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "calls_total", Help: "h"}
	first, err := metric.Register(reg, prometheus.NewCounterVec(opts, []string{"op"}))
	require.NoError(t, err)
	second, err := metric.Register(reg, prometheus.NewCounterVec(opts, []string{"op"}))
	require.NoError(t, err)
	require.Same(t, first, second, "the second registration gets the first collector")

	_, err = metric.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "calls_total", Help: "h"}))
	require.Error(t, err, "a collector of another type under the same name is refused")
}
