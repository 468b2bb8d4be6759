package feishu

import (
	"context"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkcontact "github.com/larksuite/oapi-sdk-go/v3/service/contact/v3"
)

// User is a person as Feishu's contact API describes them.
type User struct {
	OpenID string
	// Name is the display name; EnName the English one, when set.
	Name   string
	EnName string
}

// User fetches a person by open_id (GET
// /open-apis/contact/v3/users/{user_id}?user_id_type=open_id). It needs the
// contact:user.base:readonly scope, and answers only for people in the
// app's contact range: callers treat any failure as "name unknown".
func (c *Client) User(ctx context.Context, openID string) (*User, error) {
	op := "getting user " + openID
	req := larkcontact.NewGetUserReqBuilder().UserId(openID).UserIdType(larkcontact.UserIdTypeGetUserOpenId).Build()
	var out *User
	err := c.call(ctx, "get_user", op, "", func(ctx context.Context) (*larkcore.ApiResp, larkcore.CodeError, error) {
		resp, err := c.lark.Contact.V3.User.Get(ctx, req) //nolint:staticcheck // the version names the call, as contractdoc reads it
		if err != nil {
			return nil, larkcore.CodeError{}, err
		}
		if resp.Success() {
			if resp.Data == nil || resp.Data.User == nil {
				return resp.ApiResp, larkcore.CodeError{Code: -1, Msg: "no user in the answer"}, nil
			}
			u := resp.Data.User
			out = &User{OpenID: deref(u.OpenId), Name: deref(u.Name), EnName: deref(u.EnName)}
			if out.OpenID == "" {
				out.OpenID = openID
			}
		}
		return resp.ApiResp, resp.CodeError, nil
	})
	return out, err
}
