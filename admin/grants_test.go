package admin

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/promptparts"
)

// githubSignIn signs c in through GitHub's web flow as login: the panel
// sends the browser to the fake GitHub, which approves for login and
// sends it back to the callback with a code.
func (c *client) githubSignIn(gh *fakegithub.Server, login string) response {
	c.t.Helper()
	res := c.get("/admin/signin/github?next=/admin/")
	require.Equal(c.t, http.StatusSeeOther, res.status, res.body)
	gh.SignInBrowser(login)
	return c.away(res.location)
}

// githubOAuth is the App's user authorization on the fake GitHub.
func githubOAuth(gh *fakegithub.Server) *people.OAuth {
	return &people.OAuth{ClientID: gh.ClientID(), ClientSecret: fakegithub.ClientSecret, WebURL: gh.URL, APIURL: gh.URL}
}

// session returns the client's session cookie.
func (c *client) session() string {
	c.t.Helper()
	u, err := url.Parse(c.base)
	require.NoError(c.t, err)
	for _, k := range c.http.Jar.Cookies(u) {
		if k.Name == CookieName {
			return k.Value
		}
	}
	c.t.Fatal("the client has no session cookie")
	return ""
}

// clientWith is a browser that holds the session cookie id: the same
// browser after the service restarted.
func (p *panel) clientWith(t testing.TB, id string) *client {
	c := p.client(t)
	u, err := url.Parse(c.base)
	require.NoError(t, err)
	c.http.Jar.SetCookies(u, []*http.Cookie{{Name: CookieName, Value: id, Path: "/"}})
	return c
}

// signedIn reports whether the client's session opens the overview.
func (c *client) signedIn() bool {
	c.t.Helper()
	res := c.get("/admin/")
	switch res.status {
	case http.StatusOK:
		return true
	case http.StatusSeeOther:
		require.True(c.t, strings.HasPrefix(res.location, "/admin/signin"), res.location)
		return false
	}
	c.t.Fatalf("the overview answered %d: %s", res.status, res.body)
	return false
}

// A session rests on what granted it, read again on every request: the
// same service restarted keeps its sessions; a rotated admin token ends
// the token's sessions (and nothing else), a login taken off
// SUPERAGENT_ADMIN_GITHUB_LOGINS ends that login's, and neither comes
// back when the setting does. An ended session changes nothing, in the
// panel or on /api.
func TestSessionsEndWhenWhatGrantedThemChanges(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		gh := fakegithub.New(t)
		ps := people.New(d, nil)
		const newToken = "a-rotated-admin-token-0123456789"
		service := func(token string, admins ...string) *panel {
			return newPanelWith(t, d, promptparts.BuiltinDefaults(), Deps{People: ps}, Config{Token: token,
				OAuth: githubOAuth(gh), PublicURL: "http://panel.example", AdminGitHubLogins: admins})
		}
		first := service(testToken, "ada-gh")
		tok := first.client(t)
		tok.signInToken()
		ada := first.client(t)
		res := ada.githubSignIn(gh, "ada-gh")
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		tokID, adaID := tok.session(), ada.session()
		var stored int
		require.NoError(t, d.QueryRow(ctx, `SELECT count(*) FROM admin_sessions WHERE grant_mark LIKE $1`, "%"+testToken+"%").Scan(&stored))
		require.Zero(t, stored, "the token itself is never stored")

		same := service(testToken, "ada-gh")
		require.True(t, same.clientWith(t, tokID).signedIn(), "a restart with the same token keeps its sessions")
		require.True(t, same.clientWith(t, adaID).signedIn())

		rotated := service(newToken, "ada-gh")
		old := rotated.clientWith(t, tokID)
		csrf := tok.csrf()
		res = old.post("/admin/prompts/runtime/work", url.Values{"csrf": {csrf}, "base_revision": {"0"}, "text": {"Planted."}, "action": {"save"}})
		require.Equal(t, http.StatusUnauthorized, res.status, "the rotated token's session changes nothing")
		req, err := http.NewRequest(http.MethodPost, rotated.srv.URL+"/api/config", strings.NewReader(`{"base_revision": 0, "sections": {"ticket_scope": {"text": "Planted."}}}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(CSRFHeader, csrf)
		require.Equal(t, http.StatusUnauthorized, old.do(req).status)
		require.False(t, old.signedIn())
		head, err := rotated.prompts.Head(ctx)
		require.NoError(t, err)
		require.Zero(t, head, "nothing was saved")
		require.True(t, rotated.clientWith(t, adaID).signedIn(), "a GitHub sign-in does not rest on the token")
		fresh := rotated.client(t)
		require.Equal(t, http.StatusSeeOther, fresh.post("/admin/signin", url.Values{"token": {newToken}, "next": {"/admin/"}}).status)
		require.True(t, fresh.signedIn(), "the new token signs in")

		delisted := service(newToken)
		require.False(t, delisted.clientWith(t, adaID).signedIn(), "a login off the admin list is no longer signed in")
		require.True(t, delisted.clientWith(t, fresh.session()).signedIn())

		back := service(testToken, "ada-gh")
		require.False(t, back.clientWith(t, tokID).signedIn(), "an ended session stays ended")
		require.False(t, back.clientWith(t, adaID).signedIn())
		require.Empty(t, gh.Violations())
	})
}

// A person's role changed on the People page ends their session; signing
// in again gives them the new role.
func TestDemotedPersonSignsInAgainAsAMember(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		gh := fakegithub.New(t)
		ps := people.New(d, nil)
		grace, err := ps.Create(ctx, people.Person{Name: "Grace", Role: people.RoleAdmin, GitHub: []string{"grace-gh"}})
		require.NoError(t, err)
		p := newPanelWith(t, d, promptparts.BuiltinDefaults(), Deps{People: ps}, Config{Token: testToken,
			OAuth: githubOAuth(gh), PublicURL: "http://panel.example"})
		g := p.client(t)
		require.Equal(t, http.StatusSeeOther, g.githubSignIn(gh, "grace-gh").status)
		require.True(t, g.signedIn())

		admin := p.client(t)
		admin.signInToken()
		res := admin.post("/admin/people", url.Values{"csrf": {admin.csrf()}, "op": {"save"}, "id": {itoa(grace.ID)},
			"name": {"Grace"}, "role": {people.RoleMember}, "github": {"grace-gh"}})
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		got, err := ps.Get(ctx, d, grace.ID)
		require.NoError(t, err)
		require.Equal(t, people.RoleMember, got.Role)
		require.False(t, g.signedIn(), "the admin session ended with the demotion")

		require.Equal(t, http.StatusSeeOther, g.githubSignIn(gh, "grace-gh").status)
		res = g.post("/admin/prompts/runtime/work", url.Values{"csrf": {g.csrf()}, "base_revision": {"0"}, "text": {"Mine."}, "action": {"save"}})
		require.Equal(t, http.StatusForbidden, res.status, "she is a member now")
	})
}

// testClock is a clock a test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A session left alone ends after two hours; one in use ends at its cap,
// eight hours after the sign-in.
func TestSessionsEndWhenIdleAndAtTheirCap(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		clock := &testClock{now: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
		p := newPanelWith(t, d, promptparts.BuiltinDefaults(), Deps{}, Config{Token: testToken, Now: clock.Now})
		c := p.client(t)
		c.signInToken()
		clock.advance(2*time.Hour - time.Minute)
		require.True(t, c.signedIn(), "used within two hours")
		clock.advance(2*time.Hour + time.Minute)
		require.False(t, c.signedIn(), "two hours without a request end it")

		c = p.client(t)
		c.signInToken()
		for range 5 {
			clock.advance(90 * time.Minute)
			require.True(t, c.signedIn(), "in use")
		}
		clock.advance(31 * time.Minute)
		require.False(t, c.signedIn(), "eight hours after the sign-in it ends, in use or not")
	})
}
