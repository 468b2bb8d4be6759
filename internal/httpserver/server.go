// Package httpserver is superagent's HTTP plumbing: the chi router with
// request ids, structured access logs, panic recovery and metrics; health,
// readiness and metrics endpoints; the /api group behind the admin
// authenticator; and handlers that return errors carrying a status.
package httpserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config tunes the server. The zero value is the documented default.
type Config struct {
	// Logger receives access logs and handler errors. Default: discarded.
	Logger *slog.Logger
	// Gatherer and Registerer expose and receive metrics. Default: a fresh
	// registry of the server's own.
	Gatherer   prometheus.Gatherer
	Registerer prometheus.Registerer
	// APIBodyLimit caps request bodies under /api. Default 1 MiB.
	APIBodyLimit int64
	// Ready reports whether the service can take work (database reachable,
	// schema migrated). Default: always ready.
	Ready func(ctx context.Context) error
	// Authenticators decide who a request under /api comes from; the first
	// that recognises it wins. Requests none recognises get 401.
	Authenticators []Authenticator
	// AuthLimit limits, per client address, /api requests whose
	// Authorization header no authenticator accepts: past it they get 429
	// with Retry-After. A request with the right credentials always passes.
	// Default: the AttemptLimitConfig defaults (10 at once, then one a
	// minute).
	AuthLimit AttemptLimitConfig
	// Now is the clock of the limit. Default time.Now.
	Now func() time.Time
	// ReadHeaderTimeout bounds reading a request's headers. Default
	// DefaultReadHeaderTimeout (10 seconds).
	ReadHeaderTimeout time.Duration
	// BodyReadTimeout bounds reading a request's body once its headers are
	// in. Default DefaultBodyReadTimeout (30 seconds).
	BodyReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long. Default
	// DefaultIdleTimeout (1 minute).
	IdleTimeout time.Duration
	// WriteTimeout bounds sending a response, from its first byte; a
	// stream's writes each get it (StreamWrites). Default
	// DefaultWriteTimeout (30 seconds).
	WriteTimeout time.Duration
}

// Authenticator recognises the caller of a request.
type Authenticator interface {
	// Authenticate returns the actor's name and true when it recognises the
	// request's credentials.
	Authenticate(r *http.Request) (actor string, ok bool)
}

// Server is the HTTP front of one process.
type Server struct {
	// Root is the router for everything outside /api (webhooks, the panel).
	Root chi.Router
	// API is the authenticated router mounted at /api.
	API chi.Router

	cfg    Config
	logger *slog.Logger
	limit  *AttemptLimit
}

// New builds a server with its fixed endpoints.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registerer == nil || cfg.Gatherer == nil {
		reg := prometheus.NewRegistry()
		cfg.Registerer, cfg.Gatherer = reg, reg
	}
	if cfg.APIBodyLimit <= 0 {
		cfg.APIBodyLimit = 1 << 20
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if cfg.BodyReadTimeout <= 0 {
		cfg.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, logger: cfg.Logger, limit: NewAttemptLimit(cfg.AuthLimit)}
	m := newHTTPMetrics(cfg.Registerer)

	r := chi.NewRouter()
	// The deadlines come first: they need the connection's own
	// ResponseWriter, before any middleware wraps it.
	r.Use(bodyDeadline(cfg.BodyReadTimeout), writeDeadline(cfg.WriteTimeout), middleware.RequestID, s.accessLog(m), s.recoverer)
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", s.Handle(func(w http.ResponseWriter, r *http.Request) error {
		if cfg.Ready != nil {
			if err := cfg.Ready(r.Context()); err != nil {
				return &Error{Status: http.StatusServiceUnavailable, Message: "not ready: " + err.Error(), Err: err}
			}
		}
		WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
		return nil
	}))
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	r.Route("/api", func(api chi.Router) {
		api.Use(s.authenticate, limitBody(cfg.APIBodyLimit))
		api.NotFound(func(w http.ResponseWriter, _ *http.Request) { WriteError(w, http.StatusNotFound, "no such endpoint") })
		s.API = api
	})
	s.Root = r
	return s
}

// ServeHTTP makes the server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.Root.ServeHTTP(w, r) }

type actorKey struct{}

// Actor is the authenticated caller of an /api request, or "".
func Actor(ctx context.Context) string {
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}

// WithActor returns ctx carrying actor, for handlers outside /api that
// authenticate by other means.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, a := range s.cfg.Authenticators {
			if actor, ok := a.Authenticate(r); ok {
				next.ServeHTTP(w, r.WithContext(WithActor(r.Context(), actor)))
				return
			}
		}
		// Only credentials that were sent and refused count: a request
		// without any (a signed-out browser) guesses nothing.
		if r.Header.Get("Authorization") != "" {
			if ok, wait := s.limit.Fail(ClientAddress(r), s.cfg.Now()); !ok {
				SetRetryAfter(w, wait)
				WriteError(w, http.StatusTooManyRequests, "too many wrong tokens from your address: wait before trying again (see Retry-After)")
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="superagent"`)
		WriteError(w, http.StatusUnauthorized, "authentication required: send the admin token as a bearer token")
	})
}

func limitBody(n int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > n {
				WriteError(w, http.StatusRequestEntityTooLarge, "request body too large")
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, n)
			next.ServeHTTP(w, r)
		})
	}
}

// BearerToken authenticates requests that carry the admin token.
type BearerToken struct {
	// Token is the secret; an empty one recognises nobody.
	Token string
	// Actor is the name recorded for changes made with it. Default "admin".
	Actor string
}

var _ Authenticator = BearerToken{}

// Authenticate compares the bearer token in constant time.
func (b BearerToken) Authenticate(r *http.Request) (string, bool) {
	if b.Token == "" {
		return "", false
	}
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	if subtle.ConstantTimeCompare([]byte(h[len(prefix):]), []byte(b.Token)) != 1 {
		return "", false
	}
	if b.Actor == "" {
		return "admin", true
	}
	return b.Actor, true
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(p)
				}
				s.logger.Error("panic in HTTP handler", "panic", p, "path", r.URL.Path, "request_id", middleware.GetReqID(r.Context()))
				WriteError(w, http.StatusInternalServerError, "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func (s *Server) accessLog(m *httpMetrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			route := "unmatched"
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			elapsed := time.Since(start)
			m.observe(r.Method, route, status, elapsed)
			s.logger.LogAttrs(r.Context(), accessLevel(route, status), "http request",
				slog.String("method", methodLabel(r.Method)),
				slog.String("route", route),
				slog.Int("status", status),
				slog.Int("bytes", ww.BytesWritten()),
				slog.Duration("duration", elapsed),
				slog.String("request_id", middleware.GetReqID(r.Context())),
			)
		})
	}
}

// accessLevel is the level of a request's access log line. Probes, metric
// scrapes and webhook deliveries arrive all day and have lifecycle log lines
// of their own (a stored delivery, a card), so their access lines are DEBUG
// unless they failed; everything else is INFO.
func accessLevel(route string, status int) slog.Level {
	if status >= http.StatusInternalServerError {
		return slog.LevelWarn
	}
	switch {
	case route == "/healthz", route == "/readyz", route == "/metrics", strings.HasPrefix(route, "/webhooks/"):
		return slog.LevelDebug
	}
	return slog.LevelInfo
}
