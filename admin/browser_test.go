package admin

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/people"
)

// Browser tests drive Debian's Chromium through chromedp against a panel
// served by httptest over a real database. Each saves screenshots to
// $SUPERAGENT_ARTIFACTS (default artifacts/ at the repository root).
// Without Chromium they are skipped, except under CI=true.

var screenshotsForDocs = flag.Bool("screenshots-for-docs", false,
	"also write the README's screenshots to docs/images/")

// browser starts a fresh headless Chromium with a window of width x 900.
func browser(t *testing.T, width int) context.Context {
	t.Helper()
	path := os.Getenv("SUPERAGENT_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Chromium not found at %s: CI must run the browser tests", path)
		}
		t.Skipf("Chromium not found at %s: skipping the browser test", path)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		// The panel scrolls smoothly unless reduced motion is asked for; a
		// click computed mid-scroll lands beside its target, so the tests
		// ask for what a user who turned animations off would see.
		chromedp.Flag("force-prefers-reduced-motion", true),
		chromedp.Flag("force-device-scale-factor", "1"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelBrowser()
		cancelAlloc()
	})
	require.NoError(t, chromedp.Do(ctx), "starting Chromium")
	return ctx
}

func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SUPERAGENT_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "artifacts")
	}
	dir = filepath.Join(dir, "admin")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// screenshot saves the whole page as a PNG artifact named after the test,
// and as docs/images/<docName> when -screenshots-for-docs is given.
func screenshot(t *testing.T, ctx context.Context, name, docName string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	savePNG(t, png, name, docName)
}

// viewportShot saves what the window shows, as screenshot does.
func viewportShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	savePNG(t, png, name, "")
}

func savePNG(t *testing.T, png []byte, name, docName string) {
	t.Helper()
	file := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "-" + name + ".png"
	require.NoError(t, os.WriteFile(filepath.Join(artifactsDir(t), file), png, 0o644))
	if docName != "" && *screenshotsForDocs {
		require.NoError(t, os.MkdirAll(filepath.Join("..", "docs", "images"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "images", docName), png, 0o644))
	}
}

// signInBrowser gives the browser the session a GitHub sign-in gives the
// admin name (TestBrowserGitHubSignIn goes through the flow itself).
func signInBrowser(t *testing.T, ctx context.Context, base, name string) {
	t.Helper()
	v, ok := panels.Load(base)
	require.True(t, ok, "no test panel at %s", base)
	id := testSession(t, v.(*panel).admin, name, people.RoleAdmin)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/admin/signin"), chromedp.WaitVisible(chromedp.CSS("#token"))))
	_, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie = "`+CookieName+`=`+id+`; path=/"`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/admin/prompts"),
		chromedp.WaitVisible(chromedp.CSS("table.list")),
	))
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err)
	return s
}

func value(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
	require.NoError(t, err)
	return s
}

// click presses a button that loads another page and waits for waitFor on
// it. The old page's body is marked first, so that an element the old page
// also has does not count.
func click(t *testing.T, ctx context.Context, button, waitFor string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetAttributeValue(chromedp.CSS("body"), "data-left", "1"),
		chromedp.Click(chromedp.CSS(button)),
		chromedp.WaitReady(chromedp.CSS("body:not([data-left])")),
		chromedp.WaitVisible(chromedp.CSS(waitFor)),
	))
}
