package orchestrator_test

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/superagent-dev/superagent/admin"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/secret"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
	"github.com/superagent-dev/superagent/webhooks"
)

// How main wires the main Session: its own session runtime on the router
// model with the main prompt, the orchestrator as ingestion's card hook,
// its workers on the queue before Init, the Tickets API, and the Pauser
// for the panel.
func Example() {
	ctx := context.Background()
	var (
		d        *db.DB               // opened and migrated
		q        *queue.Queue         // created, not yet Init
		prompts  *promptparts.Service // started
		router   *model.Client        // SUPERAGENT_ROUTER_MODEL
		scrub    *secret.Scrubber     // every known secret
		gh       *githubapp.Client    // nil without a GitHub App
		fs       *feishu.Client       // nil without Feishu
		hooks    *webhooks.Service    // ingestion
		hs       *httpserver.Server
		reg      prometheus.Registerer
		logger   = slog.Default()
		store    = tickets.New(tickets.Config{})
		env      = []promptparts.Var{{Name: "deployment", Value: "production"}}
		botLogin = "superagent" // the GitHub App's slug
	)
	rt := session.New(session.Config{MaxSteps: 1 << 30}, d, router, orchestrator.PromptSource(prompts, env), scrub, nil)
	o, err := orchestrator.New(orchestrator.Config{
		Debounce: 2 * time.Second,
		Gate:     orchestrator.Gate{GitHubPermission: "write", FeishuChats: []string{"oc_team"}, AdminGitHubLogins: []string{"alice"}},
		BotLogin: botLogin, Environment: env, Registerer: reg, Logger: logger,
	}, orchestrator.Deps{DB: d, Queue: q, Tickets: store, Sessions: rt, Prompts: prompts,
		Acks: &outbox.Messenger{DB: d, GitHub: gh, Feishu: fs}})
	if err != nil {
		panic(err)
	}
	o.Register(q)
	hooks.AddHook(o)
	if err := q.Init(); err != nil {
		panic(err)
	}
	admin.NewTicketsAPI(d, store, rt.Store(), logger).Routes(hs.API)
	var _ admin.Pauser = tickets.NewPauser(d, store) // admin.Deps.Pauser
	_ = q.Start(ctx)
}
