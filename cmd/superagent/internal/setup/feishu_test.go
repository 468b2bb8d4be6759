package setup_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/cmd/superagent/internal/setup"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

func TestCheckFeishu(t *testing.T) {
	const secret = "app-secret-0123456789"
	t.Run("works", func(t *testing.T) {
		fs := fakefeishu.New(t)
		var out strings.Builder
		err := setup.FeishuSetup(context.Background(), setup.FeishuConfig{AppID: fakefeishu.AppID, AppSecret: secret, BaseURL: fs.URL}, &out)
		require.NoError(t, err)
		require.Contains(t, out.String(), fakefeishu.BotName)
		require.Contains(t, out.String(), fakefeishu.BotOpenID)
		tok := fs.RequestsTo(http.MethodPost, "/open-apis/auth/v3/tenant_access_token/internal")
		require.Len(t, tok, 1)
		require.Equal(t, map[string]any{"app_id": fakefeishu.AppID, "app_secret": secret}, tok[0].Body)
		info := fs.RequestsTo(http.MethodGet, "/open-apis/bot/v3/info")
		require.Len(t, info, 1)
		require.Equal(t, "Bearer "+fakefeishu.Token, info[0].Header.Get("Authorization"))
	})
	t.Run("wrong secret", func(t *testing.T) {
		fs := fakefeishu.New(t)
		fs.Fail(http.MethodPost, "/open-apis/auth/v3/tenant_access_token/internal", 1, fakefeishu.Failure{HTTPStatus: 400, Code: 10014, Msg: "app secret invalid"})
		var out strings.Builder
		err := setup.FeishuSetup(context.Background(), setup.FeishuConfig{AppID: fakefeishu.AppID, AppSecret: secret, BaseURL: fs.URL}, &out)
		var fe *setup.FeishuError
		require.True(t, errors.As(err, &fe))
		require.Equal(t, "tenant token", fe.Step)
		require.Equal(t, 10014, fe.Code)
		require.Contains(t, out.String(), "App Secret does not match")
		require.NotContains(t, out.String(), secret)
		require.Empty(t, fs.RequestsTo(http.MethodGet, "/open-apis/bot/v3/info"))
	})
	t.Run("bot capability off", func(t *testing.T) {
		fs := fakefeishu.New(t)
		fs.Fail(http.MethodGet, "/open-apis/bot/v3/info", 1, fakefeishu.Failure{HTTPStatus: 400, Code: 99991672, Msg: "Access denied"})
		_, err := setup.CheckFeishu(context.Background(), setup.FeishuConfig{AppID: fakefeishu.AppID, AppSecret: secret, BaseURL: fs.URL})
		var fe *setup.FeishuError
		require.True(t, errors.As(err, &fe))
		require.Equal(t, "bot info", fe.Step)
		require.Contains(t, fe.Fix, "Bot capability")
	})
	t.Run("not Feishu", func(t *testing.T) {
		srv := http.NewServeMux()
		srv.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "<html>nope</html>", http.StatusNotFound) })
		hs := newServer(t, srv)
		_, err := setup.CheckFeishu(context.Background(), setup.FeishuConfig{AppID: "cli_x", AppSecret: secret, BaseURL: hs})
		require.ErrorContains(t, err, "not Feishu's JSON")
	})
	t.Run("missing settings", func(t *testing.T) {
		_, err := setup.CheckFeishu(context.Background(), setup.FeishuConfig{})
		require.ErrorContains(t, err, "SUPERAGENT_FEISHU_APP_ID and SUPERAGENT_FEISHU_APP_SECRET not set")
	})
}
