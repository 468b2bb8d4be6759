package setup_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/cmd/superagent/internal/setup"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

// confirm posts the setup page's form to GitHub's new-App page as the
// browser does, which registers the manifest and redirects back to the
// setup page's callback; it returns the callback's status and body.
func confirm(t *testing.T, page string) (int, string) {
	t.Helper()
	m := formAction.FindStringSubmatch(page)
	require.NotNil(t, m, page)
	mj := manifestJSON.FindStringSubmatch(page)
	require.NotNil(t, mj, page)
	resp, err := http.PostForm(htmlUnescape(m[1]), url.Values{"manifest": {htmlUnescape(mj[1])}})
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "/callback", resp.Request.URL.Path, "GitHub redirected to the setup page")
	return resp.StatusCode, string(b)
}

type flow struct {
	local string // http://127.0.0.1:port
	dir   string
	done  chan struct{}
	app   *setup.GitHubApp
	err   error
	out   strings.Builder
}

func startFlow(t *testing.T, cfg setup.GitHubConfig) *flow {
	t.Helper()
	g, err := setup.NewGitHub(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &flow{local: "http://" + ln.Addr().String(), dir: cfg.DataDir, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(f.done)
		f.app, f.err = g.Serve(ctx, ln, &f.out)
	}()
	t.Cleanup(func() {
		cancel()
		<-f.done
	})
	return f
}

func (f *flow) wait(t *testing.T) {
	t.Helper()
	select {
	case <-f.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the setup flow did not finish")
	}
}

var (
	formAction   = regexp.MustCompile(`<form method="post" action="([^"]+)">`)
	manifestJSON = regexp.MustCompile(`<input type="hidden" name="manifest" value="([^"]+)">`)
)

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestGitHubManifestFlow(t *testing.T) {
	gh := fakegithub.New(t)
	dir := filepath.Join(t.TempDir(), "data")
	f := startFlow(t, setup.GitHubConfig{
		PublicURL: "https://agent.example.com/", DataDir: dir, Org: "acme", AppName: "acme-superagent", APIURL: gh.URL,
	})

	status, page := get(t, f.local+"/")
	require.Equal(t, http.StatusOK, status)
	m := formAction.FindStringSubmatch(page)
	require.NotNil(t, m, page)
	action, err := url.Parse(htmlUnescape(m[1]))
	require.NoError(t, err)
	// The fake's API URL is not GitHub.com, so the web root is its host
	// (GitHub Enterprise Server's layout).
	require.Equal(t, strings.TrimPrefix(gh.URL, "http://"), action.Host)
	require.Equal(t, "/organizations/acme/settings/apps/new", action.Path)
	state := action.Query().Get("state")
	require.Len(t, state, 64)

	mj := manifestJSON.FindStringSubmatch(page)
	require.NotNil(t, mj, page)
	var manifest map[string]any
	require.NoError(t, json.Unmarshal([]byte(htmlUnescape(mj[1])), &manifest))
	require.Equal(t, "acme-superagent", manifest["name"])
	require.Equal(t, "https://agent.example.com", manifest["url"])
	require.Equal(t, map[string]any{"url": "https://agent.example.com/webhooks/github", "active": true}, manifest["hook_attributes"])
	require.Equal(t, f.local+"/callback", manifest["redirect_url"])
	require.Equal(t, []any{"https://agent.example.com/oauth/github/callback"}, manifest["callback_urls"], "the panel's GitHub sign-in returns there")
	require.Equal(t, false, manifest["public"])
	require.Equal(t, map[string]any{"contents": "write", "pull_requests": "write", "issues": "write", "checks": "write", "actions": "read", "metadata": "read"}, manifest["default_permissions"])
	require.ElementsMatch(t, []any{"issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment",
		"pull_request_review_thread", "check_run", "check_suite", "workflow_run", "push"}, manifest["default_events"])

	// A callback with another state (a forged link) is refused and
	// exchanges nothing.
	status, _ = get(t, f.local+"/callback?code=code-123&state=forged")
	require.Equal(t, http.StatusForbidden, status)
	status, _ = get(t, f.local+"/callback?code=code-123")
	require.Equal(t, http.StatusForbidden, status)
	require.Zero(t, gh.Count("POST", "/app-manifests/code-123/conversions"))
	require.NoFileExists(t, filepath.Join(dir, setup.GitHubAppEnvFile))

	// The browser posts the manifest to GitHub, which redirects back with
	// the code and our state.
	status, body := confirm(t, page)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, "https://github.com/apps/superagent/installations/new")
	require.NotContains(t, body, fakegithub.ManifestWebhookSecret)
	require.NotContains(t, body, fakegithub.ClientSecret)
	f.wait(t)
	require.NoError(t, f.err)
	require.Equal(t, "acme", gh.Manifest().Org)
	var exchanged int
	for _, r := range gh.Requests() {
		if r.Method == http.MethodPost && strings.HasPrefix(r.Path, "/app-manifests/") {
			exchanged++
		}
	}
	require.Equal(t, 1, exchanged)
	require.Equal(t, gh.AppID, f.app.ID)
	require.Equal(t, "superagent", f.app.Slug)
	require.Equal(t, "acme", f.app.Owner)

	for _, name := range []string{setup.GitHubAppEnvFile, setup.GitHubAppKeyFile} {
		info, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), name)
	}
	key, err := os.ReadFile(filepath.Join(dir, setup.GitHubAppKeyFile))
	require.NoError(t, err)
	require.Equal(t, gh.PrivateKey(), key)

	vals, err := setup.LoadGitHubAppFile(dir)
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"SUPERAGENT_GITHUB_APP_ID":         strconv.FormatInt(gh.AppID, 10),
		"SUPERAGENT_GITHUB_APP_SLUG":       "superagent",
		"SUPERAGENT_GITHUB_PRIVATE_KEY":    filepath.Join(dir, setup.GitHubAppKeyFile),
		"SUPERAGENT_GITHUB_WEBHOOK_SECRET": fakegithub.ManifestWebhookSecret,
		"SUPERAGENT_GITHUB_CLIENT_ID":      gh.ClientID(),
		"SUPERAGENT_GITHUB_CLIENT_SECRET":  fakegithub.ClientSecret,
		"SUPERAGENT_PUBLIC_URL":            "https://agent.example.com",
		"SUPERAGENT_GITHUB_API_URL":        gh.URL,
		"SUPERAGENT_GITHUB_WEB_URL":        gh.URL,
	}, vals)

	out := f.out.String()
	require.Contains(t, out, "https://github.com/apps/superagent/installations/new")
	require.Contains(t, out, "https://agent.example.com/oauth/github/callback")
	require.Contains(t, out, "superagent doctor")
	require.NotContains(t, out, fakegithub.ManifestWebhookSecret)
	require.NotContains(t, out, fakegithub.ClientSecret)
	require.NotContains(t, out, "PRIVATE KEY")
}

func TestGitHubManifestFlowPersonalAccountAndWorkflows(t *testing.T) {
	f := startFlow(t, setup.GitHubConfig{PublicURL: "https://agent.example.com", DataDir: t.TempDir(), Workflows: true})
	_, page := get(t, f.local+"/")
	action, err := url.Parse(htmlUnescape(formAction.FindStringSubmatch(page)[1]))
	require.NoError(t, err)
	require.Equal(t, "https://github.com/settings/apps/new", action.Scheme+"://"+action.Host+action.Path)
	var manifest setup.Manifest
	require.NoError(t, json.Unmarshal([]byte(htmlUnescape(manifestJSON.FindStringSubmatch(page)[1])), &manifest))
	require.Equal(t, "superagent", manifest.Name)
	require.Equal(t, "write", manifest.DefaultPermissions["workflows"])
}

func TestGitHubManifestFlowRefusesForeignHost(t *testing.T) {
	f := startFlow(t, setup.GitHubConfig{PublicURL: "https://agent.example.com", DataDir: t.TempDir()})
	req, err := http.NewRequest(http.MethodGet, f.local+"/", nil)
	require.NoError(t, err)
	req.Host = "attacker.example:80"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
}

func TestGitHubManifestFlowExchangeFails(t *testing.T) {
	gh := fakegithub.New(t)
	dir := t.TempDir()
	f := startFlow(t, setup.GitHubConfig{PublicURL: "https://agent.example.com", DataDir: dir, APIURL: gh.URL})
	_, page := get(t, f.local+"/")
	action, err := url.Parse(htmlUnescape(formAction.FindStringSubmatch(page)[1]))
	require.NoError(t, err)
	// A code GitHub never gave (or one used or older than an hour).
	status, _ := get(t, f.local+"/callback?code=expired&state="+action.Query().Get("state"))
	require.Equal(t, http.StatusBadGateway, status)
	f.wait(t)
	require.ErrorContains(t, f.err, "exchanging the manifest code")
	require.NoFileExists(t, filepath.Join(dir, setup.GitHubAppEnvFile))
}

func TestGitHubRefusesToReplaceAnExistingApp(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, setup.GitHubAppEnvFile), []byte("SUPERAGENT_GITHUB_APP_ID=1\n"), 0o600))
	g, err := setup.NewGitHub(setup.GitHubConfig{PublicURL: "https://agent.example.com", DataDir: dir, Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	_, err = g.Run(context.Background(), io.Discard)
	require.ErrorContains(t, err, "already exists")
}

func TestNewGitHubListsEveryProblem(t *testing.T) {
	_, err := setup.NewGitHub(setup.GitHubConfig{PublicURL: "ftp://x", Org: "bad org!"})
	require.ErrorContains(t, err, "public URL must be an http(s) URL")
	require.ErrorContains(t, err, "data directory is required")
	require.ErrorContains(t, err, "organisation name")
}

func htmlUnescape(s string) string { return html.UnescapeString(s) }

func TestGitHubCommandNeedsTheFlagOnlyWithoutAPublicURL(t *testing.T) {
	require.Equal(t, "superagent setup github", setup.GitHubCommand("https://agent.example.com"))
	require.Equal(t, "superagent setup github -public-url https://<public host>", setup.GitHubCommand(""))
}
