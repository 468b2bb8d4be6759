package main

import (
	"context"
	"fmt"

	"github.com/superagent-dev/superagent/admin"
	"github.com/superagent-dev/superagent/cmd/superagent/internal/setup"
	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/db"
)

// connections is what the panel's overview shows of the deployment's
// connections: the settings doctor checks, without calling out, each with
// how to fix it. The panel adds what the database last saw of each.
func connections(cfg *config, d *db.DB) func(context.Context) []admin.Connection {
	return func(context.Context) []admin.Connection {
		gh := admin.Connection{Kind: admin.ConnGitHub, Name: "GitHub App",
			Configured: cfg.GitHubAppID != 0 && len(cfg.GitHubPrivateKeyPEM) > 0 && cfg.GitHubWebhookSecret != "",
			Hint:       "run `" + setup.GitHubCommand(cfg.PublicURL) + "`, or set SUPERAGENT_GITHUB_APP_ID, SUPERAGENT_GITHUB_PRIVATE_KEY and SUPERAGENT_GITHUB_WEBHOOK_SECRET; then `superagent doctor`"}
		if gh.Configured {
			gh.Detail = fmt.Sprintf("App %d", cfg.GitHubAppID)
		}
		fs := admin.Connection{Kind: admin.ConnFeishu, Name: "Feishu",
			Configured: cfg.FeishuAppID != "" && cfg.FeishuAppSecret != "",
			Hint:       "set SUPERAGENT_FEISHU_APP_ID and SUPERAGENT_FEISHU_APP_SECRET (and SUPERAGENT_FEISHU_ENCRYPT_KEY for webhooks); `superagent setup feishu` checks them"}
		if fs.Configured {
			fs.Detail = cfg.FeishuAppID + ", " + cfg.FeishuMode
		}
		m := admin.Connection{Kind: admin.ConnModel, Name: "Model", Configured: cfg.Model != "",
			Hint: "set SUPERAGENT_MODEL_BASE_URL, SUPERAGENT_MODEL_API_KEY and SUPERAGENT_MODEL; without a model cards wait as candidates"}
		if m.Configured {
			m.Detail = cfg.Model
			if cfg.RouterModel != cfg.Model {
				m.Detail += ", router " + cfg.RouterModel
			}
		}
		sb := admin.Connection{Kind: admin.ConnSandbox, Name: "Sandbox", Configured: cfg.Sandbox != workspace.SandboxNone,
			Detail: string(cfg.Sandbox), Hint: "install bubblewrap (apt-get install bubblewrap) and leave SUPERAGENT_SANDBOX unset; `none` runs commands without isolation"}
		return []admin.Connection{gh, fs, m, sb,
			{Kind: admin.ConnDatabase, Name: "Database", Configured: true, Detail: string(d.Dialect()),
				Hint: "check SUPERAGENT_DATABASE_URL; `superagent doctor` tests the connection and the migrations"}}
	}
}
