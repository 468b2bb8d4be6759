// Package doctor checks a deployment before (or while) it runs: that the
// settings for each enabled feature are complete, which of the public
// endpoints the service serves with them, that the database answers
// and is migrated, that the GitHub App can authenticate and is installed,
// that the Feishu app's credentials work, and that the model endpoint answers
// a one-token request. Every problem is reported with what is wrong and how to
// fix it; no secret is ever printed.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"time"

	"github.com/superagent-dev/superagent/internal/secret"
)

// Config holds exactly what the checks need; cmd/superagent fills it from its
// own configuration. The zero value of each optional field is the documented
// default; an empty setting means "not configured".
type Config struct {
	DataDir     string // SUPERAGENT_DATA_DIR
	DatabaseURL string // SUPERAGENT_DATABASE_URL, or the SQLite default
	PublicURL   string // SUPERAGENT_PUBLIC_URL

	GitHubAppID         int64  // SUPERAGENT_GITHUB_APP_ID
	GitHubPrivateKey    []byte // PEM, read from SUPERAGENT_GITHUB_PRIVATE_KEY
	GitHubWebhookSecret string // SUPERAGENT_GITHUB_WEBHOOK_SECRET
	GitHubAPIURL        string // SUPERAGENT_GITHUB_API_URL; default https://api.github.com
	GitHubClientID      string // SUPERAGENT_GITHUB_CLIENT_ID
	GitHubClientSecret  string // SUPERAGENT_GITHUB_CLIENT_SECRET

	FeishuAppID             string // SUPERAGENT_FEISHU_APP_ID
	FeishuAppSecret         string // SUPERAGENT_FEISHU_APP_SECRET
	FeishuVerificationToken string // SUPERAGENT_FEISHU_VERIFICATION_TOKEN
	FeishuEncryptKey        string // SUPERAGENT_FEISHU_ENCRYPT_KEY
	FeishuBaseURL           string // SUPERAGENT_FEISHU_BASE_URL; default https://open.feishu.cn
	FeishuMode              string // SUPERAGENT_FEISHU_MODE; default "webhook"

	ModelBaseURL string // SUPERAGENT_MODEL_BASE_URL
	ModelAPIKey  string // SUPERAGENT_MODEL_API_KEY
	Model        string // SUPERAGENT_MODEL
	RouterModel  string // SUPERAGENT_ROUTER_MODEL; default Model
	// RouterModelBaseURL and RouterModelAPIKey are the main Session's
	// endpoint (SUPERAGENT_ROUTER_MODEL_BASE_URL, …_API_KEY); default the
	// Executors'. The caller resolves the key's default.
	RouterModelBaseURL string
	RouterModelAPIKey  string

	Sandbox        string // SUPERAGENT_SANDBOX; default "bwrap"
	SandboxNetwork bool   // SUPERAGENT_SANDBOX_NETWORK=on

	// Timeout bounds each check. Default 15 seconds.
	Timeout time.Duration
	// HTTPClient carries the calls to GitHub, Feishu and the model.
	// Default: a client whose requests end with the check's timeout.
	HTTPClient *http.Client
}

// Status is a check's outcome.
type Status string

// The outcomes, from best to worst. Only Fail counts as a failure.
const (
	OK   Status = "ok"
	Skip Status = "skip" // not configured, or a check it depends on failed
	Warn Status = "warn"
	Fail Status = "FAIL"
)

// Result is one check's outcome. Message says what was found, Fix what to do
// about it (empty when nothing needs doing).
type Result struct {
	Name    string
	Status  Status
	Message string
	Fix     string
}

// Run runs every check, prints one line per check (and its fix) to out and
// returns how many failed.
func Run(ctx context.Context, cfg Config, out io.Writer) (failed int) {
	results := Check(ctx, cfg)
	width := 0
	for _, r := range results {
		width = max(width, len(r.Name))
	}
	warned := 0
	for _, r := range results {
		fmt.Fprintf(out, "%-4s  %-*s  %s\n", r.Status, width, r.Name, r.Message)
		if r.Fix != "" {
			fmt.Fprintf(out, "      %-*s  fix: %s\n", width, "", r.Fix)
		}
		switch r.Status {
		case Fail:
			failed++
		case Warn:
			warned++
		}
	}
	switch {
	case failed == 0 && warned == 0:
		fmt.Fprintln(out, "\nEverything checked is in order.")
	default:
		fmt.Fprintf(out, "\n%d failed, %d warnings.\n", failed, warned)
	}
	return failed
}

// Check runs every check in order and returns the results, with every
// secret the configuration holds scrubbed from their text.
func Check(ctx context.Context, cfg Config) []Result {
	cfg = withDefaults(cfg)
	scrub := newScrubber(cfg)
	d := &doctor{cfg: cfg}
	checks := []struct {
		name string
		run  func(ctx context.Context) Result
	}{
		{"data directory", d.dataDir},
		{"GitHub settings", d.githubSettings},
		{"Feishu settings", d.feishuSettings},
		{"model settings", d.modelSettings},
		{"/webhooks/github", d.githubEndpoint},
		{"/webhooks/feishu", d.feishuEndpoint},
		{"/oauth/github/callback", d.signInEndpoint},
		{"database", d.database},
		{"migrations", d.migrations},
		{"GitHub App", d.githubApp},
		{"Feishu app", d.feishuApp},
		{"model", d.model(cfg.ModelBaseURL, cfg.ModelAPIKey, "SUPERAGENT_MODEL", cfg.Model)},
		{"sandbox", d.sandbox},
		{"MCP servers", d.mcpServers},
	}
	if cfg.RouterModel != cfg.Model || cfg.RouterModelBaseURL != cfg.ModelBaseURL || cfg.RouterModelAPIKey != cfg.ModelAPIKey {
		checks = append(checks, struct {
			name string
			run  func(ctx context.Context) Result
		}{"router model", d.model(cfg.RouterModelBaseURL, cfg.RouterModelAPIKey, "SUPERAGENT_ROUTER_MODEL", cfg.RouterModel)})
	}
	defer d.close()
	var results []Result
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		r := c.run(cctx)
		if r.Status != OK && errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			r.Message += fmt.Sprintf(" (no answer within %s)", cfg.Timeout)
		}
		cancel()
		r.Name = c.name
		r.Message = scrub(r.Message)
		r.Fix = scrub(r.Fix)
		results = append(results, r)
	}
	return results
}

func withDefaults(cfg Config) Config {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.GitHubAPIURL == "" {
		cfg.GitHubAPIURL = "https://api.github.com"
	}
	if cfg.FeishuMode == "" {
		cfg.FeishuMode = "webhook"
	}
	if cfg.RouterModel == "" {
		cfg.RouterModel = cfg.Model
	}
	if cfg.RouterModelBaseURL == "" {
		cfg.RouterModelBaseURL = cfg.ModelBaseURL
		// The Executors' key goes only to the Executors' endpoint.
		if cfg.RouterModelAPIKey == "" {
			cfg.RouterModelAPIKey = cfg.ModelAPIKey
		}
	}
	return cfg
}

// newScrubber hides every secret in cfg from text that came from libraries
// (error messages may quote requests) or quotes a setting: the configured
// secrets, the credentials written into any configured URL, and, in any URL
// the text holds, its user info and secret-looking query values.
func newScrubber(cfg Config) func(string) string {
	known := []string{cfg.GitHubWebhookSecret, string(cfg.GitHubPrivateKey), cfg.GitHubClientSecret, cfg.FeishuAppSecret,
		cfg.FeishuVerificationToken, cfg.FeishuEncryptKey, cfg.ModelAPIKey, cfg.RouterModelAPIKey}
	// A database's user name is a name (postgres, say), not a secret; in
	// an HTTP URL the user is often a key.
	known = append(known, urlCredentials(cfg.DatabaseURL, false)...)
	for _, raw := range []string{cfg.GitHubAPIURL, cfg.FeishuBaseURL, cfg.ModelBaseURL, cfg.RouterModelBaseURL} {
		known = append(known, urlCredentials(raw, true)...)
	}
	s := secret.New(known...)
	return func(text string) string {
		return s.Scrub(redactURLs(text))
	}
}

// urlCredentials returns the password (and, withUser, the user) and the
// secret query values written into raw.
func urlCredentials(raw string, withUser bool) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		if withUser {
			out = append(out, u.User.Username())
		}
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	for k, vs := range u.Query() {
		if secretParam.MatchString(k) {
			out = append(out, vs...)
		}
	}
	return slices.DeleteFunc(out, func(v string) bool { return len(v) < 4 })
}

var (
	// userInfo is the user[:password]@ of a URL.
	userInfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s"'<>]+@`)
	// secretParam names query parameters that usually carry a secret.
	secretParam = regexp.MustCompile(`(?i)key|token|secret|pass|pwd|auth|sig|credential|session|code`)
	// queryParam is one name=value of a query string.
	queryParam = regexp.MustCompile(`([?&;])([A-Za-z0-9_.\-]+)=([^&#\s"'<>)]*)`)
)

// redactURLs replaces, in every URL in text, the user info and the values
// of query parameters named like secrets.
func redactURLs(text string) string {
	text = userInfo.ReplaceAllString(text, "${1}"+secret.Redacted+"@")
	return queryParam.ReplaceAllStringFunc(text, func(m string) string {
		sub := queryParam.FindStringSubmatch(m)
		if !secretParam.MatchString(sub[2]) || sub[3] == "" {
			return m
		}
		return sub[1] + sub[2] + "=" + secret.Redacted
	})
}

func ok(msg string, args ...any) Result {
	return Result{Status: OK, Message: fmt.Sprintf(msg, args...)}
}

func skip(msg string, args ...any) Result {
	return Result{Status: Skip, Message: fmt.Sprintf(msg, args...)}
}

func warn(fix, msg string, args ...any) Result {
	return Result{Status: Warn, Message: fmt.Sprintf(msg, args...), Fix: fix}
}

func fail(fix, msg string, args ...any) Result {
	return Result{Status: Fail, Message: fmt.Sprintf(msg, args...), Fix: fix}
}
