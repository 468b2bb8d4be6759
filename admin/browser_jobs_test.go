package admin

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/probe"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/promptparts"
)

// cspViolations records, in every page the browser opens from now on, what
// the Content-Security-Policy blocked; read it with recordedViolations.
func cspViolations(t *testing.T, ctx context.Context) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.__csp = []; document.addEventListener("securitypolicyviolation",
				e => window.__csp.push(e.effectiveDirective + " " + (e.blockedURI || "inline") + " " + e.sourceFile + ":" + e.lineNumber));`,
		})
		return err
	})))
}

func recordedViolations(t *testing.T, ctx context.Context) []string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__csp || ["the recorder did not run"]`))
	require.NoError(t, err)
	// River UI's schema library (zod) probes for eval with Function("")
	// inside try/catch and, refused, works without it: a report, not a
	// breakage, and the reason the policy can leave eval out.
	return slices.DeleteFunc(v, func(s string) bool { return strings.HasPrefix(s, "script-src eval ") })
}

// River's job UI loads behind the panel's sign-in and lists the jobs, under
// a Content-Security-Policy that it works with: nothing it does is blocked.
func TestBrowserJobs(t *testing.T) {
	ctx := browser(t, 1280)
	d := dbtest.SQLite(t)
	qctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := queue.New(d, queue.Config{InsertOnly: true})
	require.NoError(t, q.Init())
	_, err := q.Insert(qctx, probe.Args{}, nil)
	require.NoError(t, err)
	jobs, err := q.UIHandler(qctx, "/admin/jobs", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	p := newPanelWith(t, d, promptparts.BuiltinDefaults(), Deps{}, Config{Token: testToken, Jobs: jobs})

	signInBrowser(t, ctx, p.srv.URL, "Ada")
	cspViolations(t, ctx)
	for _, page := range []struct{ path, shot string }{{"/admin/jobs/jobs?state=available", "jobs"}, {"/admin/jobs/jobs/1", "job"}} {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(p.srv.URL+page.path)))
		shown, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.innerText.includes("probe")`, chromedp.WithPollingTimeout(20*time.Second)))
		require.NoError(t, err, "%s never showed the probe job", page.path)
		require.True(t, shown)
		screenshot(t, ctx, page.shot, "")
		require.Empty(t, recordedViolations(t, ctx), "%s under its Content-Security-Policy", page.path)
	}

	// A way back to the panel, which River's UI has no place for.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`#superagent-nav a[href="/admin/"]`)),
		chromedp.Click(chromedp.CSS(`#superagent-nav a[href="/admin/"]`)),
		chromedp.WaitVisible(chromedp.CSS("h1"))))
	back, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	require.NoError(t, err)
	require.Equal(t, p.srv.URL+"/admin/", back)
	require.Empty(t, recordedViolations(t, ctx), "the way back under the job UI's policy")

	// The policy is there, on the page and on what it loads.
	res := p.client(t).get("/admin/jobs/")
	require.Equal(t, http.StatusSeeOther, res.status, "signed out")
	c := p.client(t)
	c.signIn("Ada")
	req, err := http.NewRequest(http.MethodGet, p.srv.URL+"/admin/jobs/jobs", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/html")
	res = c.do(req)
	require.Equal(t, http.StatusOK, res.status)
	csp := res.header.Get("Content-Security-Policy")
	require.True(t, strings.HasPrefix(csp, "default-src 'self'"), "job view CSP: %q", csp)
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.NotContains(t, csp, "unsafe-eval")
}
