package admin

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/promptparts"
)

func TestBrowserSectionsAndPolicy(t *testing.T) {
	ctx := browser(t, 1280)
	p := newPanel(t, dbtest.SQLite(t), promptparts.BuiltinDefaults(), Deps{})
	signInBrowser(t, ctx, p.srv.URL, "Ada")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(p.srv.URL+"/admin/sections"),
		chromedp.WaitVisible(chromedp.CSS("#f-sections-ticket_scope-text")),
		chromedp.SendKeys(chromedp.CSS("#f-sections-ticket_scope-text"), "Stop at a draft pull request when the scope is unclear."),
		chromedp.SetValue(chromedp.CSS("#f-sections-communication-review_bots"), "coderabbit\nsonar-bot"),
	))
	click(t, ctx, `button[value="preview"]`, "table.diff")
	screenshot(t, ctx, "sections-preview", "")
	click(t, ctx, `button[value="save"]`, ".flash-ok")
	require.Equal(t, "Saved as revision 1.", text(t, ctx, ".flash-ok"))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(p.srv.URL+"/admin/policy"),
		chromedp.WaitVisible(chromedp.CSS("#mode-propose")),
		chromedp.Click(chromedp.CSS("#mode-propose")),
	))
	click(t, ctx, `button[value="settings"]`, ".flash-ok")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#f-policy-rules-0--id"), "flaky-tests"),
		chromedp.SendKeys(chromedp.CSS("#f-policy-rules-0--name"), "Flaky tests"),
		chromedp.SendKeys(chromedp.CSS("#f-policy-rules-0--instruction"), "A test that fails without a code change: find the cause and fix it."),
	))
	click(t, ctx, `button[value="add"]`, ".flash-ok")
	require.Equal(t, "Saved as revision 3.", text(t, ctx, ".flash-ok"))
	click(t, ctx, `button[value="disable"]`, ".flash-ok")
	require.Equal(t, "Saved as revision 4.", text(t, ctx, ".flash-ok"))
	require.Contains(t, text(t, ctx, "form.rule legend"), "disabled")
	screenshot(t, ctx, "policy", "")

	v, err := p.prompts.Latest(context.Background())
	require.NoError(t, err)
	require.Equal(t, "propose", string(v.Settings.Policy.Mode))
	require.Len(t, v.Settings.Policy.Rules, 1)
	require.False(t, v.Settings.Policy.Rules[0].Enabled)
	require.Equal(t, []string{"coderabbit", "sonar-bot"}, v.Settings.Sections.Communication.ReviewBots)
}
