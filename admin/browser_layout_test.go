package admin

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/promptparts"
)

// On a narrow window every page fits its width (no sideways scrolling),
// and the keyboard reaches the skip link first.
func TestBrowserNarrowWindowAndKeyboard(t *testing.T) {
	ctx := browser(t, 420)
	d := dbtest.SQLite(t)
	old := newPanel(t, d, release(t, map[string]string{"runtime/work": "# Work\n\nConfirm once.\n"}), Deps{})
	saveAs(t, old, "ada", `{"base_revision": 0, "overrides": {"runtime/work": {"text": "# Work\n\nOur way.\n"}}}`)
	p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{})
	signInBrowser(t, ctx, p.srv.URL, "Ada")
	for _, page := range []struct{ path, name string }{
		{"/admin/prompts", "prompts"},
		{"/admin/prompts/runtime/work", "default-updated"},
		{"/admin/sections", "sections"},
		{"/admin/policy", "policy"},
		{"/admin/versions", "versions"},
	} {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(p.srv.URL+page.path), chromedp.WaitVisible(chromedp.CSS("h1"))))
		over, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`))
		require.NoError(t, err)
		require.LessOrEqual(t, over, 0, "%s scrolls sideways by %dpx", page.path, over)
		viewportShot(t, ctx, page.name)
	}

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(p.srv.URL+"/admin/prompts"), chromedp.WaitVisible(chromedp.CSS("h1")), chromedp.KeyEvent("\t")))
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.className`))
	require.NoError(t, err)
	require.Equal(t, "skip", focused)
}
