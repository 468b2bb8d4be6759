package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/superagent-dev/superagent/cmd/superagent/internal/setup"
	"github.com/superagent-dev/superagent/internal/db"
)

// doctor carries state between checks: the database handle opened by one
// check and used by the next.
type doctor struct {
	cfg   Config
	db    *db.DB
	dbErr error
}

func (d *doctor) close() {
	if d.db != nil {
		_ = d.db.Close()
	}
}

func (d *doctor) githubConfigured() bool {
	return d.cfg.GitHubAppID != 0 || len(d.cfg.GitHubPrivateKey) > 0 || d.cfg.GitHubWebhookSecret != ""
}

func (d *doctor) feishuConfigured() bool {
	return d.cfg.FeishuAppID != "" || d.cfg.FeishuAppSecret != ""
}

// dataDir checks that the data directory can be written and that the
// secret files in it are private.
func (d *doctor) dataDir(ctx context.Context) Result {
	dir := d.cfg.DataDir
	if dir == "" {
		return fail("set SUPERAGENT_DATA_DIR (default ./data)", "no data directory is configured")
	}
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return warn("", "%s does not exist yet; serve creates it on first start", dir)
	}
	if err != nil {
		return fail("check the path and its permissions", "cannot read %s: %v", dir, err)
	}
	if !info.IsDir() {
		return fail("point SUPERAGENT_DATA_DIR at a directory", "%s is not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return fail(fmt.Sprintf("make %s writable by the user that runs superagent (in the container image: uid 65532)", dir),
			"cannot write in %s: %v", dir, err)
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	var loose, paths []string
	for _, name := range []string{setup.GitHubAppEnvFile, setup.GitHubAppKeyFile, "admin-token"} {
		path := filepath.Join(dir, name)
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
			loose = append(loose, fmt.Sprintf("%s (mode %04o)", path, st.Mode().Perm()))
			paths = append(paths, path)
		}
	}
	if len(loose) > 0 {
		return fail("chmod 600 "+strings.Join(paths, " ")+" (they hold secrets)", "others may read %s", strings.Join(loose, ", "))
	}
	return ok("%s is writable and its secret files are private", dir)
}

func (d *doctor) githubSettings(ctx context.Context) Result {
	c := d.cfg
	if !d.githubConfigured() {
		return skip("GitHub is not configured; run `%s` to register an App", setup.GitHubCommand(c.PublicURL))
	}
	var missing []string
	if c.GitHubAppID == 0 {
		missing = append(missing, "SUPERAGENT_GITHUB_APP_ID")
	}
	if len(c.GitHubPrivateKey) == 0 {
		missing = append(missing, "SUPERAGENT_GITHUB_PRIVATE_KEY")
	}
	if c.GitHubWebhookSecret == "" {
		missing = append(missing, "SUPERAGENT_GITHUB_WEBHOOK_SECRET")
	}
	if len(missing) > 0 {
		// What still works is said by the /webhooks/github line.
		return fail("set "+strings.Join(missing, ", ")+" from the App's settings page (or `"+setup.GitHubCommand(c.PublicURL)+"` writes all three to the data directory)",
			"GitHub is partly configured: %s missing", strings.Join(missing, ", "))
	}
	if len(c.GitHubWebhookSecret) < 16 {
		return warn("set a longer webhook secret on the App and in SUPERAGENT_GITHUB_WEBHOOK_SECRET (openssl rand -hex 32)",
			"the webhook secret is only %d characters", len(c.GitHubWebhookSecret))
	}
	return ok("App id %d, private key and webhook secret are set (API %s)", c.GitHubAppID, c.GitHubAPIURL)
}

func (d *doctor) feishuSettings(ctx context.Context) Result {
	c := d.cfg
	if !d.feishuConfigured() {
		if !d.githubConfigured() {
			return warn("configure GitHub (`"+setup.GitHubCommand(c.PublicURL)+"`) or Feishu (SUPERAGENT_FEISHU_APP_ID and _APP_SECRET)",
				"neither GitHub nor Feishu is configured: no work can arrive")
		}
		return skip("Feishu is not configured")
	}
	var missing []string
	if c.FeishuAppID == "" {
		missing = append(missing, "SUPERAGENT_FEISHU_APP_ID")
	}
	if c.FeishuAppSecret == "" {
		missing = append(missing, "SUPERAGENT_FEISHU_APP_SECRET")
	}
	switch c.FeishuMode {
	case "webhook":
		// Without an Encrypt Key Feishu signs nothing, so the endpoint
		// refuses to run; the verifier also requires the token.
		if c.FeishuEncryptKey == "" {
			missing = append(missing, "SUPERAGENT_FEISHU_ENCRYPT_KEY")
		}
		if c.FeishuVerificationToken == "" {
			missing = append(missing, "SUPERAGENT_FEISHU_VERIFICATION_TOKEN")
		}
	case "longconn":
	default:
		return fail("set SUPERAGENT_FEISHU_MODE to webhook or longconn", "unknown Feishu mode %q", c.FeishuMode)
	}
	if len(missing) > 0 {
		fix := "set " + strings.Join(missing, ", ") + " from the developer console (Credentials & Basic Info; Events & Callbacks → Encryption Strategy)"
		if c.FeishuMode == "webhook" {
			fix += ", or use SUPERAGENT_FEISHU_MODE=longconn, which needs neither key nor public URL"
		}
		return fail(fix, "Feishu in %s mode lacks %s", c.FeishuMode, strings.Join(missing, ", "))
	}
	return ok("app %s in %s mode", c.FeishuAppID, c.FeishuMode)
}

func (d *doctor) modelSettings(ctx context.Context) Result {
	c := d.cfg
	var missing []string
	if c.ModelBaseURL == "" {
		missing = append(missing, "SUPERAGENT_MODEL_BASE_URL")
	}
	if c.Model == "" {
		missing = append(missing, "SUPERAGENT_MODEL")
	}
	if len(missing) > 0 {
		return fail("set "+strings.Join(missing, " and ")+" (e.g. https://api.openai.com/v1 and a model name); any OpenAI-compatible endpoint works",
			"no model is configured: %s unset, so no agent can run", strings.Join(missing, " and "))
	}
	if c.ModelAPIKey == "" && !isLocal(c.ModelBaseURL) {
		return warn("set SUPERAGENT_MODEL_API_KEY, unless the endpoint really needs none",
			"no API key for %s; model %s", c.ModelBaseURL, c.Model)
	}
	return ok("%s at %s (router: %s)", c.Model, c.ModelBaseURL, c.RouterModel)
}

func isLocal(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return h == "localhost" || h == "127.0.0.1" || h == "::1" || strings.HasSuffix(h, ".local") || !strings.Contains(h, ".")
}
