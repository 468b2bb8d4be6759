package admin_test

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/superagent-dev/superagent/admin"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// How main wires the panel: the panel's cookie authenticates /api beside
// the bearer token, River's job view is handed in, and the panel mounts
// itself under /admin on the root router.
func Example() {
	ctx := context.Background()
	logger := slog.Default()
	var (
		d        *db.DB               // opened and migrated
		q        *queue.Queue         // initialised
		prompts  *promptparts.Service // started
		sessions *session.Store       // the session runtime's Store()
		token    = "the admin token"
	)
	jobs, err := q.UIHandler(ctx, "/admin/jobs", logger)
	if err != nil {
		panic(err)
	}
	store := tickets.New(tickets.Config{})
	panel, err := admin.New(admin.Config{Token: token, Jobs: jobs, Logger: logger}, d, prompts, admin.Deps{
		Tickets:  store,
		Sessions: sessions,
		Pauser:   tickets.NewPauser(d, store),
	})
	if err != nil {
		panic(err)
	}
	hs := httpserver.New(httpserver.Config{Logger: logger, Authenticators: []httpserver.Authenticator{
		httpserver.BearerToken{Token: token},
		panel.Authenticator(),
	}})
	prompts.Routes(hs.API)
	panel.Routes(hs.Root)
	_ = http.ListenAndServe(":8080", hs)
}
