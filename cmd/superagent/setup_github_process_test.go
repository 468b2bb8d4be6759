package main

import (
	"bytes"
	"context"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/cmd/superagent/internal/setup"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

var (
	setupPageAt  = regexp.MustCompile(`Open (http://127\.0\.0\.1:[0-9]+)/ in a browser`)
	setupForm    = regexp.MustCompile(`<form method="post" action="([^"]+)">`)
	setupPayload = regexp.MustCompile(`<input type="hidden" name="manifest" value="([^"]+)">`)
)

// pingGitHub posts a ping signed with secret to /webhooks/github and
// returns the status.
func pingGitHub(t *testing.T, base, secret string) int {
	t.Helper()
	body := []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, base+"/webhooks/github", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "ping")
	req.Header.Set("X-GitHub-Delivery", "ping-1")
	req.Header.Set("X-Hub-Signature-256", fakegithub.SignWebhook(secret, body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestSetupGitHubThroughTheBinary drives `superagent setup github` against
// the fake GitHub on both databases, as a person does: without a public
// URL it refuses and says how to give one; with SUPERAGENT_PUBLIC_URL set it
// needs no flag, serves the page, the browser posts the manifest to
// GitHub's new-App page and comes back with the code, and the command
// exchanges it and stores the App with its OAuth client. `serve` then
// starts from the data directory alone: a ping signed with the stored
// webhook secret is answered, and a listed login signs in to the panel
// with GitHub through the callback the manifest registered.
func TestSetupGitHubThroughTheBinary(t *testing.T) {
	t.Parallel()
	databases(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		dataDir := t.TempDir()
		addr := freeAddr(t)
		base := "http://" + addr

		p := start(t, "setup", map[string]string{"SUPERAGENT_DATA_DIR": dataDir, "SUPERAGENT_GITHUB_API_URL": gh.URL}, "setup", "github")
		<-p.done
		require.Equal(t, 2, p.cmd.ProcessState.ExitCode())
		require.Contains(t, p.stderr.String(), "set SUPERAGENT_PUBLIC_URL or pass -public-url")

		p = start(t, "setup", map[string]string{
			"SUPERAGENT_DATA_DIR": dataDir, "SUPERAGENT_GITHUB_API_URL": gh.URL, "SUPERAGENT_PUBLIC_URL": base,
		}, "setup", "github", "-listen", "127.0.0.1:0")
		var local string
		waitFor(t, 30*time.Second, "the setup page's address", func() bool {
			m := setupPageAt.FindStringSubmatch(p.stdout.String())
			if m != nil {
				local = m[1]
			}
			return m != nil
		})
		readBody := reader(t)
		status, page := readBody(http.Get(local + "/"))
		require.Equal(t, http.StatusOK, status, page)
		action, manifest := setupForm.FindStringSubmatch(page), setupPayload.FindStringSubmatch(page)
		require.NotNil(t, action, page)
		require.NotNil(t, manifest, page)
		status, body := readBody(http.PostForm(html.UnescapeString(action[1]), url.Values{"manifest": {html.UnescapeString(manifest[1])}}))
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, "is registered and its credentials are stored")
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Fatal("setup github did not exit after the callback")
		}
		require.Equal(t, 0, p.cmd.ProcessState.ExitCode(), p.stderr.String())

		m := gh.Manifest()
		require.NotNil(t, m)
		require.Equal(t, base+"/webhooks/github", m.HookAttributes.URL)
		require.Equal(t, []string{base + "/oauth/github/callback"}, m.CallbackURLs)
		env, err := os.ReadFile(filepath.Join(dataDir, setup.GitHubAppEnvFile))
		require.NoError(t, err)
		for _, want := range []string{"SUPERAGENT_GITHUB_CLIENT_ID=" + gh.ClientID(), "SUPERAGENT_GITHUB_CLIENT_SECRET=" + fakegithub.ClientSecret,
			"SUPERAGENT_PUBLIC_URL=" + base, "SUPERAGENT_GITHUB_WEB_URL=" + gh.URL} {
			require.Contains(t, string(env), want+"\n")
		}
		out := p.stdout.String() + p.stderr.String()
		require.NotContains(t, out, fakegithub.ClientSecret)
		require.NotContains(t, out, fakegithub.ManifestWebhookSecret)
		require.Contains(t, out, base+"/oauth/github/callback")

		// Nothing but the data directory, the database and who may
		// administer: the App, its OAuth client and the public URL come
		// from the stored file.
		srv := start(t, "serve", map[string]string{
			"SUPERAGENT_ADDR": addr, "SUPERAGENT_DATA_DIR": dataDir, "SUPERAGENT_DATABASE_URL": dbURL,
			"SUPERAGENT_ADMIN_GITHUB_LOGINS": "ada-gh",
		}, "serve")
		srv.waitHTTP("/readyz", 30*time.Second)
		require.Equal(t, http.StatusOK, pingGitHub(t, base, fakegithub.ManifestWebhookSecret))
		require.Equal(t, http.StatusUnauthorized, pingGitHub(t, base, "another-secret-0123456789"))

		gh.SignInBrowser("ada-gh")
		browser := browserClient(t)
		res, err := browser.Get(base + "/admin/signin/github?next=/admin/")
		status, page = readBody(res, err)
		require.Equal(t, http.StatusOK, status, page)
		require.Equal(t, "/admin/", res.Request.URL.Path, "signed in and sent to the panel")
		require.Equal(t, 1, gh.UserTokens())
		code, _ := srv.stop(shutdownWithin)
		require.Equal(t, 0, code)
		require.NotContains(t, srv.stderr.String()+srv.stdout.String(), fakegithub.ClientSecret)
	})
}

// doctorLine is the message of the doctor's line named name.
func doctorLine(t *testing.T, out, name string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == name {
			return strings.Join(f[2:], " ")
		}
	}
	t.Fatalf("doctor printed no line for %s:\n%s", name, out)
	return ""
}

// TestDoctorEndpointLinesMatchTheService holds each of doctor's endpoint
// lines to a running binary, on both databases: under each configuration
// `superagent doctor` says on or off, and `superagent serve` with the same
// settings answers the endpoint (off is a 404, on anything else).
func TestDoctorEndpointLinesMatchTheService(t *testing.T) {
	t.Parallel()
	const secret = "endpoint-webhook-secret-0123456789"
	databases(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		addr := freeAddr(t)
		base := "http://" + addr
		configs := []struct {
			name string
			env  map[string]string
			on   []string
		}{
			{"nothing", nil, nil},
			{"webhook secret alone", map[string]string{"SUPERAGENT_GITHUB_WEBHOOK_SECRET": secret}, []string{"/webhooks/github"}},
			{"the whole App and its OAuth client", map[string]string{
				"SUPERAGENT_GITHUB_WEBHOOK_SECRET": secret, "SUPERAGENT_GITHUB_APP_ID": "1", "SUPERAGENT_GITHUB_PRIVATE_KEY": string(gh.PrivateKey()),
				"SUPERAGENT_GITHUB_CLIENT_ID": gh.ClientID(), "SUPERAGENT_GITHUB_CLIENT_SECRET": fakegithub.ClientSecret, "SUPERAGENT_PUBLIC_URL": base,
			}, []string{"/webhooks/github", "/oauth/github/callback"}},
			{"App without a webhook secret", map[string]string{
				"SUPERAGENT_GITHUB_APP_ID": "1", "SUPERAGENT_GITHUB_PRIVATE_KEY": string(gh.PrivateKey()),
			}, nil},
			{"Feishu keys without the app", map[string]string{
				"SUPERAGENT_FEISHU_VERIFICATION_TOKEN": "feishu-token-0123456789", "SUPERAGENT_FEISHU_ENCRYPT_KEY": "feishu-key-0123456789",
			}, []string{"/webhooks/feishu"}},
		}
		probes := map[string]func() (*http.Response, error){
			"/webhooks/github": func() (*http.Response, error) {
				return http.Post(base+"/webhooks/github", "application/json", strings.NewReader(`{}`))
			},
			"/webhooks/feishu": func() (*http.Response, error) {
				return http.Post(base+"/webhooks/feishu", "application/json", strings.NewReader(`{}`))
			},
			"/oauth/github/callback": func() (*http.Response, error) {
				return http.Get(base + "/oauth/github/callback?code=x&state=y")
			},
		}
		for _, c := range configs {
			env := map[string]string{
				"SUPERAGENT_ADDR": addr, "SUPERAGENT_DATA_DIR": t.TempDir(), "SUPERAGENT_DATABASE_URL": dbURL,
				"SUPERAGENT_GITHUB_API_URL": gh.URL, "SUPERAGENT_GITHUB_WEB_URL": gh.URL, "SUPERAGENT_SANDBOX": "none",
			}
			for k, v := range c.env {
				env[k] = v
			}
			doc := start(t, "doctor", env, "doctor")
			<-doc.done
			out := doc.stdout.String()
			srv := start(t, "serve", env, "serve")
			srv.waitHTTP("/readyz", 30*time.Second)
			for path, probe := range probes {
				line := doctorLine(t, out, path)
				res, err := probe()
				require.NoError(t, err)
				_ = res.Body.Close()
				served := res.StatusCode != http.StatusNotFound
				require.Equal(t, served, strings.HasPrefix(line, "on:"), "%s, %s: doctor says %q, the service answers %d", c.name, path, line, res.StatusCode)
				if !served {
					require.True(t, strings.HasPrefix(line, "off (answers 404)"), "%s, %s: %q", c.name, path, line)
				}
				want := false
				for _, p := range c.on {
					want = want || p == path
				}
				require.Equal(t, want, served, "%s, %s: answered %d", c.name, path, res.StatusCode)
			}
			code, _ := srv.stop(shutdownWithin)
			require.Equal(t, 0, code)
		}
	})
}
