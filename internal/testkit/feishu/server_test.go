package feishu_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func call(t *testing.T, srv *fakefeishu.Server, method, path, token string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"))
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, resp.Header, out
}

func TestFakeWireFormat(t *testing.T) {
	srv := fakefeishu.New(t)
	code, _, out := call(t, srv, http.MethodPost, "/open-apis/auth/v3/tenant_access_token/internal", "",
		map[string]string{"app_id": fakefeishu.AppID, "app_secret": "s"})
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]any{"code": 0.0, "msg": "ok", "tenant_access_token": "t-fake", "expire": 7200.0}, out)

	code, _, out = call(t, srv, http.MethodGet, "/open-apis/bot/v3/info", "", nil)
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, 99991663.0, out["code"])

	srv.RateLimit(http.MethodPost, "/open-apis/im/v1/messages", 1, 2)
	msg := map[string]any{"receive_id": "oc_1", "msg_type": "text", "content": `{"text":"hi"}`, "uuid": "u1"}
	code, h, out := call(t, srv, http.MethodPost, "/open-apis/im/v1/messages?receive_id_type=chat_id", fakefeishu.Token, msg)
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, "2", h.Get("x-ogw-ratelimit-reset"))
	require.Equal(t, 99991400.0, out["code"])

	code, _, first := call(t, srv, http.MethodPost, "/open-apis/im/v1/messages?receive_id_type=chat_id", fakefeishu.Token, msg)
	require.Equal(t, http.StatusOK, code)
	_, _, second := call(t, srv, http.MethodPost, "/open-apis/im/v1/messages?receive_id_type=chat_id", fakefeishu.Token, msg)
	require.Equal(t, first["data"], second["data"], "a repeated uuid returns the first message")
	require.Len(t, srv.Messages(), 1)
	require.Len(t, srv.RequestsTo(http.MethodPost, "/open-apis/im/v1/messages"), 3)

	v := srv.Expect(func() {
		code, _, _ = call(t, srv, http.MethodGet, "/open-apis/im/v1/nothing", fakefeishu.Token, nil)
	})
	require.Equal(t, http.StatusNotFound, code)
	require.Len(t, v, 1)
	require.Equal(t, "route: no call in testdata/lark-openapi.json (extracted from @larksuiteoapi/lark-mcp) or handDocumented", v[0].Problem.String())
}

func TestFakeSignedEvent(t *testing.T) {
	at := time.Unix(1700000000, 0)
	plain := []byte(`{"schema":"2.0"}`)
	req := fakefeishu.EventRequest(t, "http://example.invalid/webhooks/feishu", "key", plain, at)
	body, err := io.ReadAll(req.Body)
	require.NoError(t, err)
	require.Equal(t, "1700000000", req.Header.Get("X-Lark-Request-Timestamp"))
	require.Equal(t, fakefeishu.Sign("1700000000", req.Header.Get("X-Lark-Request-Nonce"), "key", body),
		req.Header.Get("X-Lark-Signature"))
	var env map[string]string
	require.NoError(t, json.Unmarshal(body, &env))
	require.NotEmpty(t, env["encrypt"])
}

func TestFakePushWithoutConnection(t *testing.T) {
	srv := fakefeishu.New(t)
	_, err := srv.PushEvent(context.Background(), []byte(`{}`), 1)
	require.ErrorContains(t, err, "no long connection")
}
