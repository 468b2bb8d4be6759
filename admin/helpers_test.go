package admin

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/promptparts"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

const testToken = "correct-horse-battery-staple"

// release returns the built-in texts with some replaced: a newer release.
func release(t testing.TB, changes map[string]string) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	builtin := promptparts.BuiltinDefaults()
	err := fs.WalkDir(builtin, ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := fs.ReadFile(builtin, p)
		if err != nil {
			return err
		}
		out[p] = &fstest.MapFile{Data: b}
		return nil
	})
	require.NoError(t, err)
	for key, text := range changes {
		out[key+".md"] = &fstest.MapFile{Data: []byte(text)}
	}
	return out
}

// panel is a running panel over a real database, wired the way main wires
// it: the panel on the root router, the configuration API on /api behind
// the bearer token and the panel's cookie.
type panel struct {
	srv     *httptest.Server
	admin   *Admin
	prompts *promptparts.Service
	db      *db.DB
}

func newPanel(t testing.TB, d *db.DB, defaults fs.FS, deps Deps) *panel {
	t.Helper()
	return newPanelWith(t, d, defaults, deps, Config{Token: testToken})
}

func newPanelWith(t testing.TB, d *db.DB, defaults fs.FS, deps Deps, cfg Config) *panel {
	t.Helper()
	return newPanelOn(t, d, defaults, deps, cfg, httpserver.Config{})
}

// newPanelOn is newPanelWith on an HTTP server configured by hs (its
// authenticators are the panel's).
func newPanelOn(t testing.TB, d *db.DB, defaults fs.FS, deps Deps, cfg Config, hs httpserver.Config) *panel {
	t.Helper()
	cfg.AdminGitHubLogins = append(cfg.AdminGitHubLogins, testAdminLogins...)
	prompts, err := promptparts.New(promptparts.Config{Defaults: defaults}, d)
	require.NoError(t, err)
	require.NoError(t, prompts.Start(context.Background()))
	t.Cleanup(prompts.Stop)
	adm, err := New(cfg, d, prompts, deps)
	require.NoError(t, err)
	hs.Authenticators = []httpserver.Authenticator{httpserver.BearerToken{Token: testToken, Actor: TokenActor}, adm.Authenticator()}
	server := httpserver.New(hs)
	prompts.Routes(server.API)
	adm.Routes(server.Root)
	adm.PeopleAPI().Routes(server.API)
	srv := httptest.NewServer(server)
	t.Cleanup(srv.Close)
	// Live streams end first, as main's shutdown ends them.
	t.Cleanup(adm.CloseStreams)
	pn := &panel{srv: srv, admin: adm, prompts: prompts, db: d}
	panels.Store(srv.URL, pn)
	t.Cleanup(func() { panels.Delete(srv.URL) })
	return pn
}

// panels finds a running test panel by its URL, for the browser tests'
// sign-in.
var panels sync.Map

// client is a browser-like HTTP client: a cookie jar, no automatic
// redirects, so tests see each 303.
type client struct {
	t     testing.TB
	base  string
	http  *http.Client
	panel *panel
}

func (p *panel) client(t testing.TB) *client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(c.CloseIdleConnections)
	return &client{t: t, base: p.srv.URL, http: c, panel: p}
}

type response struct {
	status   int
	body     string
	location string
	header   http.Header
}

func (c *client) do(req *http.Request) response {
	c.t.Helper()
	res, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(c.t, err)
	return response{status: res.StatusCode, body: string(b), location: res.Header.Get("Location"), header: res.Header}
}

func (c *client) get(path string) response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	require.NoError(c.t, err)
	return c.do(req)
}

func (c *client) post(path string, form url.Values) response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

func (c *client) signIn(name string) {
	c.t.Helper()
	c.signInAs(name, people.RoleAdmin)
}

// signInAs gives the client the session a GitHub sign-in gives the person
// name with role (the flow itself is githubSignIn's), and records the
// sign-in as that flow does.
func (c *client) signInAs(name, role string) {
	c.t.Helper()
	a := c.panel.admin
	id := testSession(c.t, a, name, role)
	require.NoError(c.t, a.audit.record(context.Background(), a.db, auditEntry{CreatedAt: a.cfg.Now(), Actor: name, Action: actionSignIn, Detail: "github, " + role}))
	u, err := url.Parse(c.base)
	require.NoError(c.t, err)
	c.http.Jar.SetCookies(u, []*http.Cookie{{Name: CookieName, Value: id, Path: "/"}})
}

// testAdminLogins are the logins every test panel lists as admins
// (SUPERAGENT_ADMIN_GITHUB_LOGINS), so that signIn("Ada") needs no
// person record.
var testAdminLogins = []string{"ada", "grace", "ada-lovelace"}

var testLoginName = regexp.MustCompile(`^(.*) \(@([a-z0-9-]+)\)$`)

// testSession stores a session granted as a GitHub sign-in of the person
// name ("Bob (@bob)", or "Ada" for the login ada) with role would be:
// through the admin list, or a person record made for it when the login
// would not sign in with role otherwise. It returns the cookie's id.
func testSession(t testing.TB, a *Admin, name, role string) string {
	t.Helper()
	ctx := context.Background()
	display, login := name, strings.ToLower(strings.ReplaceAll(name, " ", "-"))
	if m := testLoginName.FindStringSubmatch(name); m != nil {
		display, login = m[1], m[2]
	}
	ps := people.New(a.db, nil)
	p, held, err := ps.By(ctx, a.db, people.KindGitHub, login)
	require.NoError(t, err)
	if a.loginRole(login, held, p.Role) != role {
		require.False(t, held, "@%s belongs to %s, whose role is not %s", login, p.Name, role)
		p, err = ps.Create(ctx, people.Person{Name: display, Role: role, GitHub: []string{login}})
		require.NoError(t, err)
		held = true
	}
	who := panelSession{Actor: name, Role: role, Grant: grantGitHub, Login: login}
	if held {
		who.PersonID = p.ID
	}
	id, _, err := a.sessions.create(ctx, a.db, a.cfg.Rand, who, a.cfg.Now(), a.cfg.SessionTTL)
	require.NoError(t, err)
	return id
}

// signInToken signs in with the admin token through the form.
func (c *client) signInToken() {
	c.t.Helper()
	res := c.post("/admin/signin", url.Values{"token": {testToken}, "next": {"/admin/"}})
	require.Equal(c.t, http.StatusSeeOther, res.status, res.body)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the CSRF token from a signed-in page.
func (c *client) csrf() string {
	c.t.Helper()
	res := c.get("/admin/")
	require.Equal(c.t, http.StatusOK, res.status)
	m := csrfRE.FindStringSubmatch(res.body)
	require.NotNil(c.t, m, "no CSRF token on the page")
	return m[1]
}
