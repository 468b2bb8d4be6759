package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/superagent-dev/superagent/cmd/superagent/internal/doctor"
	"github.com/superagent-dev/superagent/cmd/superagent/internal/setup"
)

const setupUsage = `Usage:
  superagent setup github [-public-url URL] [-org ORG] [-name NAME] [-listen ADDR] [-web-url URL] [-workflows] [-overwrite]
      register a GitHub App in one click (GitHub's manifest flow) and store its
      credentials and OAuth client in the data directory; -public-url defaults
      to SUPERAGENT_PUBLIC_URL and is required when that is unset
  superagent setup feishu
      check the Feishu/Lark app credentials: mint a tenant token, read the bot
`

// setupCommand runs `superagent setup …` and returns the exit code.
func setupCommand(ctx context.Context, cfg *config, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, setupUsage)
		return 2
	}
	switch args[0] {
	case "github":
		fs := flag.NewFlagSet("setup github", flag.ContinueOnError)
		fs.SetOutput(stderr)
		publicURL := fs.String("public-url", cfg.PublicURL, "where GitHub reaches this service, e.g. https://agent.example.com (default SUPERAGENT_PUBLIC_URL)")
		org := fs.String("org", "", "register the App under this organisation (default: your own account)")
		name := fs.String("name", "superagent", "the App's proposed name")
		listen := fs.String("listen", setup.DefaultSetupAddr, "address of the local setup page")
		webURL := fs.String("web-url", webDefault(cfg), "GitHub's web root (GitHub Enterprise Server; default SUPERAGENT_GITHUB_WEB_URL, else derived from SUPERAGENT_GITHUB_API_URL)")
		workflows := fs.Bool("workflows", false, "ask for workflows write, so agents may change .github/workflows")
		overwrite := fs.Bool("overwrite", false, "replace an App already stored in the data directory")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 {
			fmt.Fprint(stderr, setupUsage)
			return 2
		}
		g, err := setup.NewGitHub(setup.GitHubConfig{
			PublicURL: *publicURL, DataDir: cfg.DataDir, AppName: *name, Org: *org, Workflows: *workflows,
			APIURL: cfg.GitHubAPIURL, WebURL: *webURL, Addr: *listen, Overwrite: *overwrite,
		})
		if err != nil {
			fmt.Fprintln(stderr, "superagent:", err)
			return 2
		}
		if _, err := g.Run(ctx, stdout); err != nil {
			fmt.Fprintln(stderr, "superagent:", err)
			return 1
		}
		return 0
	case "feishu":
		err := setup.FeishuSetup(ctx, setup.FeishuConfig{AppID: cfg.FeishuAppID, AppSecret: cfg.FeishuAppSecret, BaseURL: cfg.FeishuBaseURL}, stdout)
		if err != nil {
			fmt.Fprintln(stderr, "superagent:", err)
			return 1
		}
		return 0
	}
	fmt.Fprint(stderr, setupUsage)
	return 2
}

// webDefault is SUPERAGENT_GITHUB_WEB_URL when it names another host than
// github.com; empty lets setup derive GitHub Enterprise Server's from the
// API URL.
func webDefault(cfg *config) string {
	if cfg.GitHubWebURL == "https://github.com" {
		return ""
	}
	return cfg.GitHubWebURL
}

// doctorCommand checks every part of the configuration and the services it
// names, and prints what is wrong and how to fix it.
func doctorCommand(ctx context.Context, cfg *config, stdout io.Writer) int {
	failed := doctor.Run(ctx, doctor.Config{
		DataDir:                 cfg.DataDir,
		DatabaseURL:             cfg.DatabaseURL,
		PublicURL:               cfg.PublicURL,
		GitHubClientID:          cfg.GitHubClientID,
		GitHubClientSecret:      cfg.GitHubClientSecret,
		GitHubAppID:             cfg.GitHubAppID,
		GitHubPrivateKey:        cfg.GitHubPrivateKeyPEM,
		GitHubWebhookSecret:     cfg.GitHubWebhookSecret,
		GitHubAPIURL:            cfg.GitHubAPIURL,
		FeishuAppID:             cfg.FeishuAppID,
		FeishuAppSecret:         cfg.FeishuAppSecret,
		FeishuVerificationToken: cfg.FeishuVerificationToken,
		FeishuEncryptKey:        cfg.FeishuEncryptKey,
		FeishuBaseURL:           cfg.FeishuBaseURL,
		FeishuMode:              cfg.FeishuMode,
		ModelBaseURL:            cfg.ModelBaseURL,
		ModelAPIKey:             cfg.ModelAPIKey,
		Model:                   cfg.Model,
		RouterModel:             cfg.RouterModel,
		RouterModelBaseURL:      cfg.Router.BaseURL,
		RouterModelAPIKey:       cfg.Router.APIKey,
		Sandbox:                 string(cfg.Sandbox),
		SandboxNetwork:          cfg.SandboxNetwork,
	}, stdout)
	if failed > 0 {
		return 1
	}
	return 0
}
