package admin

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// twentyPeople stores 20 people as a team has them: names of different
// lengths, GitHub logins, Feishu open_ids and union_ids, some admins.
func twentyPeople(t *testing.T, s *people.Store) {
	t.Helper()
	for i := range 20 {
		p := people.Person{Name: fmt.Sprintf("Person %02d %s", i+1, []string{"Li", "Ada Lovelace", "María-José Carreño Quiñones"}[i%3]),
			GitHub:        []string{fmt.Sprintf("dev-%02d", i+1)},
			FeishuOpenIDs: []string{fmt.Sprintf("ou_%032d", i+1)}}
		if i%4 == 0 {
			p.Role = people.RoleAdmin
			p.FeishuUnionIDs = []string{fmt.Sprintf("on_%032d", i+1)}
			p.GitHub = append(p.GitHub, fmt.Sprintf("second-login-%02d", i+1))
		}
		_, err := s.Create(context.Background(), p)
		require.NoError(t, err)
	}
}

// The People page is a compact table: 20 people are 20 rows of one line
// each, and a row's edit form opens over the page without growing the row.
func TestBrowserPeopleOneRowEach(t *testing.T) {
	ctx := browser(t, 1280)
	d := dbtest.SQLite(t)
	p, s := peoplePanel(t, d)
	twentyPeople(t, s)
	signInBrowser(t, ctx, p.srv.URL, "Ada")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(p.srv.URL+"/admin/people"), chromedp.WaitVisible(chromedp.CSS("#people"))))

	heights := func() []float64 {
		t.Helper()
		h, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](
			`Array.from(document.querySelectorAll("#people tbody tr")).map(r => r.getBoundingClientRect().height)`))
		require.NoError(t, err)
		return h
	}
	rows := heights()
	require.Len(t, rows, 20, "one row per person")
	for i, h := range rows {
		require.Less(t, h, 60.0, "row %d is one line, not a form", i+1)
	}
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[int](
		`Array.from(document.querySelectorAll("#people form.person")).filter(f => f.checkVisibility()).length`))
	require.NoError(t, err)
	require.Zero(t, hidden, "the edit forms are folded away")
	screenshot(t, ctx, "people", "")

	// Open the seventh person's edit disclosure: the form shows, the row
	// keeps its height, and saving from it changes that person.
	all, err := s.List(context.Background())
	require.NoError(t, err)
	target := all[6]
	row := `#people tr[data-person="` + itoa(target.ID) + `"]`
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(row+" details.edit > summary")), chromedp.WaitVisible(chromedp.CSS(row+" form.person"))))
	require.Less(t, heights()[6], 60.0, "the open form lies over the page, not in the row")
	screenshot(t, ctx, "people-edit", "")
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(row+` select[name="role"]`), "admin")))
	click(t, ctx, row+" form.person button", ".flash")
	got, err := s.Get(context.Background(), d, target.ID)
	require.NoError(t, err)
	require.Equal(t, people.RoleAdmin, got.Role)
	require.Len(t, heights(), 20)
}

// With no Ticket yet the Tickets page says how work arrives, with the
// bot's login, and its search box looks like the panel's other fields.
func TestBrowserEmptyTickets(t *testing.T) {
	ctx := browser(t, 1280)
	d := dbtest.SQLite(t)
	p := newPanelWith(t, d, promptparts.BuiltinDefaults(), Deps{Tickets: tickets.New(tickets.Config{})},
		Config{Token: testToken, GitHubBot: "acme-agent", Feishu: true})
	signInBrowser(t, ctx, p.srv.URL, "Ada")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(p.srv.URL+"/admin/tickets"), chromedp.WaitVisible(chromedp.CSS("#no-tickets"))))
	require.Equal(t, "No Tickets yet. Work arrives when people mention @acme-agent in an issue, a pull request or a comment on a repository "+
		"where the GitHub App is installed, or mention the bot in a Feishu group it was added to, or write to it directly.",
		text(t, ctx, "#no-tickets p"))
	style, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const q = getComputedStyle(document.querySelector("#q")), s = getComputedStyle(document.querySelector("#state"));
		return [q.borderTopStyle, q.borderTopColor, q.borderRadius, q.paddingLeft, s.borderTopColor, s.borderRadius, s.paddingLeft];
	})()`))
	require.NoError(t, err)
	require.Equal(t, "solid", style[0])
	require.Equal(t, style[4:7], style[1:4], "the search box has the select's border, corners and padding")
	screenshot(t, ctx, "empty", "")

	// A filter that matches nothing says so instead.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(p.srv.URL+"/admin/tickets?q=nothing"), chromedp.WaitVisible(chromedp.CSS("main p.muted"))))
	require.Contains(t, text(t, ctx, "main"), "No Ticket matches.")
}

// / leads to the panel: the sign-in when not signed in, the overview
// when signed in; the overview's Tickets card says how work arrives, and
// the parts list describes each part.
func TestRootLeadsToThePanel(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		p := newPanelWith(t, d, promptparts.BuiltinDefaults(), Deps{}, Config{Token: testToken})
		c := p.client(t)
		res := c.get("/")
		require.Equal(t, http.StatusSeeOther, res.status)
		require.Equal(t, "/admin/signin?next=%2Fadmin%2F", res.location)
		c.signIn("ada")
		res = c.get("/")
		require.Equal(t, http.StatusSeeOther, res.status)
		require.Equal(t, "/admin/", res.location)
		res = c.get("/admin/")
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, "Nothing can bring work yet: neither GitHub nor Feishu is set up.")

		// The parts list says in a line what each part is for.
		res = c.get("/admin/prompts")
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, `<a href="/admin/prompts/runtime/work"><code>runtime/work</code></a></th>
      <td class="describe">How an Executor carries its Ticket: read, change, verify, report.</td>`)
	})
}
