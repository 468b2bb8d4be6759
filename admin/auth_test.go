package admin

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/promptparts"
)

func TestSignInAndOut(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{})
		c := p.client(t)

		res := c.get("/admin/prompts")
		require.Equal(t, http.StatusSeeOther, res.status, "pages need a session")
		require.Equal(t, "/admin/signin?next=%2Fadmin%2Fprompts", res.location)

		res = c.post("/admin/signin", url.Values{"token": {"wrong"}, "name": {"mallory"}})
		require.Equal(t, http.StatusUnauthorized, res.status)
		require.Contains(t, res.body, "That is not the admin token.")
		require.Empty(t, res.header.Values("Set-Cookie"))

		// A name typed at sign-in is not believed: the token signs in as
		// "admin token".
		res = c.post("/admin/signin", url.Values{"token": {testToken}, "name": {"Ada"}, "next": {"/admin/prompts"}})
		require.Equal(t, http.StatusSeeOther, res.status)
		require.Equal(t, "/admin/prompts", res.location)
		cookie := res.header.Get("Set-Cookie")
		require.Contains(t, cookie, CookieName+"=")
		require.Contains(t, cookie, "HttpOnly")
		require.Contains(t, cookie, "SameSite=Strict")
		require.Contains(t, cookie, "Path=/;")
		require.NotContains(t, cookie, "Secure", "plain HTTP gets no Secure flag")

		// Only the id's hash is stored.
		id := strings.TrimPrefix(strings.SplitN(cookie, ";", 2)[0], CookieName+"=")
		var n int
		require.NoError(t, d.QueryRow(context.Background(), `SELECT COUNT(*) FROM admin_sessions WHERE id_sha256 = $1 AND actor = 'admin token' AND role = 'admin'`, hashID(id)).Scan(&n))
		require.Equal(t, 1, n)
		require.NoError(t, d.QueryRow(context.Background(), `SELECT COUNT(*) FROM admin_sessions WHERE id_sha256 = $1`, id).Scan(&n))
		require.Zero(t, n)

		res = c.get("/admin/prompts")
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, "Signed in as <strong>admin token</strong>")

		// An outside redirect target is ignored.
		require.Equal(t, "/admin/", safeNext("https://evil.example/"))
		require.Equal(t, "/admin/", safeNext("//evil.example/admin/"))

		res = c.post("/admin/signout", url.Values{"csrf": {c.csrf()}})
		require.Equal(t, http.StatusSeeOther, res.status)
		require.Contains(t, res.header.Get("Set-Cookie"), "Max-Age=0")

		// The revoked id no longer works even if a copy of the cookie is replayed.
		req, err := http.NewRequest(http.MethodGet, p.srv.URL+"/admin/prompts", nil)
		require.NoError(t, err)
		req.AddCookie(&http.Cookie{Name: CookieName, Value: id})
		res = c.do(req)
		require.Equal(t, http.StatusSeeOther, res.status)

		entries, err := p.admin.audit.list(context.Background(), d, 10)
		require.NoError(t, err)
		require.Len(t, entries, 2)
		require.Equal(t, actionSignOut, entries[0].Action)
		require.Equal(t, TokenActor, entries[0].Actor)
		require.Equal(t, actionSignIn, entries[1].Action)
		require.Equal(t, TokenActor, entries[1].Actor)
	})
}

func TestSignInGuessingIsLimited(t *testing.T) {
	t.Parallel()
	p := newPanel(t, dbtest.SQLite(t), promptparts.BuiltinDefaults(), Deps{})
	c := p.client(t)
	for range signInMaxFailures {
		require.Equal(t, http.StatusUnauthorized, c.post("/admin/signin", url.Values{"token": {"guess"}}).status)
	}
	res := c.post("/admin/signin", url.Values{"token": {"guess"}})
	require.Equal(t, http.StatusTooManyRequests, res.status)
	require.Contains(t, res.body, "Too many wrong tokens")
	require.Contains(t, res.body, "Wait a minute")
	require.Equal(t, "60", res.header.Get("Retry-After"))

	// Guessing never locks the owner out: the right token signs in from
	// the limited address, and does not lift the limit for guesses.
	res = c.post("/admin/signin", url.Values{"token": {testToken}, "name": {"Ada"}})
	require.Equal(t, http.StatusSeeOther, res.status)
	require.Contains(t, res.header.Get("Set-Cookie"), CookieName+"=")
	require.Equal(t, http.StatusTooManyRequests, p.client(t).post("/admin/signin", url.Values{"token": {"guess"}}).status)
}

func TestTokenSignInRecordsAdminToken(t *testing.T) {
	t.Parallel()
	p := newPanel(t, dbtest.SQLite(t), promptparts.BuiltinDefaults(), Deps{})
	c := p.client(t)
	c.signInToken()
	res := c.get("/admin/")
	require.Contains(t, res.body, "Signed in as <strong>admin token</strong>")
}

func TestFormsWithoutCSRFTokenAreRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{})
		c := p.client(t)
		c.signIn("ada")
		form := url.Values{"base_revision": {"0"}, "text": {"Our own words."}, "action": {"save"}}

		res := c.post("/admin/prompts/runtime/work", form)
		require.Equal(t, http.StatusForbidden, res.status)
		require.Contains(t, res.body, "security token does not match")

		form.Set("csrf", "forged")
		res = c.post("/admin/prompts/runtime/work", form)
		require.Equal(t, http.StatusForbidden, res.status)

		// A cross-site browser request is refused even with the token.
		form.Set("csrf", c.csrf())
		req, err := http.NewRequest(http.MethodPost, p.srv.URL+"/admin/prompts/runtime/work", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		res = c.do(req)
		require.Equal(t, http.StatusForbidden, res.status)

		head, err := p.prompts.Head(context.Background())
		require.NoError(t, err)
		require.Zero(t, head, "nothing was saved")

		res = c.post("/admin/prompts/runtime/work", form)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		v, err := p.prompts.Latest(context.Background())
		require.NoError(t, err)
		require.Equal(t, int64(1), v.Revision)
		require.Equal(t, "ada", v.Actor)
		require.Equal(t, promptparts.OriginPanel, v.Origin)
	})
}

// The JSON API accepts the panel's cookie, and for changes only with the
// CSRF header.
func TestCookieAuthenticatesTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{})
		c := p.client(t)

		res := c.get("/api/config")
		require.Equal(t, http.StatusUnauthorized, res.status)

		c.signIn("grace")
		res = c.get("/api/config")
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, `"revision":0`)

		body := `{"base_revision": 0, "sections": {"ticket_scope": {"text": "Stop at a draft when unsure."}}}`
		post := func(csrf string) response {
			req, err := http.NewRequest(http.MethodPost, p.srv.URL+"/api/config", strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			if csrf != "" {
				req.Header.Set(CSRFHeader, csrf)
			}
			return c.do(req)
		}
		require.Equal(t, http.StatusUnauthorized, post("").status)
		require.Equal(t, http.StatusUnauthorized, post("nope").status)
		res = post(c.csrf())
		require.Equal(t, http.StatusCreated, res.status, res.body)

		v, err := p.prompts.Latest(context.Background())
		require.NoError(t, err)
		require.Equal(t, "grace", v.Actor)
	})
}
