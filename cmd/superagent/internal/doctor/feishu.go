package doctor

import (
	"context"
	"errors"

	"github.com/superagent-dev/superagent/cmd/superagent/internal/setup"
)

// feishuApp mints a tenant token and reads the bot's identity.
func (d *doctor) feishuApp(ctx context.Context) Result {
	c := d.cfg
	if c.FeishuAppID == "" || c.FeishuAppSecret == "" {
		return skip("not checked: the Feishu app id or secret is not set")
	}
	bot, err := setup.CheckFeishu(ctx, setup.FeishuConfig{
		AppID: c.FeishuAppID, AppSecret: c.FeishuAppSecret, BaseURL: c.FeishuBaseURL, HTTPClient: c.HTTPClient,
	})
	if err != nil {
		var fe *setup.FeishuError
		if errors.As(err, &fe) {
			return fail(fe.Fix, "%v", err)
		}
		return fail("", "%v", err)
	}
	return ok("tenant token minted; the bot is %q (open_id %s)", bot.Name, bot.OpenID)
}
