package admin

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/webhooks"
)

const (
	teamChat  = "oc_team00000000000000000000000001"
	quietChat = "oc_quiet0000000000000000000000002"
)

// chatsPanel is a panel whose chats page reads and changes the chats the
// webhooks service keeps: the team's chat, named and heard from, and one
// known only by its id.
func chatsPanel(t *testing.T, d *db.DB) *panel {
	t.Helper()
	q := queue.New(d, queue.Config{InsertOnly: true})
	svc, err := webhooks.New(webhooks.Config{}, d, q, nil, nil, nil)
	require.NoError(t, err)
	require.NoError(t, q.Init())
	ctx := context.Background()
	for _, id := range []string{teamChat, quietChat} {
		_, err := svc.SetProactive(ctx, id, false, "seed")
		require.NoError(t, err)
	}
	_, err = d.Exec(ctx, `UPDATE feishu_chats SET name = 'Web team', active = TRUE, last_message_at = $2 WHERE chat_id = $1`,
		teamChat, time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC))
	require.NoError(t, err)
	return newPanelWith(t, d, promptparts.BuiltinDefaults(), Deps{Chats: svc}, Config{Token: testToken})
}

func proactiveOf(t *testing.T, d *db.DB, chat string) (bool, string) {
	t.Helper()
	var on bool
	var by string
	require.NoError(t, d.QueryRow(context.Background(), "SELECT proactive, proactive_by FROM feishu_chats WHERE chat_id = $1", chat).Scan(&on, &by))
	return on, by
}

// The chats page lists the known Feishu chats and turns a chat's proactive
// admission on and off from a form, as the signed-in person.
func TestBrowserChats(t *testing.T) {
	ctx := browser(t, 1280)
	d := dbtest.SQLite(t)
	p := chatsPanel(t, d)
	signInBrowser(t, ctx, p.srv.URL, "Ada")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(p.srv.URL+"/admin/chats"), chromedp.WaitVisible(chromedp.CSS("#chats"))))

	team := `#chats tr[data-chat="` + teamChat + `"]`
	row := text(t, ctx, team)
	for _, want := range []string{"Web team", teamChat, "off", "2026-11-30 09:15 UTC"} {
		require.Contains(t, row, want)
	}
	require.Contains(t, text(t, ctx, `#chats tr[data-chat="`+quietChat+`"]`), "name not known")
	require.Contains(t, text(t, ctx, `#chats tr[data-chat="`+quietChat+`"]`), "none yet")
	screenshot(t, ctx, "chats", "")

	click(t, ctx, team+` button[value="on"]`, team+` button[value="off"]`)
	require.Contains(t, text(t, ctx, ".flash"), "Proactive admission is on")
	require.Contains(t, text(t, ctx, team+" .proactive"), "on (by Ada)")
	on, by := proactiveOf(t, d, teamChat)
	require.True(t, on)
	require.Equal(t, "Ada", by)
	on, _ = proactiveOf(t, d, quietChat)
	require.False(t, on, "only the chat pressed changes")

	click(t, ctx, team+` button[value="off"]`, team+` button[value="on"]`)
	on, _ = proactiveOf(t, d, teamChat)
	require.False(t, on)
}

// A change without the session's CSRF token, or with a bad chat id or
// value, is refused and changes nothing.
func TestChatsRefusesBadChanges(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		p := chatsPanel(t, d)
		c := p.client(t)
		c.signIn("Ada")
		res := c.post("/admin/chats", url.Values{"chat_id": {teamChat}, "proactive": {"on"}})
		require.Equal(t, http.StatusForbidden, res.status, "no CSRF token")
		token := c.csrf()
		for _, form := range []url.Values{
			{"csrf": {token}, "chat_id": {"not-a-chat"}, "proactive": {"on"}},
			{"csrf": {token}, "chat_id": {teamChat}, "proactive": {"maybe"}},
		} {
			require.Equal(t, http.StatusBadRequest, c.post("/admin/chats", form).status)
		}
		on, _ := proactiveOf(t, d, teamChat)
		require.False(t, on)
		res = c.post("/admin/chats", url.Values{"csrf": {token}, "chat_id": {teamChat}, "proactive": {"on"}})
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		on, _ = proactiveOf(t, d, teamChat)
		require.True(t, on)

		signedOut := p.client(t)
		require.Equal(t, http.StatusSeeOther, signedOut.get("/admin/chats").status, "the page needs a sign-in")
	})
}
