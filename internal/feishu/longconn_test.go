package feishu_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/feishu"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

type received struct {
	mu     sync.Mutex
	events [][]byte
	fail   error
}

func (r *received) handle(_ context.Context, plain []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.events = append(r.events, plain)
	return nil
}

func (r *received) all() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.events...)
}

func (r *received) setFail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = err
}

func startLongConn(t *testing.T, srv *fakefeishu.Server, rec *received) (context.CancelFunc, <-chan error) {
	t.Helper()
	lc, err := feishu.NewLongConn(feishu.LongConnConfig{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: srv.URL},
		rec.handle, nil, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- lc.Run(ctx) }()
	t.Cleanup(cancel)
	return cancel, done
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestLongConnRefused(t *testing.T) {
	srv := fakefeishu.New(t)
	srv.Fail(http.MethodPost, "/callback/ws/endpoint", 1, fakefeishu.Failure{HTTPStatus: http.StatusOK, Code: 403, Msg: "app forbidden"})
	_, done := startLongConn(t, srv, &received{})
	select {
	case err := <-done:
		require.ErrorContains(t, err, "app forbidden")
	case <-waitCtx(t).Done():
		t.Fatal("Run did not return")
	}
}

func TestNewLongConnValidates(t *testing.T) {
	_, err := feishu.NewLongConn(feishu.LongConnConfig{}, nil, nil, nil)
	require.ErrorContains(t, err, "app id is required")
	require.ErrorContains(t, err, "app secret is required")
	require.ErrorContains(t, err, "event handler is required")
}

func TestLongConnRunAfterCancel(t *testing.T) {
	srv := fakefeishu.New(t)
	lc, err := feishu.NewLongConn(feishu.LongConnConfig{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: srv.URL},
		(&received{}).handle, nil, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, lc.Run(ctx))
	require.Empty(t, srv.Requests(), "no SDK client was started")
}
