package setup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Files written by the GitHub manifest flow, inside the data directory.
const (
	GitHubAppEnvFile = "github-app.env"
	GitHubAppKeyFile = "github-app.pem"
)

// Environment variable names the App file holds (README.md#configuration), plus the slug,
// which the service does not need but people do.
const (
	EnvGitHubAppID         = "SUPERAGENT_GITHUB_APP_ID"
	EnvGitHubPrivateKey    = "SUPERAGENT_GITHUB_PRIVATE_KEY"
	EnvGitHubWebhookSecret = "SUPERAGENT_GITHUB_WEBHOOK_SECRET"
	EnvGitHubAPIURL        = "SUPERAGENT_GITHUB_API_URL"
	EnvGitHubAppSlug       = "SUPERAGENT_GITHUB_APP_SLUG"
	EnvGitHubClientID      = "SUPERAGENT_GITHUB_CLIENT_ID"
	EnvGitHubClientSecret  = "SUPERAGENT_GITHUB_CLIENT_SECRET"
	EnvGitHubWebURL        = "SUPERAGENT_GITHUB_WEB_URL"
	EnvPublicURL           = "SUPERAGENT_PUBLIC_URL"
)

// appCredentialVars are the settings that must come from one place: an App
// id from the environment with a key from the file would never authenticate.
var appCredentialVars = []string{EnvGitHubAppID, EnvGitHubPrivateKey, EnvGitHubWebhookSecret}

// GitHubApp is what GitHub returns for a newly registered App, as far as the
// service needs it.
type GitHubApp struct {
	ID            int64
	Slug          string
	Name          string
	HTMLURL       string // the App's page on GitHub
	Owner         string // the account (user or organisation) that owns it
	PrivateKeyPEM []byte
	WebhookSecret string
	// ClientID and ClientSecret are the App's OAuth client, which signs
	// people in to the panel with GitHub. GitHub shows the secret once,
	// in the manifest conversion's answer.
	ClientID     string
	ClientSecret string
}

// AppSite is where an App registered by the manifest flow lives: the
// addresses the service needs to reach GitHub and to be reached.
type AppSite struct {
	// APIURL is the REST API root; recorded when it is not GitHub.com's.
	APIURL string
	// WebURL is GitHub's web root (the OAuth pages); recorded when it is
	// not https://github.com.
	WebURL string
	// PublicURL is the service's public address the App was registered
	// with: its webhook and OAuth callback URLs start with it, so the
	// service must build the same ones. Recorded when set.
	PublicURL string
}

// WriteGitHubAppFile stores app in dataDir: the private key in
// github-app.pem and the settings in github-app.env, both mode 0600, each
// written to a temporary file and renamed so a crash leaves no half file.
// The site's addresses are recorded as AppSite says. It refuses to replace
// existing files unless overwrite is set: the old key would be lost while its
// App lives on.
func WriteGitHubAppFile(dataDir string, app *GitHubApp, site AppSite, overwrite bool, now time.Time) error {
	if !overwrite {
		if err := checkNoAppFile(dataDir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("creating data directory %s: %w", dataDir, err)
	}
	if err := writePrivate(filepath.Join(dataDir, GitHubAppKeyFile), app.PrivateKeyPEM); err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by `superagent setup github` on %s for the GitHub App %q (%s).\n", now.UTC().Format(time.RFC3339), app.Slug, app.HTMLURL)
	fmt.Fprintf(&b, "# The service reads this file when SUPERAGENT_GITHUB_APP_ID, _PRIVATE_KEY and _WEBHOOK_SECRET are all unset;\n")
	fmt.Fprintf(&b, "# then each value here applies where the environment leaves the setting unset. Keep it private (mode 0600).\n")
	fmt.Fprintf(&b, "%s=%d\n", EnvGitHubAppID, app.ID)
	fmt.Fprintf(&b, "%s=%s\n", EnvGitHubAppSlug, app.Slug)
	// A relative path: LoadGitHubAppFile resolves it against the data
	// directory, so the directory can move (or be mounted elsewhere).
	fmt.Fprintf(&b, "%s=%s\n", EnvGitHubPrivateKey, GitHubAppKeyFile)
	fmt.Fprintf(&b, "%s=%s\n", EnvGitHubWebhookSecret, app.WebhookSecret)
	if app.ClientID != "" && app.ClientSecret != "" {
		fmt.Fprintf(&b, "%s=%s\n", EnvGitHubClientID, app.ClientID)
		fmt.Fprintf(&b, "%s=%s\n", EnvGitHubClientSecret, app.ClientSecret)
	}
	if site.PublicURL != "" {
		fmt.Fprintf(&b, "%s=%s\n", EnvPublicURL, strings.TrimRight(site.PublicURL, "/"))
	}
	if site.APIURL != "" && !isGitHubDotCom(site.APIURL) {
		fmt.Fprintf(&b, "%s=%s\n", EnvGitHubAPIURL, site.APIURL)
	}
	if web := strings.TrimRight(site.WebURL, "/"); web != "" && web != "https://github.com" {
		fmt.Fprintf(&b, "%s=%s\n", EnvGitHubWebURL, web)
	}
	return writePrivate(filepath.Join(dataDir, GitHubAppEnvFile), b.Bytes())
}

func checkNoAppFile(dataDir string) error {
	for _, name := range []string{GitHubAppEnvFile, GitHubAppKeyFile} {
		path := filepath.Join(dataDir, name)
		if _, err := os.Stat(path); err == nil {
			return fmt.Errorf("%s already exists: a GitHub App is already set up here (move the file away, or pass --overwrite to replace it)", path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("checking %s: %w", path, err)
		}
	}
	return nil
}

func writePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// LoadGitHubAppFile reads dataDir/github-app.env. It returns nil and no
// error when there is no such file. A relative SUPERAGENT_GITHUB_PRIVATE_KEY
// path is resolved against dataDir. A file that others may read is refused,
// as ssh refuses a private key with loose permissions.
func LoadGitHubAppFile(dataDir string) (map[string]string, error) {
	path := filepath.Join(dataDir, GitHubAppEnvFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%s holds the GitHub webhook secret but others may read it (mode %04o): run chmod 600 %s", path, perm, path)
	}
	vals := map[string]string{}
	var problems []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			problems = append(problems, fmt.Sprintf("line %d is not NAME=value", n))
			continue
		}
		vals[k] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("reading %s: %s", path, strings.Join(problems, "; "))
	}
	if id, ok := vals[EnvGitHubAppID]; ok {
		if n, err := strconv.ParseInt(id, 10, 64); err != nil || n <= 0 {
			return nil, fmt.Errorf("reading %s: %s must be a positive integer", path, EnvGitHubAppID)
		}
	}
	if key := vals[EnvGitHubPrivateKey]; key != "" && !strings.Contains(key, "-----BEGIN") && !filepath.IsAbs(key) {
		vals[EnvGitHubPrivateKey] = filepath.Join(dataDir, key)
	}
	return vals, nil
}

// WithGitHubAppFile returns getenv extended with dataDir/github-app.env: when
// none of SUPERAGENT_GITHUB_APP_ID, SUPERAGENT_GITHUB_PRIVATE_KEY and
// SUPERAGENT_GITHUB_WEBHOOK_SECRET is set, the file's values answer for the
// variables that are unset. When any of them is set the environment alone
// configures the App and the file is not read, so the two never mix. Without
// the file getenv is returned unchanged.
func WithGitHubAppFile(getenv func(string) string, dataDir string) (func(string) string, error) {
	for _, k := range appCredentialVars {
		if getenv(k) != "" {
			return getenv, nil
		}
	}
	vals, err := LoadGitHubAppFile(dataDir)
	if err != nil || vals == nil {
		return getenv, err
	}
	return func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return vals[k]
	}, nil
}

func isGitHubDotCom(apiURL string) bool {
	return strings.TrimRight(apiURL, "/") == "https://api.github.com"
}
