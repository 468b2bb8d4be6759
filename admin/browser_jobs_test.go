package admin

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/probe"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/promptparts"
)

// River's job UI loads behind the panel's sign-in and lists the jobs.
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
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(p.srv.URL+"/admin/jobs/jobs?state=available")))
	listed, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.innerText.includes("probe")`, chromedp.WithPollingTimeout(20*time.Second)))
	require.NoError(t, err, "the job view never listed the probe job")
	require.True(t, listed)
	screenshot(t, ctx, "jobs", "")
}
