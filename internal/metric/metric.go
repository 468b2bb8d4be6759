// Package metric registers Prometheus collectors so that several instances
// of a component in one process (two GitHub clients, say) share one set of
// metrics instead of failing on the second registration.
package metric

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns it, or returns the collector of
// the same type already registered under its name.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}
