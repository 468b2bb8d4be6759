package admin_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/admin"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// TestWiredAsMainWiresIt wires the panel as main does: the panel's cookie
// authenticates /api beside the bearer token, River's job view is handed
// in, and the panel mounts itself under /admin on the root router. The
// token then reaches the configuration API and the panel's pages.
func TestWiredAsMainWiresIt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		// River's job view runs until its context ends, as main's does at
		// shutdown.
		ctx, stop := context.WithCancel(context.Background())
		t.Cleanup(stop)
		logger := slog.New(slog.DiscardHandler)
		const token = "the admin token"
		q := queue.New(d, queue.Config{InsertOnly: true})
		require.NoError(t, q.Init())
		prompts, err := promptparts.New(promptparts.Config{Defaults: promptparts.BuiltinDefaults()}, d)
		require.NoError(t, err)
		require.NoError(t, prompts.Start(ctx))
		t.Cleanup(prompts.Stop)
		sessions := session.NewStore(d, nil, nil)

		jobs, err := q.UIHandler(ctx, "/admin/jobs", logger)
		require.NoError(t, err)
		store := tickets.New(tickets.Config{})
		panel, err := admin.New(admin.Config{Token: token, Jobs: jobs, Logger: logger}, d, prompts, admin.Deps{
			Tickets:  store,
			Sessions: sessions,
			Pauser:   tickets.NewPauser(d, store),
		})
		require.NoError(t, err)
		t.Cleanup(panel.CloseStreams)
		hs := httpserver.New(httpserver.Config{Logger: logger, Authenticators: []httpserver.Authenticator{
			httpserver.BearerToken{Token: token},
			panel.Authenticator(),
		}})
		prompts.Routes(hs.API)
		panel.Routes(hs.Root)
		srv := httptest.NewServer(hs)
		t.Cleanup(srv.Close)

		get := func(path, bearer string) int {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
			require.NoError(t, err)
			if bearer != "" {
				req.Header.Set("Authorization", "Bearer "+bearer)
			}
			res, err := srv.Client().Do(req)
			require.NoError(t, err)
			require.NoError(t, res.Body.Close())
			return res.StatusCode
		}
		require.Equal(t, http.StatusUnauthorized, get("/api/config", ""), "the API wants the token or the panel's cookie")
		require.Equal(t, http.StatusOK, get("/api/config", token))
		require.Equal(t, http.StatusOK, get("/admin/", token), "the panel is mounted under /admin")
	})
}
