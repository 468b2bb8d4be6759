package admin

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/promptparts"
)

// away follows a redirect to a page outside the panel (Feishu's or
// GitHub's sign-in, which approve at once for whoever the fake has signed
// in) and returns the panel's page it sends the browser back to.
func (c *client) away(location string) response {
	c.t.Helper()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := noFollow.Get(location)
	require.NoError(c.t, err)
	r.Body.Close()
	require.Equal(c.t, http.StatusFound, r.StatusCode, "the sign-in page approves and sends the browser back")
	back, err := url.Parse(r.Header.Get("Location"))
	require.NoError(c.t, err)
	require.Equal(c.t, "panel.example", back.Host, "back to the service's public URL")
	return c.get(back.Path + "?" + back.RawQuery)
}

// The link the bot offers a Feishu user works only for them: whoever
// opens it first signs in to Feishu, and a browser signed in as anyone
// else stops there, before GitHub, with nothing linked. The person
// themselves goes on to GitHub and links their login.
func TestLinkIsCompletedOnlyByItsFeishuUser(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		gh, fs := fakegithub.New(t), fakefeishu.New(t)
		fs.AddUser(fakefeishu.User{OpenID: "ou_rita", Name: "Rita"})
		fs.AddUser(fakefeishu.User{OpenID: "ou_mallory", Name: "Mallory"})
		fsc, err := feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "app-secret", BaseURL: fs.URL, ChatInterval: -1}, nil, nil)
		require.NoError(t, err)
		ps := people.New(d, nil)
		_, err = ps.SeenOnFeishu(ctx, "ou_rita", "Rita")
		require.NoError(t, err)
		oauth := githubOAuth(gh)
		p := newPanelWith(t, d, promptparts.BuiltinDefaults(), Deps{People: ps, FeishuSignIn: fsc},
			Config{Token: testToken, OAuth: oauth, PublicURL: "http://panel.example"})
		offer, err := url.Parse(LinkOfferURL("http://panel.example", oauth, "ou_rita", time.Now()))
		require.NoError(t, err)
		linked := func() []string {
			rita, ok, err := ps.By(ctx, d, people.KindFeishuOpenID, "ou_rita")
			require.NoError(t, err)
			require.True(t, ok)
			return rita.GitHub
		}

		// Mallory got hold of Rita's link.
		mallory := p.client(t)
		res := mallory.get(offer.Path + "?" + offer.RawQuery)
		require.Equal(t, http.StatusOK, res.status, res.body)
		require.Contains(t, res.body, `<strong id="link-name">Rita</strong>`)
		res = mallory.post("/oauth/github/link", url.Values{"t": {offer.Query().Get("t")}})
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		require.Contains(t, res.location, fs.URL+fakefeishu.AuthorizePath, "the link starts with Feishu's sign-in")
		fs.SignInBrowser("ou_mallory")
		gh.SignInBrowser("mallory-gh")
		res = mallory.away(res.location)
		require.Equal(t, http.StatusForbidden, res.status, res.body)
		require.Contains(t, res.body, "You are signed in to Feishu as Mallory, but this link is for someone else")
		require.Empty(t, linked(), "nothing was linked")
		require.Zero(t, gh.UserTokens(), "Mallory never reached GitHub")

		// Rita opens it herself.
		rita := p.client(t)
		res = rita.post("/oauth/github/link", url.Values{"t": {offer.Query().Get("t")}})
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		fs.SignInBrowser("ou_rita")
		gh.SignInBrowser("rita-gh")
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		r, err := noFollow.Get(res.location)
		require.NoError(t, err)
		r.Body.Close()
		back, err := url.Parse(r.Header.Get("Location"))
		require.NoError(t, err)
		// Her Feishu callback, replayed from another browser, does nothing.
		require.Equal(t, http.StatusBadRequest, p.client(t).get(back.Path+"?"+back.RawQuery).status)
		res = rita.get(back.Path + "?" + back.RawQuery)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		require.Contains(t, res.location, gh.URL+"/login/oauth/authorize", "then GitHub")
		res = rita.away(res.location)
		require.Equal(t, http.StatusOK, res.status, res.body)
		require.Contains(t, res.body, "@rita-gh</strong> is now linked to <strong>Rita")
		require.Equal(t, []string{"rita-gh"}, linked())

		entries, err := p.admin.audit.list(ctx, d, 10)
		require.NoError(t, err)
		require.Equal(t, actionLinkGitHub, entries[0].Action)
		require.Equal(t, "Rita (@rita-gh)", entries[0].Actor)
		require.Empty(t, fs.Violations())
		require.Empty(t, gh.Violations())
	})
}
