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
	// DefaultWriteTimeout bounds sending a response, from its first byte
	// to its last, so that a client that stops reading does not hold the
	// connection, its goroutine and its buffers. It is counted from the
	// first write, not the request: a handler may work long (a draft tried
	// on recorded model requests) before it answers.
	DefaultWriteTimeout = 30 * time.Second
	// MaxHeaderBytes caps a request's headers (net/http's default is 1 MB).
	MaxHeaderBytes = 64 << 10
)

// HTTPServer returns the http.Server for s: the handler, the timeouts from
// its Config, base as every request's base context, and its error log.
// The body and write timeouts are set per request by the handler
// (bodyDeadline, writeDeadline), not here: http.Server's own would count
// from the request and cut off streams.
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

// writeDeadline gives every response d to reach the client, counted from
// its first write (see deadlineWriter). It must wrap the connection's own
// ResponseWriter.
func writeDeadline(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}
			// A keep-alive connection keeps the last response's deadline:
			// clear it until this response writes.
			_ = dw.rc.SetWriteDeadline(time.Time{})
			defer dw.finish()
			next.ServeHTTP(dw, r)
		})
	}
}

// deadlineWriter sets the connection's write deadline: d after the
// response's first byte, or for a stream d after each write.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	d       time.Duration
	started bool
	stream  bool
}

func (w *deadlineWriter) arm() {
	if w.started && !w.stream {
		return
	}
	w.started = true
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
}

// finish arms the deadline for what net/http writes after the handler
// returns (the headers of a response that wrote nothing, a stream's last
// bytes).
func (w *deadlineWriter) finish() {
	if !w.started || w.stream {
		w.started, w.stream = false, false
		w.arm()
	}
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.arm()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(b)
}

// Flush sends what is buffered (http.Flusher).
func (w *deadlineWriter) Flush() {
	w.arm()
	_ = w.rc.Flush()
}

// Unwrap is the connection's ResponseWriter, for http.ResponseController.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// StreamWrites exempts the response w from the write deadline's total, for
// a stream that lasts as long as its page: each of its writes then gets
// the deadline of its own, so a client that stops reading a stream is
// still cut off once a write stalls that long. Call it before writing.
func StreamWrites(w http.ResponseWriter) {
	for {
		if dw, ok := w.(*deadlineWriter); ok {
			dw.stream = true
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}
