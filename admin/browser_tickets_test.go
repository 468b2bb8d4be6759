package admin

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/tickets"
)

func TestBrowserPauseATicket(t *testing.T) {
	ctx := browser(t, 1280)
	d := dbtest.SQLite(t)
	w := newTicketWorld(t, d)
	signInBrowser(t, ctx, w.panel.srv.URL, "Ada")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(w.panel.srv.URL+"/admin/tickets"),
		chromedp.WaitVisible(chromedp.CSS("table.list")),
		chromedp.SetValue(chromedp.CSS("#state"), "open"),
		chromedp.Submit(chromedp.CSS("#q")),
		chromedp.WaitReady(chromedp.CSS(`select#state option[value="open"][selected]`)),
	))
	list := text(t, ctx, "table.list tbody")
	require.Contains(t, list, "Fix the flaky login test")
	require.NotContains(t, list, "Upgrade the linter")
	screenshot(t, ctx, "list", "")

	click(t, ctx, "table.list tbody a", "#sessions-h")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("details.toolcall summary"))))
	require.Contains(t, text(t, ctx, "details.toolcall"), "time.Sleep(2 * time.Second)")
	require.Contains(t, text(t, ctx, "details.session table.list"), "revision 1")
	screenshot(t, ctx, "ticket", "")

	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#reason"), "waiting for the release")))
	click(t, ctx, `button[value="pause"]`, ".flash-ok")
	require.Equal(t, "paused", text(t, ctx, "h1 .state"))
	require.Contains(t, text(t, ctx, ".flash-ok"), "Ticket paused.")
	require.Contains(t, text(t, ctx, ".pause-now"), "Paused by Ada")
	require.Contains(t, text(t, ctx, ".pause-now"), "waiting for the release")
	tk, err := w.store.Ticket(context.Background(), d, w.ticket.ID)
	require.NoError(t, err)
	require.Equal(t, tickets.TicketPaused, tk.State, "the real Pauser holds the Ticket in the database")
	require.Equal(t, &tickets.Pause{By: "Ada", At: worldNow, Reason: "waiting for the release"}, tk.Pause)
	screenshot(t, ctx, "paused", "")

	click(t, ctx, `button[value="resume"]`, ".flash-ok")
	require.Equal(t, "open", text(t, ctx, "h1 .state"))
	require.Contains(t, text(t, ctx, `section[aria-labelledby="pause-h"] table`), "Resumed")
	tk, err = w.store.Ticket(context.Background(), d, w.ticket.ID)
	require.NoError(t, err)
	require.Equal(t, tickets.TicketOpen, tk.State, "resuming lifts the hold in the database")
	require.Nil(t, tk.Pause)
}
