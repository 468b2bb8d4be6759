package webhooks_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/webhooks"
)

// readsStarted counts requests whose handler began reading the body.
type readsStarted struct {
	io.ReadCloser
	n    *atomic.Int64
	once bool
}

func (b *readsStarted) Read(p []byte) (int, error) {
	if !b.once {
		b.once = true
		b.n.Add(1)
	}
	return b.ReadCloser.Read(p)
}

// Connections that announce the largest body the endpoints take, send a
// few bytes of it and stall hold no memory to speak of, and the server
// closes them once the body deadline passes. Not parallel: it measures the
// heap, which other tests would move. No database is reached before a
// signature checks out, so one database is enough.
func TestStalledBodiesHoldNoMemoryAndAreClosed(t *testing.T) {
	const (
		githubConns, feishuConns = 40, 10
		timeout                  = 2 * time.Second
	)
	e := setup(t, dbtest.SQLite(t), func(c *webhooks.Config) {
		c.Feishu.Verifier.VerificationToken, c.Feishu.Verifier.EncryptKey = "verification-token", "encrypt-key"
	})
	hs := httpserver.New(httpserver.Config{BodyReadTimeout: timeout})
	var reading atomic.Int64
	e.svc.Routes(hs.Root.With(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = &readsStarted{ReadCloser: r.Body, n: &reading}
			next.ServeHTTP(w, r)
		})
	}))
	srv := hs.HTTPServer(context.Background())
	var gone atomic.Int64
	srv.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			gone.Add(1)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		// A closed connection's goroutine lingers half a second after its
		// FIN (net/http's reset avoidance); wait for it, for goleak.
		deadline := time.Now().Add(10 * time.Second)
		for gone.Load() < githubConns+feishuConns && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	})

	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	idle := heap()

	type outcome struct {
		status string
		after  time.Duration
	}
	closed := make(chan outcome, githubConns+feishuConns)
	start := time.Now()
	stall := func(path string, length int, headers string) {
		conn, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n{\"action\":", path, length, headers)
		require.NoError(t, err)
		go func() {
			status, _ := bufio.NewReader(conn).ReadString('\n')
			_, _ = io.Copy(io.Discard, conn) // until the server closes it
			closed <- outcome{strings.TrimSpace(status), time.Since(start)}
		}()
	}
	for i := range githubConns {
		stall("/webhooks/github", webhooks.DefaultGitHubMaxBody, fmt.Sprintf(
			"X-GitHub-Event: issues\r\nX-GitHub-Delivery: stalled-%d\r\nX-Hub-Signature-256: sha256=%s\r\n", i, strings.Repeat("ab", 32)))
	}
	for range feishuConns {
		stall("/webhooks/feishu", 1<<20, "")
	}

	deadline := time.Now().Add(timeout / 2)
	for reading.Load() < githubConns+feishuConns {
		require.True(t, time.Now().Before(deadline), "only %d of %d handlers reached the body", reading.Load(), githubConns+feishuConns)
		time.Sleep(time.Millisecond)
	}
	held := heap()
	grown := int64(held) - int64(idle)
	t.Logf("heap: %.1f MiB idle, %.1f MiB with %d stalled bodies (%+.2f MiB)",
		float64(idle)/(1<<20), float64(held)/(1<<20), githubConns+feishuConns, float64(grown)/(1<<20))
	require.Less(t, grown, int64(50<<20), "stalled bodies must not reserve what their Content-Length claims")

	for range githubConns + feishuConns {
		select {
		case o := <-closed:
			require.Equal(t, "HTTP/1.1 408 Request Timeout", o.status)
			require.Less(t, o.after, timeout+5*time.Second)
		case <-time.After(timeout + 10*time.Second):
			t.Fatalf("the server kept stalled connections open past the body deadline of %s", timeout)
		}
	}
}
