package doctor

import (
	"context"
	"strings"

	"github.com/superagent-dev/superagent/cmd/superagent/internal/setup"
)

// The endpoint checks say which of the public endpoints `superagent serve`
// answers with these settings, by the same rules the service uses to mount
// them (webhooks.New, admin's oauthReady): an endpoint that is off answers
// 404. They call nothing; TestDoctorEndpointLinesMatchTheService holds them
// to a running binary.

// at is the endpoint's public address, when the public URL is known.
func (d *doctor) at(path string) string {
	if d.cfg.PublicURL == "" {
		return path
	}
	return strings.TrimRight(d.cfg.PublicURL, "/") + path
}

// githubEndpoint: /webhooks/github is on whenever the webhook secret is
// set, since that is all it needs to authenticate a delivery; without the
// App's id and key the deliveries are stored but nothing answers them.
func (d *doctor) githubEndpoint(ctx context.Context) Result {
	c := d.cfg
	switch {
	case c.GitHubWebhookSecret == "" && !d.githubConfigured():
		return skip("off (answers 404): GitHub is not configured")
	case c.GitHubWebhookSecret == "":
		return warn("set SUPERAGENT_GITHUB_WEBHOOK_SECRET to the App's webhook secret (or run `"+setup.GitHubCommand(c.PublicURL)+"`)",
			"off (answers 404): SUPERAGENT_GITHUB_WEBHOOK_SECRET is unset, so no delivery can be authenticated")
	case c.GitHubAppID == 0 || len(c.GitHubPrivateKey) == 0:
		return warn("set SUPERAGENT_GITHUB_APP_ID and SUPERAGENT_GITHUB_PRIVATE_KEY (or run `"+setup.GitHubCommand(c.PublicURL)+"`)",
			"on: %s accepts and stores signed deliveries, but without the App's id and private key nothing is posted back to GitHub", d.at("/webhooks/github"))
	}
	return ok("on: %s accepts deliveries signed with the webhook secret", d.at("/webhooks/github"))
}

// feishuEndpoint: /webhooks/feishu is on when both the verification token
// and the Encrypt Key are set, in either mode.
func (d *doctor) feishuEndpoint(ctx context.Context) Result {
	c := d.cfg
	on := c.FeishuVerificationToken != "" && c.FeishuEncryptKey != ""
	switch {
	case !on && c.FeishuMode == "longconn" && d.feishuConfigured():
		return skip("off (answers 404): not needed, events arrive over the long connection (SUPERAGENT_FEISHU_MODE=longconn)")
	case !on && !d.feishuConfigured() && c.FeishuVerificationToken == "" && c.FeishuEncryptKey == "":
		return skip("off (answers 404): Feishu is not configured")
	case !on:
		return warn("set SUPERAGENT_FEISHU_VERIFICATION_TOKEN and SUPERAGENT_FEISHU_ENCRYPT_KEY (Events & Callbacks → Encryption Strategy), or use SUPERAGENT_FEISHU_MODE=longconn",
			"off (answers 404): it needs both the verification token and the Encrypt Key to authenticate events")
	case c.FeishuAppID == "" || c.FeishuAppSecret == "":
		return warn("set SUPERAGENT_FEISHU_APP_ID and SUPERAGENT_FEISHU_APP_SECRET",
			"on: %s accepts encrypted events, but without the app id and secret nothing is posted back to Feishu", d.at("/webhooks/feishu"))
	case c.FeishuMode == "longconn":
		return ok("on: %s accepts encrypted events, as well as the long connection", d.at("/webhooks/feishu"))
	}
	return ok("on: %s accepts encrypted events", d.at("/webhooks/feishu"))
}

// signInEndpoint: signing in to the panel with GitHub (/admin/signin/github
// and GitHub's return to /oauth/github/callback) needs the App's OAuth
// client and the public URL.
func (d *doctor) signInEndpoint(ctx context.Context) Result {
	c := d.cfg
	if c.GitHubClientID == "" || c.GitHubClientSecret == "" || c.PublicURL == "" {
		var missing []string
		for _, s := range []struct{ name, v string }{
			{"SUPERAGENT_GITHUB_CLIENT_ID", c.GitHubClientID}, {"SUPERAGENT_GITHUB_CLIENT_SECRET", c.GitHubClientSecret}, {"SUPERAGENT_PUBLIC_URL", c.PublicURL},
		} {
			if s.v == "" {
				missing = append(missing, s.name)
			}
		}
		return skip("off (answers 404): signing in with GitHub needs %s (`%s` stores them)", strings.Join(missing, ", "), setup.GitHubCommand(c.PublicURL))
	}
	return ok("on: signing in with GitHub returns to %s (the App's callback URL must be this)", setup.OAuthCallbackURL(c.PublicURL))
}
