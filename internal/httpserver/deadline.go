package httpserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"
)

// The server's timeouts. Requests arrive from anyone before they are
// authenticated, so none of them may hold a connection, or the memory
// behind it, for long.
const (
	// DefaultReadHeaderTimeout bounds reading a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultBodyReadTimeout bounds reading a request's body, from the end
	// of its headers to its last byte. GitHub gives up on a delivery after
	// 10 seconds; a 25 MB payload within 30 needs under 1 MB/s.
	DefaultBodyReadTimeout = 30 * time.Second
	// DefaultIdleTimeout closes keep-alive connections that send nothing.
	DefaultIdleTimeout = time.Minute
	// MaxHeaderBytes caps a request's headers (net/http's default is 1 MB).
	MaxHeaderBytes = 64 << 10
)

// HTTPServer returns the http.Server for s: the handler, the timeouts from
// its Config, base as every request's base context, and its error log.
func (s *Server) HTTPServer(base context.Context) *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}
}

// bodyDeadline gives every request body d to arrive, counted from the end
// of its headers. A request without a body gets none (net/http clears the
// connection's deadline once a body is read to its end, so a handler may
// work on past it without its context ending). A stalled body fails its
// read with a timeout (408 through Handle) and the server drops the
// connection rather than wait for the rest.
func bodyDeadline(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body != nil && r.Body != http.NoBody {
				_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
			}
			next.ServeHTTP(w, r)
		})
	}
}

// IsTimeout reports whether err comes from a request body that did not
// arrive within its deadline.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
