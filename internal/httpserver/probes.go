package httpserver

import "net/http"

// NewProbes is the listener of a process that serves no API and no pages,
// a worker: /healthz, /readyz and /metrics as New serves them, and 404 for
// everything else.
func NewProbes(cfg Config) http.Handler {
	s := New(cfg)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			s.ServeHTTP(w, r)
		default:
			WriteError(w, http.StatusNotFound, "this listener serves /healthz, /readyz and /metrics only")
		}
	})
}
