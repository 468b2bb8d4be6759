package feishu

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkauthen "github.com/larksuite/oapi-sdk-go/v3/service/authen/v1"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
)

// SendToUser posts m privately to the person openID, in their chat with
// the bot (receive_id_type=open_id): what only they should read. Feishu
// refuses a person outside the app's availability. m.ChatID is ignored.
func (c *Client) SendToUser(ctx context.Context, openID string, m OutgoingMessage) (*SentMessage, error) {
	op := "sending privately to " + openID
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if openID == "" {
		return nil, fmt.Errorf("%s: open_id is required", op)
	}
	return c.create(ctx, op, larkim.ReceiveIdTypeOpenId, openID, "user:"+openID, m)
}

// Feishu's web sign-in tells a web page which Feishu user is at the
// browser: SignInURL sends the browser to Feishu, which returns it to
// redirectURI with a code (the redirect URL must be registered under the
// app's Security Settings); SignedInUser turns the code into the person.

// SignInURL is Feishu's sign-in page for this app, on the accounts host
// of the Open API base (accounts.feishu.cn for open.feishu.cn,
// accounts.larksuite.com for Lark; any other base serves it itself).
func (c *Client) SignInURL(redirectURI, state string) string {
	base := strings.TrimRight(c.cfg.BaseURL, "/")
	if u, err := url.Parse(base); err == nil {
		if rest, ok := strings.CutPrefix(u.Host, "open."); ok {
			u.Host = "accounts." + rest
			base = u.String()
		}
	}
	q := url.Values{"client_id": {c.cfg.AppID}, "response_type": {"code"}, "redirect_uri": {redirectURI}, "state": {state}}
	return base + "/open-apis/authen/v1/authorize?" + q.Encode()
}

// SignedInUser is who a sign-in code belongs to.
type SignedInUser struct {
	OpenID  string
	UnionID string
	Name    string
}

// SignedInUser exchanges the sign-in page's code (it works once, for five
// minutes) for a user access token, reads who it belongs to, and drops
// the token. The exchange is authen/v1/oidc/access_token, which Feishu
// now lists as a historical version beside authen/v2/oauth/token; the SDK
// has only the former, and the fake holds its answers to the SDK's types.
func (c *Client) SignedInUser(ctx context.Context, code string) (SignedInUser, error) {
	var tok string
	req := larkauthen.NewCreateOidcAccessTokenReqBuilder().
		Body(larkauthen.NewCreateOidcAccessTokenReqBodyBuilder().GrantType("authorization_code").Code(code).Build()).Build()
	err := c.call(ctx, "signin_token", "exchanging a Feishu sign-in code", "", func(ctx context.Context) (*larkcore.ApiResp, larkcore.CodeError, error) {
		resp, err := c.lark.Authen.OidcAccessToken.Create(ctx, req)
		if err != nil {
			return nil, larkcore.CodeError{}, err
		}
		if resp.Success() {
			if resp.Data == nil || deref(resp.Data.AccessToken) == "" {
				return resp.ApiResp, larkcore.CodeError{Code: -1, Msg: "no access_token in the answer"}, nil
			}
			tok = *resp.Data.AccessToken
		}
		return resp.ApiResp, resp.CodeError, nil
	})
	if err != nil {
		return SignedInUser{}, err
	}
	var who SignedInUser
	err = c.call(ctx, "signin_user", "reading the signed-in Feishu user", "", func(ctx context.Context) (*larkcore.ApiResp, larkcore.CodeError, error) {
		resp, err := c.lark.Authen.UserInfo.Get(ctx, larkcore.WithUserAccessToken(tok))
		if err != nil {
			return nil, larkcore.CodeError{}, err
		}
		if resp.Success() {
			if resp.Data == nil || deref(resp.Data.OpenId) == "" {
				return resp.ApiResp, larkcore.CodeError{Code: -1, Msg: "no open_id in the answer"}, nil
			}
			who = SignedInUser{OpenID: *resp.Data.OpenId, UnionID: deref(resp.Data.UnionId), Name: deref(resp.Data.Name)}
		}
		return resp.ApiResp, resp.CodeError, nil
	})
	return who, err
}
