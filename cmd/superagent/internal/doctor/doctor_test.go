package doctor_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/cmd/superagent/internal/doctor"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
)

const (
	webhookSecret = "whsec-0123456789abcdef0123456789"
	feishuSecret  = "feishu-app-secret-0123456789"
	feishuToken   = "feishu-verification-token-01"
	feishuKey     = "feishu-encrypt-key-0123456789"
	modelKey      = "sk-test-0123456789abcdef"
)

type env struct {
	cfg    doctor.Config
	github *fakegithub.Server
	feishu *fakefeishu.Server
	model  *fakeopenai.Server
	insts  []map[string]any
	hook   map[string]any // GET /app/hook/config
}

// setup returns a configuration under which every check passes, and the
// fakes behind it for the test to break.
func setup(t *testing.T) *env {
	t.Helper()
	gh := fakegithub.New(t)
	// Answers start from GitHub's published examples, which the fake holds
	// them to.
	inst := fakegithub.Overlay(gh.Example("base-installation-items", 0), map[string]any{
		"id": 11, "app_id": 1, "target_type": "Organization", "target_id": 7,
		"account":              fakegithub.Overlay(gh.Example("base-installation-items", 0, "account"), map[string]any{"login": "acme", "id": 7, "type": "Organization"}),
		"repository_selection": "selected", "permissions": map[string]string{"contents": "write"},
		"events": []string{"issues"}, "created_at": "2026-11-01T00:00:00Z", "updated_at": "2026-11-01T00:00:00Z",
		"suspended_at": nil, "suspended_by": nil,
	})
	e := &env{
		github: gh,
		feishu: fakefeishu.New(t),
		model:  fakeopenai.New(t),
		insts:  []map[string]any{inst},
		hook: fakegithub.Overlay(gh.Example("webhook-config"), map[string]any{
			"content_type": "json", "insecure_ssl": "0", "url": "https://agent.example.com/webhooks/github", "secret": "********"}),
	}
	e.github.Handle("GET /app/installations", func(w http.ResponseWriter, r *http.Request) {
		if e.github.AuthorizeApp(w, r) {
			fakegithub.WriteJSON(w, http.StatusOK, e.insts)
		}
	})
	e.github.Handle("GET /app/hook/config", func(w http.ResponseWriter, r *http.Request) {
		if e.github.AuthorizeApp(w, r) {
			fakegithub.WriteJSON(w, http.StatusOK, e.hook)
		}
	})
	e.model.Fallback(fakeopenai.Reply{Content: "O", FinishReason: "length", Usage: fakeopenai.UsageOpenAI(12, 0, 1)})
	e.cfg = doctor.Config{
		DataDir:                 t.TempDir(),
		DatabaseURL:             dbtest.SQLiteURL(t),
		PublicURL:               "https://agent.example.com",
		GitHubAppID:             e.github.AppID,
		GitHubClientID:          e.github.ClientID(),
		GitHubClientSecret:      fakegithub.ClientSecret,
		GitHubPrivateKey:        e.github.PrivateKey(),
		GitHubWebhookSecret:     webhookSecret,
		GitHubAPIURL:            e.github.URL,
		FeishuAppID:             fakefeishu.AppID,
		FeishuAppSecret:         feishuSecret,
		FeishuVerificationToken: feishuToken,
		FeishuEncryptKey:        feishuKey,
		FeishuBaseURL:           e.feishu.URL,
		FeishuMode:              "webhook",
		ModelBaseURL:            e.model.URL(),
		ModelAPIKey:             modelKey,
		Model:                   "gpt-test",
		Timeout:                 5 * time.Second,
	}
	return e
}

// run runs the doctor and returns the results by name and the printed text,
// which must never contain a secret.
func run(t *testing.T, cfg doctor.Config) (map[string]doctor.Result, string, int) {
	t.Helper()
	var out strings.Builder
	failed := doctor.Run(context.Background(), cfg, &out)
	text := out.String()
	t.Log("\n" + text)
	for _, s := range []string{webhookSecret, feishuSecret, feishuToken, feishuKey, modelKey, fakegithub.ClientSecret, "PRIVATE KEY", "s3cret-db-password"} {
		require.NotContains(t, text, s)
	}
	byName := map[string]doctor.Result{}
	for _, r := range doctor.Check(context.Background(), cfg) {
		byName[r.Name] = r
	}
	return byName, text, failed
}

func requireResult(t *testing.T, results map[string]doctor.Result, name string, status doctor.Status, message, fix string) {
	t.Helper()
	r, ok := results[name]
	require.True(t, ok, "no result named %q", name)
	require.Equal(t, status, r.Status, "%s: %s", name, r.Message)
	require.Contains(t, r.Message, message)
	require.Contains(t, r.Fix, fix)
}

func TestAllGood(t *testing.T) {
	t.Parallel()
	e := setup(t)
	results, text, failed := run(t, e.cfg)
	require.Zero(t, failed, text)
	for name, r := range results {
		require.Equal(t, doctor.OK, r.Status, "%s: %s (%s)", name, r.Message, r.Fix)
	}
	require.Contains(t, text, "Everything checked is in order.")
	requireResult(t, results, "GitHub App", doctor.OK, `App "superagent" (id 1): installed on acme; minted an installation token for acme`, "")
	requireResult(t, results, "Feishu app", doctor.OK, fakefeishu.BotOpenID, "")
	requireResult(t, results, "migrations", doctor.OK, "up to date", "")
	require.Positive(t, e.github.TokensIssued())

	// The model check asks for one token with the configured key.
	req := e.model.Last()
	require.Equal(t, "gpt-test", req.Model)
	require.Equal(t, int64(1), req.MaxTokens)
	require.Equal(t, "Bearer "+modelKey, req.Header.Get("Authorization"))
}

func TestSettings(t *testing.T) {
	t.Parallel()
	t.Run("partial GitHub", func(t *testing.T) {
		e := setup(t)
		e.cfg.GitHubPrivateKey, e.cfg.GitHubWebhookSecret = nil, ""
		results, _, failed := run(t, e.cfg)
		requireResult(t, results, "GitHub settings", doctor.Fail, "SUPERAGENT_GITHUB_PRIVATE_KEY, SUPERAGENT_GITHUB_WEBHOOK_SECRET missing", "superagent setup github")
		requireResult(t, results, "GitHub App", doctor.Skip, "not checked", "")
		requireResult(t, results, "/webhooks/github", doctor.Warn, "off (answers 404)", "SUPERAGENT_GITHUB_WEBHOOK_SECRET")
		require.Equal(t, 1, failed)
	})
	t.Run("only the webhook secret", func(t *testing.T) {
		// The endpoint authenticates with the secret alone, so it takes
		// deliveries; the doctor says so, and what is missing.
		e := setup(t)
		e.cfg.GitHubAppID, e.cfg.GitHubPrivateKey = 0, nil
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "GitHub settings", doctor.Fail, "SUPERAGENT_GITHUB_APP_ID, SUPERAGENT_GITHUB_PRIVATE_KEY missing", "")
		requireResult(t, results, "/webhooks/github", doctor.Warn, "on: https://agent.example.com/webhooks/github accepts and stores signed deliveries", "SUPERAGENT_GITHUB_APP_ID")
	})
	t.Run("Feishu webhook mode without encrypt key", func(t *testing.T) {
		e := setup(t)
		e.cfg.FeishuEncryptKey = ""
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "Feishu settings", doctor.Fail, "lacks SUPERAGENT_FEISHU_ENCRYPT_KEY", "SUPERAGENT_FEISHU_MODE=longconn")
	})
	t.Run("Feishu long connection needs no keys", func(t *testing.T) {
		e := setup(t)
		e.cfg.FeishuEncryptKey, e.cfg.FeishuVerificationToken, e.cfg.FeishuMode = "", "", "longconn"
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "Feishu settings", doctor.OK, "longconn mode", "")
		requireResult(t, results, "/webhooks/feishu", doctor.Skip, "off (answers 404): not needed", "")
	})
	t.Run("Feishu keys without the app", func(t *testing.T) {
		e := setup(t)
		e.cfg.FeishuAppID, e.cfg.FeishuAppSecret = "", ""
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "/webhooks/feishu", doctor.Warn, "on: https://agent.example.com/webhooks/feishu accepts encrypted events, but", "SUPERAGENT_FEISHU_APP_ID")
	})
	t.Run("no model", func(t *testing.T) {
		e := setup(t)
		e.cfg.ModelBaseURL, e.cfg.Model = "", ""
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "model settings", doctor.Fail, "SUPERAGENT_MODEL_BASE_URL and SUPERAGENT_MODEL unset", "OpenAI-compatible")
		requireResult(t, results, "model", doctor.Skip, "incomplete", "")

		// A routing turn waits, enqueued while a model was configured: it
		// waits for a process with one, and the doctor says so.
		d, err := db.Open(context.Background(), e.cfg.DatabaseURL, db.Options{})
		require.NoError(t, err)
		seed.WaitingJob(t, d, "route_turn", "routing")
		require.NoError(t, d.Close())
		results, _, _ = run(t, e.cfg)
		requireResult(t, results, "model", doctor.Warn, "1 routing or Executor jobs wait for a process with one", "SUPERAGENT_MODEL")
	})
	t.Run("no source of work", func(t *testing.T) {
		e := setup(t)
		e.cfg.GitHubAppID, e.cfg.GitHubPrivateKey, e.cfg.GitHubWebhookSecret = 0, nil, ""
		e.cfg.FeishuAppID, e.cfg.FeishuAppSecret, e.cfg.FeishuVerificationToken, e.cfg.FeishuEncryptKey = "", "", "", ""
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "GitHub settings", doctor.Skip, "`superagent setup github`", "")
		requireResult(t, results, "Feishu settings", doctor.Warn, "no work can arrive", "`superagent setup github`")
		requireResult(t, results, "/webhooks/github", doctor.Skip, "off (answers 404)", "")
		requireResult(t, results, "/webhooks/feishu", doctor.Skip, "off (answers 404): Feishu is not configured", "")

		// Without SUPERAGENT_PUBLIC_URL every hint gives the flag
		// `setup github` then needs.
		e.cfg.PublicURL = ""
		results, _, _ = run(t, e.cfg)
		requireResult(t, results, "GitHub settings", doctor.Skip, "`superagent setup github -public-url https://<public host>`", "")
		requireResult(t, results, "Feishu settings", doctor.Warn, "no work can arrive", "`superagent setup github -public-url https://<public host>`")
		requireResult(t, results, "/oauth/github/callback", doctor.Skip, "SUPERAGENT_PUBLIC_URL (`superagent setup github -public-url https://<public host>` stores them)", "")
	})
	t.Run("secret files readable by others", func(t *testing.T) {
		e := setup(t)
		path := filepath.Join(e.cfg.DataDir, "github-app.env")
		require.NoError(t, os.WriteFile(path, []byte("x"), 0o644))
		require.NoError(t, os.Chmod(path, 0o644))
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "data directory", doctor.Fail, "others may read "+path+" (mode 0644)", "chmod 600 "+path)
	})
}

func TestDatabase(t *testing.T) {
	t.Parallel()
	t.Run("unreachable PostgreSQL", func(t *testing.T) {
		e := setup(t)
		e.cfg.DatabaseURL = "postgres://superagent:s3cret-db-password@127.0.0.1:1/superagent?sslmode=disable"
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "database", doctor.Fail, "cannot open the database", "SUPERAGENT_DATABASE_URL")
		requireResult(t, results, "migrations", doctor.Skip, "unreachable", "")
	})
	t.Run("missing SQLite file", func(t *testing.T) {
		e := setup(t)
		e.cfg.DatabaseURL = "sqlite://" + filepath.Join(t.TempDir(), "none.db")
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "database", doctor.Fail, "does not exist yet", "superagent migrate")
		require.NoFileExists(t, filepath.Join(t.TempDir(), "none.db"))
	})
	t.Run("pending migrations", func(t *testing.T) {
		e := setup(t)
		path := filepath.Join(t.TempDir(), "fresh.db")
		fresh, err := db.Open(context.Background(), "sqlite://"+path, db.Options{})
		require.NoError(t, err)
		require.NoError(t, fresh.Close())
		e.cfg.DatabaseURL = "sqlite://" + path
		results, _, failed := run(t, e.cfg)
		requireResult(t, results, "database", doctor.OK, "sqlite database answers", "")
		requireResult(t, results, "migrations", doctor.Fail, "migrations are pending", "superagent migrate")
		require.Equal(t, 1, failed)
	})
}

// TestDatabasePostgres runs the database checks against PostgreSQL: a
// migrated database passes, an empty schema has pending migrations.
func TestDatabasePostgres(t *testing.T) {
	t.Parallel()
	base := dbtest.PostgresURL(t)
	t.Run("migrated", func(t *testing.T) {
		e := setup(t)
		e.cfg.DatabaseURL = dbtest.PostgresDatabaseURL(t)
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "database", doctor.OK, "postgres database answers", "")
		requireResult(t, results, "migrations", doctor.OK, "up to date", "")
	})
	t.Run("pending migrations", func(t *testing.T) {
		e := setup(t)
		e.cfg.DatabaseURL = dbtest.SchemaURL(base, dbtest.NewSchema(t))
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "migrations", doctor.Fail, "migrations are pending", "superagent migrate")
	})
}

func TestGitHubApp(t *testing.T) {
	t.Parallel()
	t.Run("key of another App", func(t *testing.T) {
		e := setup(t)
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		require.NoError(t, err)
		e.cfg.GitHubPrivateKey = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "GitHub App", doctor.Fail, "GitHub refused the App's credentials while reading the App", "clock")
	})
	t.Run("not installed", func(t *testing.T) {
		e := setup(t)
		e.insts = []map[string]any{} // GitHub answers [], never null
		results, _, failed := run(t, e.cfg)
		requireResult(t, results, "GitHub App", doctor.Warn, "installed nowhere", "https://github.com/apps/superagent/installations/new")
		require.Zero(t, failed)
	})
	t.Run("suspended", func(t *testing.T) {
		e := setup(t)
		e.insts[0]["suspended_at"] = "2026-11-02T00:00:00Z"
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "GitHub App", doctor.Warn, "every installation is suspended (acme (suspended))", "install the App")
	})
	t.Run("token refused", func(t *testing.T) {
		e := setup(t)
		for range 2 { // Run and Check each mint once
			e.github.FailNext("POST", "/app/installations/11/access_tokens", fakegithub.Fault{Status: http.StatusForbidden, Body: `{"message":"This installation has been suspended"}`})
		}
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "GitHub App", doctor.Fail, "minting a token for installation 11 (acme)", "")
	})
	t.Run("missing permissions and events", func(t *testing.T) {
		e := setup(t)
		app := `{"id":1,"slug":"superagent","html_url":"https://github.com/apps/superagent",
			"permissions":{"contents":"read","pull_requests":"write","issues":"write","checks":"write","metadata":"read","actions":"read"},
			"events":["issues","issue_comment","pull_request","pull_request_review","pull_request_review_comment","pull_request_review_thread","check_run","check_suite","workflow_run"]}`
		e.github.FailNext("GET", "/app", fakegithub.Fault{Status: http.StatusOK, Body: app}, fakegithub.Fault{Status: http.StatusOK, Body: app})
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "GitHub App", doctor.Warn, "the App lacks contents: write, the push event", "Permissions & events")
	})
	t.Run("webhook elsewhere", func(t *testing.T) {
		e := setup(t)
		e.hook["url"] = "https://old.example.com/hooks"
		results, _, failed := run(t, e.cfg)
		requireResult(t, results, "GitHub App", doctor.Warn, "its webhooks go to https://old.example.com/hooks, not to superagent's /webhooks/github", "General → Webhook) make it active with the URL https://agent.example.com/webhooks/github")
		require.Zero(t, failed)
	})
	t.Run("no webhook", func(t *testing.T) {
		e := setup(t)
		for range 2 {
			e.github.FailNext("GET", "/app/hook/config", fakegithub.Fault{Status: http.StatusNotFound, Body: `{"message":"Not Found"}`})
		}
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "GitHub App", doctor.Warn, "the App has no webhook", "/webhooks/github")
	})
	t.Run("unreachable API", func(t *testing.T) {
		e := setup(t)
		e.cfg.GitHubAPIURL = closedURL(t)
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "GitHub App", doctor.Fail, "failed reading the App with its JWT", "reaches "+e.cfg.GitHubAPIURL)
	})
}

func TestFeishuApp(t *testing.T) {
	t.Parallel()
	t.Run("secret refused", func(t *testing.T) {
		e := setup(t)
		e.feishu.Fail(http.MethodPost, "/open-apis/auth/v3/tenant_access_token/internal", 2, fakefeishu.Failure{HTTPStatus: 400, Code: 10014, Msg: "app secret invalid"})
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "Feishu app", doctor.Fail, "feishu tenant token: HTTP 400, code 10014: app secret invalid", "App Secret does not match")
	})
	t.Run("no bot", func(t *testing.T) {
		e := setup(t)
		e.feishu.Fail(http.MethodGet, "/open-apis/bot/v3/info", 2, fakefeishu.Failure{HTTPStatus: 400, Code: 99991672, Msg: "Access denied"})
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "Feishu app", doctor.Fail, "feishu bot info", "Bot capability")
	})
}

func TestModel(t *testing.T) {
	t.Parallel()
	t.Run("key refused", func(t *testing.T) {
		e := setup(t)
		e.model.Push(fakeopenai.Reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key","param":null}}`})
		e.model.Push(fakeopenai.Reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key","param":null}}`})
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "model", doctor.Fail, "refused the API key (HTTP 401): Incorrect API key provided", "SUPERAGENT_MODEL_API_KEY")
	})
	t.Run("unknown model", func(t *testing.T) {
		e := setup(t)
		body := `{"error":{"message":"The model 'gpt-nope' does not exist","type":"invalid_request_error","code":"model_not_found","param":null}}`
		e.model.Push(fakeopenai.Reply{Status: 404, Body: body}, fakeopenai.Reply{Status: 404, Body: body})
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "model", doctor.Fail, "HTTP 404 for model gpt-test", "model name")
	})
	t.Run("router model checked separately", func(t *testing.T) {
		e := setup(t)
		e.cfg.RouterModel = "router-test"
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "router model", doctor.OK, "one-token request", "")
		require.Equal(t, "router-test", e.model.Last().Model)
	})
	t.Run("router model on its own endpoint with its own key", func(t *testing.T) {
		e := setup(t)
		const routerKey = "sk-router-9876543210zyxwvuTSRQ"
		router := fakeopenai.New(t)
		router.Push(fakeopenai.Reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + routerKey + `","type":"invalid_request_error","code":"invalid_api_key","param":null}}`})
		router.Fallback(fakeopenai.Text("OK"))
		e.cfg.RouterModel, e.cfg.RouterModelBaseURL, e.cfg.RouterModelAPIKey = "router-test", router.URL(), routerKey
		results, text, _ := run(t, e.cfg)
		require.NotContains(t, text, routerKey, "the router's key is never printed, even when the endpoint echoes it")
		require.Equal(t, "Bearer "+routerKey, router.Requests()[0].Header.Get("Authorization"))
		requireResult(t, results, "router model", doctor.OK, router.URL()+" answered", "")
		require.Equal(t, "Bearer "+modelKey, e.model.Last().Header.Get("Authorization"), "the Executors' endpoint gets the Executors' key")
	})
	t.Run("unreachable", func(t *testing.T) {
		e := setup(t)
		e.cfg.ModelBaseURL = closedURL(t) + "/v1"
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "model", doctor.Fail, "cannot reach", "SUPERAGENT_MODEL_BASE_URL")
	})
	t.Run("no answer in time", func(t *testing.T) {
		e := setup(t)
		e.cfg.Timeout = time.Second
		e.model.Push(fakeopenai.Reply{Hang: true}, fakeopenai.Reply{Hang: true})
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "model", doctor.Fail, "no answer within 1s", "")
	})
}

// closedURL is the URL of a server that has stopped: connections are refused.
func closedURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

func TestSandbox(t *testing.T) {
	e := setup(t)
	t.Run("bubblewrap", func(t *testing.T) {
		if _, err := exec.LookPath("bwrap"); err != nil && os.Getenv("CI") != "true" {
			t.Skip("bwrap is not installed")
		}
		results, _, _ := run(t, e.cfg)
		requireResult(t, results, "sandbox", doctor.OK, "git and the bubblewrap sandbox work", "")
	})
	t.Run("turned off", func(t *testing.T) {
		cfg := e.cfg
		cfg.Sandbox = "none"
		results, _, _ := run(t, cfg)
		requireResult(t, results, "sandbox", doctor.Warn, "without isolation", "SUPERAGENT_SANDBOX=bwrap")
	})
	t.Run("bubblewrap missing", func(t *testing.T) {
		git, err := exec.LookPath("git")
		require.NoError(t, err)
		bin := t.TempDir()
		require.NoError(t, os.Symlink(git, filepath.Join(bin, "git")))
		t.Setenv("PATH", bin)
		results, _, failed := run(t, e.cfg)
		requireResult(t, results, "sandbox", doctor.Fail, "the command sandbox does not start", "apt-get install bubblewrap")
		require.Positive(t, failed)
	})
	t.Run("network needs slirp4netns", func(t *testing.T) {
		git, err := exec.LookPath("git")
		require.NoError(t, err)
		bin := t.TempDir()
		require.NoError(t, os.Symlink(git, filepath.Join(bin, "git")))
		if bwrap, err := exec.LookPath("bwrap"); err == nil {
			require.NoError(t, os.Symlink(bwrap, filepath.Join(bin, "bwrap")))
		}
		t.Setenv("PATH", bin)
		cfg := e.cfg
		cfg.SandboxNetwork = true
		results, _, failed := run(t, cfg)
		requireResult(t, results, "sandbox", doctor.Fail, "slirp4netns is not on the PATH", "apt-get install slirp4netns")
		require.Positive(t, failed)
	})
	t.Run("no model, no Executor", func(t *testing.T) {
		cfg := e.cfg
		cfg.Model, cfg.RouterModel = "", ""
		results, _, _ := run(t, cfg)
		requireResult(t, results, "sandbox", doctor.Skip, "no model", "")
	})
}

// Credentials written into a URL (user:password@, or a key in the query
// string) are never printed, whether the check passes or fails and
// whichever URL holds them.
func TestCredentialsInURLsAreNotPrinted(t *testing.T) {
	t.Parallel()
	secrets := []string{"url-user-7f3a", "url-pass-9b1c", "query-key-4e2d", "query-token-8a6f", "pg-query-pass-2c5e"}
	withCredentials := func(raw string) string {
		return strings.Replace(raw, "://", "://url-user-7f3a:url-pass-9b1c@", 1) + "?api-key=query-key-4e2d&access_token=query-token-8a6f"
	}
	check := func(t *testing.T, cfg doctor.Config) string {
		t.Helper()
		_, text, _ := run(t, cfg)
		for _, s := range secrets {
			require.NotContains(t, text, s)
		}
		return text
	}
	t.Run("model URL, answering", func(t *testing.T) {
		e := setup(t)
		e.cfg.ModelBaseURL = withCredentials(e.model.URL())
		text := check(t, e.cfg)
		require.Contains(t, text, "://[REDACTED]@127.0.0.1")
		require.Contains(t, text, "api-key=[REDACTED]")
	})
	t.Run("model URL, unreachable", func(t *testing.T) {
		e := setup(t)
		e.cfg.ModelBaseURL = withCredentials(closedURL(t) + "/v1")
		require.Contains(t, check(t, e.cfg), "cannot reach")
	})
	t.Run("GitHub and Feishu URLs", func(t *testing.T) {
		e := setup(t)
		e.cfg.GitHubAPIURL = withCredentials(e.github.URL)
		e.cfg.FeishuBaseURL = withCredentials(e.feishu.URL)
		// The SDK appends its paths after the query, so what reaches the
		// fake is no documented call: expected here.
		e.feishu.Expect(func() { check(t, e.cfg) })
	})
	t.Run("database URL with a password in the query", func(t *testing.T) {
		e := setup(t)
		e.cfg.DatabaseURL = "postgres://superagent@" + strings.TrimPrefix(closedURL(t), "http://") + "/x?sslmode=disable&password=pg-query-pass-2c5e"
		check(t, e.cfg)
	})
}
