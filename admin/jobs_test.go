package admin

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/probe"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/promptparts"
)

// River's job UI is mounted at /admin/jobs/ behind the panel's sign-in.
func TestJobsViewNeedsSignIn(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		q := queue.New(d, queue.Config{InsertOnly: true})
		require.NoError(t, q.Init())
		_, err := q.Insert(ctx, probe.Args{}, nil)
		require.NoError(t, err)
		jobs, err := q.UIHandler(ctx, "/admin/jobs", slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		p := newPanelWith(t, d, promptparts.BuiltinDefaults(), Deps{}, Config{Token: testToken, Jobs: jobs})
		c := p.client(t)

		res := c.get("/admin/jobs/")
		require.Equal(t, http.StatusSeeOther, res.status)
		require.Equal(t, "/admin/signin?next=%2Fadmin%2Fjobs%2F", res.location)
		res = c.get("/admin/jobs/api/jobs?state=available&limit=10")
		require.Equal(t, http.StatusSeeOther, res.status, "the job API is behind the sign-in too")

		c.signIn("ada")
		res = c.get("/admin/jobs")
		require.Equal(t, http.StatusMovedPermanently, res.status)
		res = c.get("/admin/jobs/")
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, strings.ToLower(res.body), "<!doctype html>")
		res = c.get("/admin/jobs/api/jobs?state=available&limit=10")
		require.Equal(t, http.StatusOK, res.status, res.body)
		require.Contains(t, res.body, `"kind":"probe"`)

		// Changing a job from another site is refused.
		req, err := http.NewRequest(http.MethodPost, p.srv.URL+"/admin/jobs/api/jobs/cancel", strings.NewReader(`{"job_ids": ["1"]}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		res = c.do(req)
		require.Equal(t, http.StatusForbidden, res.status)
	})
}
