package httpserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/httpserver"
)

// serve runs s on a loopback port until the test ends.
func serve(t *testing.T, s *httpserver.Server) net.Listener {
	t.Helper()
	srv := s.HTTPServer(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return ln
}

// The body deadline closes a body that stalls, but a handler that has its
// body (or never had one) may work past it without its context ending, as
// it would under http.Server's ReadTimeout.
func TestBodyReadDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s := httpserver.New(httpserver.Config{BodyReadTimeout: timeout})
	s.Root.Post("/read", s.Handle(func(w http.ResponseWriter, r *http.Request) error {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		select {
		case <-r.Context().Done():
			return fmt.Errorf("context ended after the body was read: %w", r.Context().Err())
		case <-time.After(3 * timeout):
		}
		_, _ = w.Write(b)
		return nil
	}))
	s.Root.Get("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			http.Error(w, "context ended", http.StatusInternalServerError)
		case <-time.After(3 * timeout):
			_, _ = io.WriteString(w, "done")
		}
	})
	ln := serve(t, s)
	base := "http://" + ln.Addr().String()

	t.Run("a handler works past the deadline once it has its body", func(t *testing.T) {
		res, err := http.Post(base+"/read", "text/plain", strings.NewReader("hello"))
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s", b)
		require.Equal(t, "hello", string(b))
	})
	t.Run("a request without a body has no deadline", func(t *testing.T) {
		res, err := http.Get(base + "/slow")
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		require.Equal(t, "done", string(b))
	})
	t.Run("a stalled body is answered 408 and the connection closed", func(t *testing.T) {
		conn, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		start := time.Now()
		_, err = io.WriteString(conn, "POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nhel")
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*timeout)))
		status, err := bufio.NewReader(conn).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "HTTP/1.1 408 Request Timeout", strings.TrimSpace(status))
		_, err = io.Copy(io.Discard, conn)
		require.NoError(t, err, "closed by the server, not by our own read deadline")
		require.Less(t, time.Since(start), 5*timeout)
	})
}

// A response has WriteTimeout to reach the client, counted from its first
// byte: a client that stops reading a page is cut off and the handler's
// write fails. A stream (StreamWrites) is exempt from that total: each of
// its writes gets the timeout of its own, so a live page outlasts it.
func TestWriteDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s := httpserver.New(httpserver.Config{WriteTimeout: timeout})
	wrote := make(chan error, 1)
	s.Root.Get("/big", func(w http.ResponseWriter, _ *http.Request) {
		chunk := make([]byte, 64<<10)
		var err error
		for range 4096 { // 256 MiB, far more than the socket buffers hold
			if _, err = w.Write(chunk); err != nil {
				break
			}
		}
		wrote <- err
	})
	streamed := make(chan error, 1)
	s.Root.Get("/stream", func(w http.ResponseWriter, _ *http.Request) {
		httpserver.StreamWrites(w)
		flusher := w.(http.Flusher)
		for i := range 4 {
			if i > 0 {
				// Events spaced so that the stream outlasts the timeout.
				<-time.After(timeout)
			}
			if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
				streamed <- err
				return
			}
			flusher.Flush()
		}
		streamed <- nil
	})
	s.Root.Get("/quiet", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	ln := serve(t, s)
	base := "http://" + ln.Addr().String()

	t.Run("a client that stops reading is cut off", func(t *testing.T) {
		conn, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		select {
		case err := <-wrote:
			require.Error(t, err, "the handler's write fails")
			require.True(t, httpserver.IsTimeout(err), "at the deadline: %v", err)
		case <-time.After(time.Minute):
			t.Fatal("a client that reads nothing held the response for a minute")
		}
	})
	t.Run("a stream outlasts the timeout", func(t *testing.T) {
		res, err := http.Get(base + "/stream")
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Equal(t, "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\n", string(b))
		require.NoError(t, <-streamed)
	})
	t.Run("a keep-alive connection's next response gets a deadline of its own", func(t *testing.T) {
		c := &http.Client{}
		defer c.CloseIdleConnections()
		for range 3 {
			res, err := c.Get(base + "/quiet")
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			require.Equal(t, http.StatusNoContent, res.StatusCode)
			// Longer than the timeout between requests on one connection.
			<-time.After(2 * timeout)
		}
	})
}
