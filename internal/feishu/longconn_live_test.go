//go:build !race

// These tests hold a live long connection. The SDK's larkws client has data
// races of its own (configure() rewrites the ping interval and reconnect
// settings while pingLoop reads them, and c.conn is read without its mutex
// in receiveMessageLoop), which the race detector reports against whichever
// test runs next; they are excluded from -race runs for that reason only.

package feishu_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/feishu"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

func TestLongConnDeliversEvents(t *testing.T) {
	srv := fakefeishu.New(t)
	rec := &received{}
	cancel, done := startLongConn(t, srv, rec)
	ctx := waitCtx(t)
	require.NoError(t, srv.WaitConnects(ctx, 1))

	msg := readFixture(t, "im.message.receive_v1.group_mention.json")
	code, err := srv.PushEvent(ctx, msg, 1)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)

	card := readFixture(t, "card.action.trigger.json")
	code, err = srv.PushEvent(ctx, card, 1)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)

	got := rec.all()
	require.Len(t, got, 2)
	require.Equal(t, msg, got[0])
	require.Equal(t, card, got[1])
	// The same parser as the webhook path reads it.
	ev, err := feishu.Parse(got[0], feishu.ParseOptions{})
	require.NoError(t, err)
	require.Equal(t, "@Tom hello", ev.Message.Text)

	// A failing handler is answered with 500, so Feishu redelivers.
	rec.setFail(errors.New("database down"))
	code, err = srv.PushEvent(ctx, readFixture(t, "im.message.receive_v1.p2p.json"), 1)
	require.NoError(t, err)
	require.Equal(t, http.StatusInternalServerError, code)
	rec.setFail(nil)

	// A dropped connection is reopened by the SDK.
	srv.DropConnections()
	require.NoError(t, srv.WaitConnects(ctx, 2))
	require.Eventually(t, func() bool {
		code, err := srv.PushEvent(ctx, readFixture(t, "im.message.receive_v1.p2p.json"), 1)
		return err == nil && code == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)

	// After stopping, events are refused rather than lost.
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("Run did not return after cancel")
	}
	code, err = srv.PushEvent(ctx, msg, 1)
	require.NoError(t, err)
	require.Equal(t, http.StatusInternalServerError, code)
	require.Len(t, rec.all(), 3)
}

// Feishu splits large payloads across frames; the SDK joins them.
func TestLongConnSplitFrames(t *testing.T) {
	srv := fakefeishu.New(t)
	rec := &received{}
	startLongConn(t, srv, rec)
	ctx := waitCtx(t)
	require.NoError(t, srv.WaitConnects(ctx, 1))
	msg := readFixture(t, "extra.im.message.receive_v1.post_thread.json")
	// The SDK (v3.6.1) joins frames in a goroutine per frame and checks
	// then sets its buffer without a lock: two frames handled at once can
	// each start a buffer, and the event is never joined nor answered.
	// Feishu then sends it again, as this does; it arrives once.
	var code int
	var err error
	for range 3 {
		attempt, cancel := context.WithTimeout(ctx, 3*time.Second)
		code, err = srv.PushEvent(attempt, msg, 3)
		cancel()
		if err == nil {
			break
		}
	}
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, [][]byte{msg}, rec.all())
}
