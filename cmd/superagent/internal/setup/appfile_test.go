package setup_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/cmd/superagent/internal/setup"
)

func newServer(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func writeApp(t *testing.T, dir string) {
	t.Helper()
	app := &setup.GitHubApp{ID: 9, Slug: "x", HTMLURL: "https://github.com/apps/x", PrivateKeyPEM: []byte("-----BEGIN RSA PRIVATE KEY-----\n..."), WebhookSecret: "secret-secret"}
	require.NoError(t, setup.WriteGitHubAppFile(dir, app, setup.AppSite{APIURL: "https://api.github.com/", WebURL: "https://github.com"}, false, time.Unix(0, 0)))
}

func TestLoadGitHubAppFile(t *testing.T) {
	t.Run("missing file", func(t *testing.T) {
		vals, err := setup.LoadGitHubAppFile(t.TempDir())
		require.NoError(t, err)
		require.Nil(t, vals)
	})
	t.Run("github.com API URL is not recorded", func(t *testing.T) {
		dir := t.TempDir()
		writeApp(t, dir)
		vals, err := setup.LoadGitHubAppFile(dir)
		require.NoError(t, err)
		require.Equal(t, "9", vals["SUPERAGENT_GITHUB_APP_ID"])
		require.NotContains(t, vals, "SUPERAGENT_GITHUB_API_URL")
		require.NotContains(t, vals, "SUPERAGENT_GITHUB_WEB_URL")
	})
	t.Run("loose permissions refused", func(t *testing.T) {
		dir := t.TempDir()
		writeApp(t, dir)
		require.NoError(t, os.Chmod(filepath.Join(dir, setup.GitHubAppEnvFile), 0o644))
		_, err := setup.LoadGitHubAppFile(dir)
		require.ErrorContains(t, err, "chmod 600")
	})
	t.Run("malformed lines listed", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, setup.GitHubAppEnvFile), []byte("# c\nA=1\nnonsense\nB C=2\n"), 0o600))
		_, err := setup.LoadGitHubAppFile(dir)
		require.ErrorContains(t, err, "line 3 is not NAME=value; line 4 is not NAME=value")
	})
	t.Run("overwrite guarded", func(t *testing.T) {
		dir := t.TempDir()
		writeApp(t, dir)
		app := &setup.GitHubApp{ID: 10, PrivateKeyPEM: []byte("k"), WebhookSecret: "s"}
		require.ErrorContains(t, setup.WriteGitHubAppFile(dir, app, setup.AppSite{}, false, time.Now()), "already exists")
		require.NoError(t, setup.WriteGitHubAppFile(dir, app, setup.AppSite{}, true, time.Now()))
	})
}

func TestWithGitHubAppFile(t *testing.T) {
	dir := t.TempDir()
	writeApp(t, dir)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	getenv, err := setup.WithGitHubAppFile(env(map[string]string{"SUPERAGENT_ADDR": ":9"}), dir)
	require.NoError(t, err)
	require.Equal(t, "9", getenv("SUPERAGENT_GITHUB_APP_ID"))
	require.Equal(t, filepath.Join(dir, setup.GitHubAppKeyFile), getenv("SUPERAGENT_GITHUB_PRIVATE_KEY"))
	require.Equal(t, "secret-secret", getenv("SUPERAGENT_GITHUB_WEBHOOK_SECRET"))
	require.Equal(t, ":9", getenv("SUPERAGENT_ADDR"))

	// Any App setting in the environment wins for all three: no mixing.
	getenv, err = setup.WithGitHubAppFile(env(map[string]string{"SUPERAGENT_GITHUB_APP_ID": "77"}), dir)
	require.NoError(t, err)
	require.Equal(t, "77", getenv("SUPERAGENT_GITHUB_APP_ID"))
	require.Empty(t, getenv("SUPERAGENT_GITHUB_PRIVATE_KEY"))

	getenv, err = setup.WithGitHubAppFile(env(nil), t.TempDir())
	require.NoError(t, err)
	require.Empty(t, getenv("SUPERAGENT_GITHUB_APP_ID"))
}
