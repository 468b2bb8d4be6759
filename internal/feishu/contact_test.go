package feishu_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/feishu"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

func TestUser(t *testing.T) {
	t.Parallel()
	c, srv, _ := setup(t)
	srv.AddUser(fakefeishu.User{OpenID: "ou_known", Name: "Li Si", EnName: "Si Li"})
	u, err := c.User(context.Background(), "ou_known")
	require.NoError(t, err)
	require.Equal(t, &feishu.User{OpenID: "ou_known", Name: "Li Si", EnName: "Si Li"}, u)

	_, err = c.User(context.Background(), "ou_outside")
	var apiErr *feishu.APIError
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, 41050, apiErr.Code)
}
