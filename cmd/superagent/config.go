package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/superagent-dev/superagent/cmd/superagent/internal/setup"
	"github.com/superagent-dev/superagent/executor"
	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/secret"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/webhooks"
)

// config is everything the service reads from its environment. Only this
// package reads the environment; the parts receive their own Config structs.
type config struct {
	Addr string
	// MetricsAddr is where a worker process serves /metrics, /healthz and
	// /readyz; empty, a worker listens nowhere.
	MetricsAddr string
	DataDir     string
	DatabaseURL string
	AdminToken  string

	GitHubAppID         int64
	GitHubAppSlug       string
	GitHubPrivateKeyPEM []byte
	GitHubWebhookSecret string
	GitHubAPIURL        string
	// GitHubWritesPerMinute and GitHubWritesPerHour pace each
	// installation's writes (0: GitHub's documented 80 and 500).
	GitHubWritesPerMinute, GitHubWritesPerHour int
	// GitHubClientID and GitHubClientSecret are the App's OAuth client
	// credentials (its user authorization: panel sign-in with GitHub and
	// Feishu users linking their login); GitHubWebURL is GitHub's web
	// host for that flow.
	GitHubClientID     string
	GitHubClientSecret string
	GitHubWebURL       string
	// GitHubTriggerLabel is SUPERAGENT_GITHUB_TRIGGER_LABEL: added to an
	// issue by someone who passes the gate, it is an explicit request.
	GitHubTriggerLabel string

	FeishuAppID             string
	FeishuAppSecret         string
	FeishuVerificationToken string
	FeishuEncryptKey        string
	FeishuBaseURL           string
	FeishuMode              string

	ModelBaseURL string
	ModelAPIKey  string
	Model        string
	RouterModel  string
	// ModelPrice and RouterModelPrice price the models' tokens, for the
	// cost in reports and the budgets; nil when not configured.
	ModelPrice       *model.Price
	RouterModelPrice *model.Price
	// ExecutorModel and Router are each role's complete model settings
	// (models.go); TicketCostBudget caps a Ticket's cost, 0 for none.
	ExecutorModel    roleModel
	Router           roleModel
	TicketCostBudget float64

	GateGitHubPermission string
	FeishuAllowedChats   []string
	FeishuAllowedMembers []string
	AdminGitHubLogins    []string
	AdminFeishuIDs       []string
	RoutingDebounce      time.Duration
	// ProposalTTL is SUPERAGENT_PROPOSAL_TTL; negative: never ("off").
	ProposalTTL time.Duration

	Sandbox        workspace.SandboxMode
	SandboxNetwork bool
	// ModelImages is SUPERAGENT_MODEL_IMAGES: the Executor's model is
	// shown the screenshots it takes.
	ModelImages     bool
	SandboxReadOnly []string
	SandboxEgress   []string // SUPERAGENT_SANDBOX_EGRESS, with the network on
	// The sandbox's per-command limits; zero means the workspace
	// package's default.
	SandboxCPUSeconds int
	SandboxMemory     int64
	SandboxProcesses  int
	SandboxDisk       int64
	SandboxFiles      int // SUPERAGENT_SANDBOX_FILES: files and directories of one workspace
	// SetupTimeout and SetupDisk bound a repository's setup run and its
	// cache; zero means the workspace package's default.
	SetupTimeout time.Duration
	SetupDisk    int64
	// SecretsKey is SUPERAGENT_SECRETS_KEY, which seals the repositories'
	// secrets at rest; secretsBox is nil without it.
	SecretsKey       string
	secretsBox       *secret.Box
	ExecutorWallTime time.Duration
	ExecutorLease    time.Duration
	// MCPTimeout is SUPERAGENT_MCP_TIMEOUT: how long a repository's MCP
	// server may take to start or to answer one call.
	MCPTimeout time.Duration
	// ExecutorMaxSteps, ExecutorRepeatLimit and ExecutorStallSteps bound
	// an Executor Session: model requests, the same call with the same
	// result in a row, and requests without progress (0: the defaults,
	// 200, executor.DefaultRepeatLimit and executor.DefaultStallSteps).
	ExecutorMaxSteps    int
	ExecutorRepeatLimit int
	ExecutorStallSteps  int
	// TicketBudget is the tokens a Ticket's Executor Sessions may use
	// together unless a person raised it (defaultTicketBudget; 0: none).
	TicketBudget int64
	ReviewBots   []string

	// localRepos are the local checkouts a `superagent run` works on in
	// place of GitHub (executor.Config.Local); never from the environment.
	localRepos map[string]workspace.Remote

	// PublicURL is SUPERAGENT_PUBLIC_URL, the base of links to Ticket pages.
	PublicURL string

	LogLevel        slog.Level
	SecureCookie    bool
	ShutdownTimeout time.Duration
	RescueAfter     time.Duration

	// scrub knows every secret above (and those minted later, such as the
	// admin token and installation tokens) and removes them from logs,
	// transcripts and tool output.
	scrub *secret.Scrubber
}

// settingError is a bad configuration value: it prints as one line naming
// the setting and the problem.
type settingError struct {
	Name, Problem string
}

func (e *settingError) Error() string { return e.Name + ": " + e.Problem }

// configErrors is every problem found in a configuration, printed on one
// line so that one start shows them all.
type configErrors []error

func (e configErrors) Error() string {
	parts := make([]string, len(e))
	for i, err := range e {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

func (e configErrors) Unwrap() []error { return e }

// loadConfig reads and validates the configuration through getenv.
func loadConfig(getenv func(string) string) (*config, error) {
	// `superagent setup github` stores the App's credentials in the data
	// directory; they apply when the environment names none.
	getenv, err := setup.WithGitHubAppFile(getenv, or(getenv("SUPERAGENT_DATA_DIR"), "./data"))
	if err != nil {
		return nil, &settingError{"SUPERAGENT_DATA_DIR", err.Error()}
	}
	c := &config{
		Addr:                    or(getenv("SUPERAGENT_ADDR"), ":8080"),
		MetricsAddr:             getenv("SUPERAGENT_METRICS_ADDR"),
		DataDir:                 or(getenv("SUPERAGENT_DATA_DIR"), "./data"),
		DatabaseURL:             getenv("SUPERAGENT_DATABASE_URL"),
		AdminToken:              getenv("SUPERAGENT_ADMIN_TOKEN"),
		GitHubWebhookSecret:     getenv("SUPERAGENT_GITHUB_WEBHOOK_SECRET"),
		GitHubAPIURL:            getenv("SUPERAGENT_GITHUB_API_URL"),
		GitHubAppSlug:           getenv("SUPERAGENT_GITHUB_APP_SLUG"),
		GitHubClientID:          strings.TrimSpace(getenv("SUPERAGENT_GITHUB_CLIENT_ID")),
		GitHubClientSecret:      getenv("SUPERAGENT_GITHUB_CLIENT_SECRET"),
		GitHubWebURL:            strings.TrimRight(or(getenv("SUPERAGENT_GITHUB_WEB_URL"), "https://github.com"), "/"),
		GitHubTriggerLabel:      strings.TrimSpace(or(getenv("SUPERAGENT_GITHUB_TRIGGER_LABEL"), webhooks.DefaultTriggerLabel)),
		FeishuAppID:             getenv("SUPERAGENT_FEISHU_APP_ID"),
		FeishuAppSecret:         getenv("SUPERAGENT_FEISHU_APP_SECRET"),
		FeishuVerificationToken: getenv("SUPERAGENT_FEISHU_VERIFICATION_TOKEN"),
		FeishuEncryptKey:        getenv("SUPERAGENT_FEISHU_ENCRYPT_KEY"),
		FeishuBaseURL:           getenv("SUPERAGENT_FEISHU_BASE_URL"),
		FeishuMode:              or(getenv("SUPERAGENT_FEISHU_MODE"), "webhook"),
		ModelBaseURL:            getenv("SUPERAGENT_MODEL_BASE_URL"),
		ModelAPIKey:             getenv("SUPERAGENT_MODEL_API_KEY"),
		Model:                   getenv("SUPERAGENT_MODEL"),
		RouterModel:             getenv("SUPERAGENT_ROUTER_MODEL"),
		GateGitHubPermission:    or(getenv("SUPERAGENT_GATE_GITHUB_PERMISSION"), "write"),
		FeishuAllowedChats:      list(getenv("SUPERAGENT_FEISHU_ALLOWED_CHATS")),
		FeishuAllowedMembers:    list(getenv("SUPERAGENT_FEISHU_ALLOWED_MEMBERS")),
		AdminGitHubLogins:       list(getenv("SUPERAGENT_ADMIN_GITHUB_LOGINS")),
		AdminFeishuIDs:          list(getenv("SUPERAGENT_ADMIN_FEISHU_IDS")),
		Sandbox:                 workspace.SandboxMode(or(getenv("SUPERAGENT_SANDBOX"), string(workspace.SandboxBwrap))),
		SandboxReadOnly:         list(getenv("SUPERAGENT_SANDBOX_READONLY")),
		ReviewBots:              list(getenv("SUPERAGENT_REVIEW_BOTS")),
		PublicURL:               strings.TrimRight(getenv("SUPERAGENT_PUBLIC_URL"), "/"),
	}
	if c.RouterModel == "" {
		c.RouterModel = c.Model
	}
	if c.DatabaseURL == "" {
		c.DatabaseURL = db.DefaultURL(c.DataDir)
	}

	checks := []func() error{
		func() error {
			if c.Model == "" && c.RouterModel != "" {
				return &settingError{"SUPERAGENT_MODEL", "required when SUPERAGENT_ROUTER_MODEL is set: the Executors work the Tickets the main Session routes"}
			}
			return nil
		},
		func() error { return checkAddr("SUPERAGENT_ADDR", c.Addr) },
		func() error {
			if c.MetricsAddr == "" {
				return nil
			}
			return checkAddr("SUPERAGENT_METRICS_ADDR", c.MetricsAddr)
		},
		func() error { return checkDatabaseURL("SUPERAGENT_DATABASE_URL", c.DatabaseURL) },
		func() error {
			if c.AdminToken == "" {
				return nil // generated on first start
			}
			return checkAdminToken("SUPERAGENT_ADMIN_TOKEN", c.AdminToken)
		},
		func() (err error) {
			c.GitHubAppID, err = parseAppID("SUPERAGENT_GITHUB_APP_ID", getenv("SUPERAGENT_GITHUB_APP_ID"))
			return err
		},
		func() (err error) {
			c.GitHubPrivateKeyPEM, err = loadPrivateKey("SUPERAGENT_GITHUB_PRIVATE_KEY", getenv("SUPERAGENT_GITHUB_PRIVATE_KEY"))
			return err
		},
		func() error { return checkBaseURL("SUPERAGENT_GITHUB_API_URL", c.GitHubAPIURL) },
		func() (err error) {
			c.GitHubWritesPerMinute, err = parseCount("SUPERAGENT_GITHUB_WRITES_PER_MINUTE", getenv("SUPERAGENT_GITHUB_WRITES_PER_MINUTE"), "writes")
			return err
		},
		func() (err error) {
			c.GitHubWritesPerHour, err = parseCount("SUPERAGENT_GITHUB_WRITES_PER_HOUR", getenv("SUPERAGENT_GITHUB_WRITES_PER_HOUR"), "writes")
			return err
		},
		func() error { return checkBaseURL("SUPERAGENT_GITHUB_WEB_URL", c.GitHubWebURL) },
		func() error {
			switch {
			case (c.GitHubClientID == "") != (c.GitHubClientSecret == ""):
				return &settingError{"SUPERAGENT_GITHUB_CLIENT_ID", "and SUPERAGENT_GITHUB_CLIENT_SECRET are set together (the App's client id and a client secret, from its settings page)"}
			case c.GitHubClientID != "" && c.PublicURL == "":
				return &settingError{"SUPERAGENT_PUBLIC_URL", "is required with SUPERAGENT_GITHUB_CLIENT_ID: GitHub sends people back to SUPERAGENT_PUBLIC_URL/oauth/github/callback"}
			}
			return nil
		},
		func() error { return checkBaseURL("SUPERAGENT_FEISHU_BASE_URL", c.FeishuBaseURL) },
		func() error { return checkBaseURL("SUPERAGENT_MODEL_BASE_URL", c.ModelBaseURL) },
		func() error {
			if c.FeishuMode != "webhook" && c.FeishuMode != "longconn" {
				return &settingError{"SUPERAGENT_FEISHU_MODE", fmt.Sprintf("must be webhook or longconn, got %q", c.FeishuMode)}
			}
			return nil
		},
		func() error {
			// /webhooks/feishu needs both to authenticate an event, and stays
			// off (404) with one of them only: that is a mistake to report
			// now, not a quiet 404 later.
			if c.FeishuMode != "webhook" || (c.FeishuEncryptKey == "") == (c.FeishuVerificationToken == "") {
				return nil
			}
			set, unset := "SUPERAGENT_FEISHU_ENCRYPT_KEY", "SUPERAGENT_FEISHU_VERIFICATION_TOKEN"
			if c.FeishuEncryptKey == "" {
				set, unset = unset, set
			}
			return &settingError{unset, fmt.Sprintf("required when %s is set: /webhooks/feishu checks both (copy them from the Feishu console, Events & Callbacks → Encryption Strategy)", set)}
		},
		func() error {
			switch v := getenv("SUPERAGENT_SECURE_COOKIE"); v {
			case "", "false", "0":
			case "true", "1":
				c.SecureCookie = true
			default:
				return &settingError{"SUPERAGENT_SECURE_COOKIE", fmt.Sprintf("must be true or false, got %q", v)}
			}
			return nil
		},
		func() error {
			// GitHub's own limit on a label's name.
			if n := len([]rune(c.GitHubTriggerLabel)); n == 0 || n > 50 {
				return &settingError{"SUPERAGENT_GITHUB_TRIGGER_LABEL", fmt.Sprintf("must be a label name of 1 to 50 characters, got %q", c.GitHubTriggerLabel)}
			}
			return nil
		},
		func() error {
			switch c.GateGitHubPermission {
			case "admin", "maintain", "write", "triage", "read":
				return nil
			}
			return &settingError{"SUPERAGENT_GATE_GITHUB_PERMISSION", fmt.Sprintf("must be admin, maintain, write, triage or read, got %q", c.GateGitHubPermission)}
		},
		func() (err error) {
			c.RoutingDebounce, err = parseDuration("SUPERAGENT_ROUTING_DEBOUNCE", getenv("SUPERAGENT_ROUTING_DEBOUNCE"), 2*time.Second)
			return err
		},
		func() (err error) {
			if v := getenv("SUPERAGENT_PROPOSAL_TTL"); v == "off" {
				c.ProposalTTL = -1
				return nil
			}
			c.ProposalTTL, err = parseDuration("SUPERAGENT_PROPOSAL_TTL", getenv("SUPERAGENT_PROPOSAL_TTL"), orchestrator.DefaultProposalTTL)
			return err
		},
		func() (err error) {
			c.LogLevel, err = parseLevel("SUPERAGENT_LOG_LEVEL", getenv("SUPERAGENT_LOG_LEVEL"))
			return err
		},
		func() (err error) {
			c.ShutdownTimeout, err = parseDuration("SUPERAGENT_SHUTDOWN_TIMEOUT", getenv("SUPERAGENT_SHUTDOWN_TIMEOUT"), 30*time.Second)
			return err
		},
		func() (err error) {
			c.RescueAfter, err = parseDuration("SUPERAGENT_JOB_RESCUE_AFTER", getenv("SUPERAGENT_JOB_RESCUE_AFTER"), time.Hour)
			return err
		},
		func() (err error) {
			c.ModelPrice, err = parsePrice("SUPERAGENT_MODEL_PRICE", getenv("SUPERAGENT_MODEL_PRICE"))
			return err
		},
		func() (err error) {
			c.RouterModelPrice, err = parsePrice("SUPERAGENT_ROUTER_MODEL_PRICE", getenv("SUPERAGENT_ROUTER_MODEL_PRICE"))
			if c.RouterModelPrice == nil && getenv("SUPERAGENT_ROUTER_MODEL") == "" {
				c.RouterModelPrice = c.ModelPrice
			}
			return err
		},
		func() error {
			if c.Sandbox != workspace.SandboxBwrap && c.Sandbox != workspace.SandboxNone {
				return &settingError{"SUPERAGENT_SANDBOX", fmt.Sprintf("must be bwrap or none, got %q", c.Sandbox)}
			}
			return nil
		},
		func() error {
			switch v := getenv("SUPERAGENT_SANDBOX_NETWORK"); v {
			case "", "off", "false", "0":
			case "on", "true", "1":
				c.SandboxNetwork = true
			default:
				return &settingError{"SUPERAGENT_SANDBOX_NETWORK", fmt.Sprintf("must be on or off, got %q", v)}
			}
			return nil
		},
		func() error {
			switch v := getenv("SUPERAGENT_MODEL_IMAGES"); v {
			case "", "off", "false", "0":
			case "on", "true", "1":
				c.ModelImages = true
			default:
				return &settingError{"SUPERAGENT_MODEL_IMAGES", fmt.Sprintf("must be on or off, got %q", v)}
			}
			return nil
		},
		func() error {
			c.SandboxEgress = list(getenv("SUPERAGENT_SANDBOX_EGRESS"))
			if len(c.SandboxEgress) > 0 && !c.SandboxNetwork {
				return &settingError{"SUPERAGENT_SANDBOX_EGRESS", "needs SUPERAGENT_SANDBOX_NETWORK=on"}
			}
			if err := workspace.CheckEgress(c.SandboxEgress); err != nil {
				return &settingError{"SUPERAGENT_SANDBOX_EGRESS", strings.ReplaceAll(err.Error(), "\n", "; ")}
			}
			return nil
		},
		func() error {
			var problems []string
			for _, p := range c.SandboxReadOnly {
				if !strings.HasPrefix(p, "/") {
					problems = append(problems, fmt.Sprintf("%q is not an absolute path", p))
				} else if overlaps(p, c.DataDir) {
					problems = append(problems, fmt.Sprintf("%q overlaps the data directory %s, which holds the database and the admin token: the sandbox must not see it", p, c.DataDir))
				}
			}
			if len(problems) > 0 {
				return &settingError{"SUPERAGENT_SANDBOX_READONLY", strings.Join(problems, ", ")}
			}
			return nil
		},
		func() (err error) {
			c.SandboxCPUSeconds, err = parseCount("SUPERAGENT_SANDBOX_CPU_SECONDS", getenv("SUPERAGENT_SANDBOX_CPU_SECONDS"), "seconds")
			return err
		},
		func() (err error) {
			c.SandboxProcesses, err = parseCount("SUPERAGENT_SANDBOX_PROCESSES", getenv("SUPERAGENT_SANDBOX_PROCESSES"), "processes")
			return err
		},
		func() (err error) {
			c.SandboxMemory, err = parseBytes("SUPERAGENT_SANDBOX_MEMORY", getenv("SUPERAGENT_SANDBOX_MEMORY"))
			return err
		},
		func() (err error) {
			c.SandboxDisk, err = parseBytes("SUPERAGENT_SANDBOX_DISK", getenv("SUPERAGENT_SANDBOX_DISK"))
			return err
		},
		func() (err error) {
			c.SandboxFiles, err = parseCount("SUPERAGENT_SANDBOX_FILES", getenv("SUPERAGENT_SANDBOX_FILES"), "files")
			return err
		},
		func() (err error) {
			c.SetupTimeout, err = parseDuration("SUPERAGENT_SETUP_TIMEOUT", getenv("SUPERAGENT_SETUP_TIMEOUT"), 15*time.Minute)
			return err
		},
		func() (err error) {
			c.SetupDisk, err = parseBytes("SUPERAGENT_SETUP_DISK", getenv("SUPERAGENT_SETUP_DISK"))
			return err
		},
		func() error {
			if c.SecretsKey = getenv("SUPERAGENT_SECRETS_KEY"); c.SecretsKey == "" {
				return nil
			}
			key, err := secret.ParseKey(c.SecretsKey)
			if err == nil {
				c.secretsBox, err = secret.NewBox(key)
			}
			if err != nil {
				return &settingError{"SUPERAGENT_SECRETS_KEY", err.Error()}
			}
			return nil
		},
		func() (err error) {
			c.ExecutorWallTime, err = parseDuration("SUPERAGENT_EXECUTOR_WALL_TIME", getenv("SUPERAGENT_EXECUTOR_WALL_TIME"), 2*time.Hour)
			return err
		},
		func() (err error) {
			c.MCPTimeout, err = parseDuration("SUPERAGENT_MCP_TIMEOUT", getenv("SUPERAGENT_MCP_TIMEOUT"), executor.DefaultMCPTimeout)
			return err
		},
		func() (err error) {
			c.ExecutorLease, err = parseDuration("SUPERAGENT_EXECUTOR_LEASE", getenv("SUPERAGENT_EXECUTOR_LEASE"), 2*time.Minute)
			return err
		},
		func() (err error) {
			c.ExecutorMaxSteps, err = parseAtLeast("SUPERAGENT_EXECUTOR_MAX_STEPS", getenv("SUPERAGENT_EXECUTOR_MAX_STEPS"), 1, "model requests")
			return err
		},
		func() (err error) {
			c.ExecutorRepeatLimit, err = parseAtLeast("SUPERAGENT_EXECUTOR_REPEAT_LIMIT", getenv("SUPERAGENT_EXECUTOR_REPEAT_LIMIT"), 2, "calls")
			return err
		},
		func() (err error) {
			c.ExecutorStallSteps, err = parseAtLeast("SUPERAGENT_EXECUTOR_STALL_STEPS", getenv("SUPERAGENT_EXECUTOR_STALL_STEPS"), 2, "model requests")
			return err
		},
		func() error {
			v := getenv("SUPERAGENT_TICKET_TOKEN_BUDGET")
			if v == "" {
				c.TicketBudget = defaultTicketBudget
				return nil
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return &settingError{"SUPERAGENT_TICKET_TOKEN_BUDGET", fmt.Sprintf("must be a number of tokens (0 for none), got %q", v)}
			}
			c.TicketBudget = n
			return nil
		},
	}
	var problems configErrors
	for _, check := range checks {
		if err := check(); err != nil {
			problems = append(problems, err)
		}
	}
	if err := loadModelSettings(c, getenv); err != nil {
		problems = append(problems, err)
	}
	switch len(problems) {
	case 0:
	case 1:
		return nil, problems[0]
	default:
		return nil, problems
	}
	c.scrub = secret.New(c.secrets()...)
	return c, nil
}

// minAdminTokenLength is the shortest admin token accepted.
const minAdminTokenLength = 16

// checkAdminToken refuses an admin token that is short, or blank or holds
// white space or control characters (a pasting mistake, and a header
// cannot carry it whole).
func checkAdminToken(name, tok string) error {
	switch {
	case strings.TrimSpace(tok) == "":
		return &settingError{name, "must not be blank (unset it to generate one)"}
	case strings.IndexFunc(tok, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return &settingError{name, "must not contain spaces or control characters"}
	case utf8.RuneCountInString(tok) < minAdminTokenLength:
		return &settingError{name, fmt.Sprintf("must be at least %d characters (or unset, to generate one)", minAdminTokenLength)}
	}
	return nil
}

// overlaps reports whether one of the paths a and b is the other or inside
// it, once made absolute and, where they exist, free of symbolic links.
func overlaps(a, b string) bool {
	a, b = realPath(a), realPath(b)
	return a == b || within(a, b) || within(b, a)
}

func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// realPath is p absolute and clean, with the symbolic links of its longest
// existing prefix resolved.
func realPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	for dir, rest := abs, ""; ; {
		if resolved, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(resolved, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		dir, rest = parent, filepath.Join(filepath.Base(dir), rest)
	}
}

// secrets lists every secret value the process holds, for scrubbing.
func (c *config) secrets() []string {
	var out []string
	for _, s := range []string{c.AdminToken, c.GitHubWebhookSecret, c.FeishuAppSecret, c.FeishuVerificationToken, c.FeishuEncryptKey, c.ModelAPIKey, c.Router.APIKey, string(c.GitHubPrivateKeyPEM), c.SecretsKey, c.GitHubClientSecret} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// list splits a comma-separated setting, dropping blanks.
func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func checkAddr(name, v string) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return &settingError{name, fmt.Sprintf("must be host:port or :port, got %q", v)}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return &settingError{name, fmt.Sprintf("port must be a number from 0 to 65535, got %q", port)}
	}
	_ = host
	return nil
}

func checkDatabaseURL(name, v string) error {
	switch {
	case strings.HasPrefix(v, "postgres://"), strings.HasPrefix(v, "postgresql://"):
		if _, err := url.Parse(v); err != nil {
			return &settingError{name, "is not a valid URL"}
		}
	case strings.HasPrefix(v, "sqlite://"), !strings.Contains(v, "://"):
	default:
		return &settingError{name, "must start with postgres:// or sqlite://"}
	}
	return nil
}

func checkBaseURL(name, v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &settingError{name, fmt.Sprintf("must be an http:// or https:// URL, got %q", v)}
	}
	return nil
}

func parseAppID(name, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, &settingError{name, fmt.Sprintf("must be a positive integer, got %q", v)}
	}
	return n, nil
}

// loadPrivateKey accepts PEM text or a path to a PEM file and checks that it
// holds an RSA private key, as GitHub issues them.
func loadPrivateKey(name, v string) ([]byte, error) {
	if v == "" {
		return nil, nil
	}
	data := []byte(v)
	if !strings.Contains(v, "-----BEGIN") {
		var err error
		if data, err = os.ReadFile(v); err != nil {
			return nil, &settingError{name, fmt.Sprintf("is neither PEM text nor a readable file: %v", err)}
		}
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, &settingError{name, "holds no PEM block"}
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
		if _, err8 := x509.ParsePKCS8PrivateKey(block.Bytes); err8 != nil {
			return nil, &settingError{name, "is not an RSA private key in PEM form"}
		}
	}
	return data, nil
}

// parseLevel reads one of the four level names. slog would also take
// offsets such as "debug+100", which silence every line.
func parseLevel(name, v string) (slog.Level, error) {
	switch strings.ToLower(v) {
	case "":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, &settingError{name, fmt.Sprintf("must be debug, info, warn or error, got %q", v)}
}

// parseCount reads a positive whole number of unit; empty means 0, the
// default.
func parseCount(name, v, unit string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, &settingError{name, fmt.Sprintf("must be a positive number of %s, got %q", unit, v)}
	}
	return n, nil
}

// parseAtLeast reads a whole number of unit no smaller than least; empty
// means 0, the default.
func parseAtLeast(name, v string, least int, unit string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		return 0, &settingError{name, fmt.Sprintf("must be a number of %s, at least %d, got %q", unit, least, v)}
	}
	return n, nil
}

// parseBytes reads a size such as 8GiB, 512MiB, 64KiB or a plain number of
// bytes; empty means 0, the default.
func parseBytes(name, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	num, mult := v, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}} {
		if rest, ok := strings.CutSuffix(v, u.suffix); ok {
			num, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, &settingError{name, fmt.Sprintf("must be a positive size such as 8GiB, 512MiB or a number of bytes, got %q", v)}
	}
	return n * mult, nil
}

func parseDuration(name, v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, &settingError{name, fmt.Sprintf("must be a positive duration such as 30s or 5m, got %q", v)}
	}
	return d, nil
}

// parsePrice reads "input,cached input,output": prices per million tokens
// in one currency, such as "3,0.3,15". Empty means no price.
func parsePrice(name, v string) (*model.Price, error) {
	if v == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	if len(parts) != 3 {
		return nil, &settingError{name, fmt.Sprintf("must be input,cached-input,output prices per million tokens such as 3,0.3,15, got %q", v)}
	}
	var f [3]float64
	for i, p := range parts {
		n, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || n < 0 {
			return nil, &settingError{name, fmt.Sprintf("must be input,cached-input,output prices per million tokens such as 3,0.3,15, got %q", v)}
		}
		f[i] = n
	}
	return &model.Price{Input: f[0], CachedInput: f[1], Output: f[2]}, nil
}

// defaultTicketBudget is SUPERAGENT_TICKET_TOKEN_BUDGET when unset: ten
// million tokens is a large change with a few rollovers on today's models,
// and bounds what a Ticket that goes round in circles can spend.
const defaultTicketBudget = 10_000_000
