package feishu_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/feishu"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

// A private message goes to the person's chat with the bot, addressed by
// their open_id; an open_id of no person of the app is refused.
func TestSendToUser(t *testing.T) {
	c, srv, _ := setup(t)
	ctx := context.Background()
	text, err := feishu.Text("only for you")
	require.NoError(t, err)
	sent, err := c.SendToUser(ctx, "ou_rita", feishu.OutgoingMessage{UUID: "private-1", Content: text})
	require.NoError(t, err)
	require.Equal(t, fakefeishu.P2PChat("ou_rita"), sent.ChatID)
	msgs := srv.Messages()
	require.Len(t, msgs, 1)
	require.Equal(t, "ou_rita", msgs[0].ToOpenID)
	require.Equal(t, "only for you", contentText(t, msgs[0].Content))

	_, err = c.SendToUser(ctx, "oc_a_chat", feishu.OutgoingMessage{UUID: "private-2", Content: text})
	require.ErrorContains(t, err, "99992361")
	require.Empty(t, srv.Violations())
}

// Feishu's web sign-in, against the fake: the page sends the browser back
// with a code, the code says who signed in, once.
func TestSignedInUser(t *testing.T) {
	c, srv, _ := setup(t)
	ctx := context.Background()
	srv.AddUser(fakefeishu.User{OpenID: "ou_rita", Name: "Rita"})
	srv.SignInBrowser("ou_rita")
	redirect := "https://superagent.example.com/oauth/feishu/callback"
	page := c.SignInURL(redirect, "st4te")
	u, err := url.Parse(page)
	require.NoError(t, err)
	require.Equal(t, fakefeishu.AuthorizePath, u.Path)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(page)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusFound, res.StatusCode)
	back, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "superagent.example.com", back.Host)
	require.Equal(t, "st4te", back.Query().Get("state"))

	who, err := c.SignedInUser(ctx, back.Query().Get("code"))
	require.NoError(t, err)
	require.Equal(t, feishu.SignedInUser{OpenID: "ou_rita", UnionID: "on_rita", Name: "Rita"}, who)
	_, err = c.SignedInUser(ctx, back.Query().Get("code"))
	require.ErrorContains(t, err, "20007", "a code works once")
	require.Equal(t, 1, srv.UserTokens())
	require.Empty(t, srv.Violations())
}

// The sign-in page lives on Feishu's accounts host.
func TestSignInURLHost(t *testing.T) {
	for base, want := range map[string]string{
		"https://open.feishu.cn":      "https://accounts.feishu.cn/open-apis/authen/v1/authorize?",
		"https://open.larksuite.com/": "https://accounts.larksuite.com/open-apis/authen/v1/authorize?",
		"http://127.0.0.1:8080":       "http://127.0.0.1:8080/open-apis/authen/v1/authorize?",
	} {
		c, err := feishu.New(feishu.Config{AppID: "cli_x", AppSecret: "s", BaseURL: base}, nil, nil)
		require.NoError(t, err)
		require.Contains(t, c.SignInURL("https://x.example/cb", "s"), want, base)
	}
}
