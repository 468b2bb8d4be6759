package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/promptparts"
)

func peoplePanel(t *testing.T, d *db.DB) (*panel, *people.Store) {
	t.Helper()
	s := people.New(d, nil)
	return newPanel(t, d, promptparts.BuiltinDefaults(), Deps{People: s}), s
}

// An admin adds and changes people from the page's forms; a person with
// a malformed login is refused with every problem listed and nothing
// stored.
func TestBrowserPeople(t *testing.T) {
	ctx := browser(t, 1280)
	d := dbtest.SQLite(t)
	p, s := peoplePanel(t, d)
	signInBrowser(t, ctx, p.srv.URL, "Ada")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(p.srv.URL+"/admin/people"), chromedp.WaitVisible(chromedp.CSS("#add-person"))))
	require.Contains(t, text(t, ctx, "main"), "Nobody yet.")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#add-name"), "Grace Hopper"),
		chromedp.SendKeys(chromedp.CSS("#add-github"), "Grace, hopper2"),
		chromedp.SendKeys(chromedp.CSS("#add-open"), "ou_grace"),
	))
	click(t, ctx, "#add-person button", "#people")
	require.Contains(t, text(t, ctx, ".flash"), "Saved.")
	all, err := s.List(context.Background())
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.Equal(t, "Grace Hopper", all[0].Name)
	require.Equal(t, []string{"grace", "hopper2"}, all[0].GitHub)
	require.Equal(t, people.RoleMember, all[0].Role)
	screenshot(t, ctx, "people", "")

	// Make her an admin from her row.
	row := `#people tr[data-person="` + itoa(all[0].ID) + `"]`
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(row+" details.edit > summary")), chromedp.WaitVisible(chromedp.CSS(row+" form.person")),
		chromedp.SetValue(chromedp.CSS(row+` select[name="role"]`), "admin")))
	click(t, ctx, row+` form.person button`, ".flash")
	got, err := s.Get(context.Background(), d, all[0].ID)
	require.NoError(t, err)
	require.Equal(t, people.RoleAdmin, got.Role)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#add-name"), "Mallory"),
		chromedp.SendKeys(chromedp.CSS("#add-github"), "grace -bad-"),
	))
	click(t, ctx, "#add-person button", "#people-problems")
	problems := text(t, ctx, "#people-problems")
	require.Contains(t, problems, `github login "-bad-" is not a GitHub login`)
	require.Contains(t, problems, "Nothing was changed")
	all, err = s.List(context.Background())
	require.NoError(t, err)
	require.Len(t, all, 1, "the refused person is not stored")

	entries, err := p.admin.audit.list(context.Background(), d, 10)
	require.NoError(t, err)
	require.Equal(t, actionPersonUpdate, entries[0].Action)
	require.Equal(t, "Ada", entries[0].Actor)
}

// A member sees the people but changes none of them, in the panel or on
// /api; the admin token and admins do, every change in the activity log
// under who made it.
func TestPeopleMembersReadAdminsChange(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		p, s := peoplePanel(t, d)
		ctx := context.Background()
		grace, err := s.Create(ctx, people.Person{Name: "Grace", GitHub: []string{"grace"}})
		require.NoError(t, err)

		member := p.client(t)
		member.signInAs("Bob (@bob)", people.RoleMember)
		res := member.get("/admin/people")
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, "Grace")
		require.NotContains(t, res.body, `id="add-person"`)
		csrf := member.csrf()
		res = member.post("/admin/people", url.Values{"csrf": {csrf}, "op": {"delete"}, "id": {itoa(grace.ID)}})
		require.Equal(t, http.StatusForbidden, res.status)
		res = member.post("/admin/prompts/runtime/work", url.Values{"csrf": {csrf}, "base_revision": {"0"}, "text": {"Mine."}, "action": {"save"}})
		require.Equal(t, http.StatusForbidden, res.status, "a member saves no prompt")
		req, err := http.NewRequest(http.MethodDelete, p.srv.URL+"/api/people/"+itoa(grace.ID), nil)
		require.NoError(t, err)
		req.Header.Set(CSRFHeader, csrf)
		require.Equal(t, http.StatusUnauthorized, member.do(req).status)
		_, _, err = p.prompts.Current(ctx)
		require.NoError(t, err)
		var versions int
		require.NoError(t, d.QueryRow(ctx, `SELECT count(*) FROM prompt_versions WHERE revision > 0`).Scan(&versions))
		require.Zero(t, versions)
		still, err := s.List(ctx)
		require.NoError(t, err)
		require.Len(t, still, 2, "Bob, who signed in as the person he is, and Grace")
		require.Equal(t, "Grace", still[1].Name)

		api := func(method, path, body string) response {
			req, err := http.NewRequest(method, p.srv.URL+path, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/json")
			return member.do(req)
		}
		res = api(http.MethodPost, "/api/people", `{"name":"Linus","role":"root","github":["grace"]}`)
		require.Equal(t, http.StatusUnprocessableEntity, res.status, res.body)
		require.Contains(t, res.body, `role must be admin or member`)
		res = api(http.MethodPost, "/api/people", `{"name":"Linus","github":["torvalds"],"feishu_union_ids":["on_linus"]}`)
		require.Equal(t, http.StatusCreated, res.status, res.body)
		var linus people.Person
		require.NoError(t, json.Unmarshal([]byte(res.body), &linus))
		require.Equal(t, people.RoleMember, linus.Role)
		res = api(http.MethodPut, "/api/people/"+itoa(linus.ID), `{"name":"Linus T","role":"admin","github":["torvalds"]}`)
		require.Equal(t, http.StatusOK, res.status, res.body)
		res = api(http.MethodDelete, "/api/people/"+itoa(grace.ID), "")
		require.Equal(t, http.StatusNoContent, res.status, res.body)
		res = api(http.MethodGet, "/api/people", "")
		require.Equal(t, http.StatusOK, res.status)
		var list []people.Person
		require.NoError(t, json.Unmarshal([]byte(res.body), &list))
		require.Len(t, list, 2)
		require.Equal(t, "Bob", list[0].Name)
		require.Equal(t, "Linus T", list[1].Name)
		require.Nil(t, list[1].FeishuUnionIDs, "a PUT replaces the accounts")

		entries, err := p.admin.audit.list(ctx, d, 10)
		require.NoError(t, err)
		var actions []string
		for _, e := range entries {
			if strings.HasPrefix(e.Action, "person_") {
				require.Equal(t, "admin token", e.Actor)
				actions = append(actions, e.Action)
			}
		}
		require.Equal(t, []string{actionPersonDelete, actionPersonUpdate, actionPersonCreate}, actions)
	})
}

// The chats page sets the repositories a chat opens to its members; a
// malformed one is refused and nothing changes.
func TestChatReposFromThePanel(t *testing.T) {
	d := dbtest.SQLite(t)
	p := chatsPanel(t, d)
	c := p.client(t)
	c.signIn("Ada")
	csrf := c.csrf()
	res := c.post("/admin/chats", url.Values{"csrf": {csrf}, "chat_id": {teamChat}, "op": {"repos"}, "repos": {"octo/repo, octo/other"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	res = c.post("/admin/chats", url.Values{"csrf": {csrf}, "chat_id": {teamChat}, "op": {"repos"}, "repos": {"not a repo"}})
	require.Equal(t, http.StatusBadRequest, res.status)
	var repos string
	require.NoError(t, d.QueryRow(context.Background(), `SELECT repos FROM feishu_chats WHERE chat_id = $1`, teamChat).Scan(&repos))
	require.Equal(t, "octo/other octo/repo", repos)
	require.Contains(t, c.get("/admin/chats").body, `value="octo/other octo/repo"`)
	entries, err := p.admin.audit.list(context.Background(), d, 1)
	require.NoError(t, err)
	require.Equal(t, auditEntry{ID: entries[0].ID, CreatedAt: entries[0].CreatedAt, Actor: "Ada", Action: actionChatRepos,
		Target: "feishu_chat:" + teamChat, Detail: "octo/other octo/repo"}, entries[0])

	member := p.client(t)
	member.signInAs("Bob (@bob)", people.RoleMember)
	res = member.post("/admin/chats", url.Values{"csrf": {member.csrf()}, "chat_id": {teamChat}, "op": {"repos"}, "repos": {""}})
	require.Equal(t, http.StatusForbidden, res.status)
}
