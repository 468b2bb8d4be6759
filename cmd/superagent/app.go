package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/superagent-dev/superagent/admin"
	"github.com/superagent-dev/superagent/executor"
	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/gcfloor"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/modelhealth"
	"github.com/superagent-dev/superagent/internal/probe"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/retry"
	"github.com/superagent-dev/superagent/internal/secret"
	"github.com/superagent-dev/superagent/migrations"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/promptparts/trial"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/shots"
	"github.com/superagent-dev/superagent/tickets"
	"github.com/superagent-dev/superagent/webhooks"
)

// newLogger writes JSON logs to w, with every secret the process knows
// replaced before a line is written.
func newLogger(w io.Writer, cfg *config, level slog.Level) *slog.Logger {
	return slog.New(secret.NewHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}), cfg.scrub))
}

func migrate(ctx context.Context, cfg *config, stderr io.Writer) error {
	logger := newLogger(stderr, cfg, cfg.LogLevel)
	d, err := db.Open(ctx, cfg.DatabaseURL, db.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	if err := migrations.Apply(ctx, d, logger); err != nil {
		return err
	}
	logger.Info("database is up to date", "dialect", d.Dialect())
	return nil
}

// app is one process's parts, wired. Every process builds all of them so
// that it can work every kind of job; only serve mounts the HTTP routes.
type app struct {
	logger   *slog.Logger
	db       *db.DB
	registry *prometheus.Registry
	queue    *queue.Queue
	prompts  *promptparts.Service
	github   *githubapp.Client
	feishu   *feishu.Client
	webhooks *webhooks.Service
	tickets  *tickets.Store
	sessions *session.Store
	// orchestrator is nil when no model is configured: cards then wait as
	// candidates until a model is set and the service restarted.
	orchestrator *orchestrator.Orchestrator
	// executor runs the Tickets' Executor Sessions; nil with the
	// orchestrator.
	executor *executor.Executor
	// repoEnv holds the setup scripts, repository secrets and setup
	// outcomes.
	repoEnv *repoenv.Store
	// people is who is who; oauth the App's user authorization (off
	// without a client id and secret).
	people *people.Store
	oauth  *people.OAuth
}

func buildApp(ctx context.Context, cfg *config, logger *slog.Logger, d *db.DB) (*app, error) {
	a := &app{logger: logger, db: d, registry: prometheus.NewRegistry(), repoEnv: repoenv.New(d, cfg.secretsBox, nil),
		people: people.New(d, nil)}
	if cfg.GitHubClientID != "" {
		a.oauth = &people.OAuth{ClientID: cfg.GitHubClientID, ClientSecret: cfg.GitHubClientSecret, WebURL: cfg.GitHubWebURL, APIURL: cfg.GitHubAPIURL}
	}
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		tickets.NewStateCollector(d))

	var err error
	if a.prompts, err = promptparts.New(promptparts.Config{Logger: logger, Version: buildVersion()}, d); err != nil {
		return nil, err
	}
	a.queue = queue.New(d, queue.Config{Logger: logger, Registerer: a.registry, RescueAfter: cfg.RescueAfter})
	queue.AddWorker(a.queue, probe.NewWorker(d, a.queue.ID(), time.Now))

	if cfg.GitHubAppID != 0 && len(cfg.GitHubPrivateKeyPEM) > 0 {
		gc := githubapp.Config{AppID: cfg.GitHubAppID, PrivateKey: cfg.GitHubPrivateKeyPEM, BaseURL: cfg.GitHubAPIURL,
			WritesPerMinute: cfg.GitHubWritesPerMinute, WritesPerHour: cfg.GitHubWritesPerHour, Registerer: a.registry}
		if d.Dialect() == db.Postgres {
			// Several processes may write for one installation: they pace
			// together. SQLite has one process, which paces in memory.
			gc.SharedPacing = d
		}
		if a.github, err = githubapp.New(gc); err != nil {
			return nil, err
		}
	}
	if cfg.FeishuAppID != "" && cfg.FeishuAppSecret != "" {
		if a.feishu, err = feishu.New(feishu.Config{AppID: cfg.FeishuAppID, AppSecret: cfg.FeishuAppSecret, BaseURL: cfg.FeishuBaseURL, Registerer: a.registry}, feishu.SystemClock(), logger); err != nil {
			return nil, err
		}
	}
	a.webhooks, err = webhooks.New(webhooks.Config{
		GitHub: webhooks.GitHubConfig{WebhookSecret: cfg.GitHubWebhookSecret, AppID: cfg.GitHubAppID, Slug: cfg.GitHubAppSlug,
			TriggerLabel: cfg.GitHubTriggerLabel},
		Feishu: webhooks.FeishuConfig{Verifier: feishu.VerifierConfig{
			VerificationToken: cfg.FeishuVerificationToken,
			EncryptKey:        cfg.FeishuEncryptKey,
			AppID:             cfg.FeishuAppID,
		}},
		Registerer: a.registry,
	}, d, a.queue, a.github, a.feishu, logger)
	if err != nil {
		return nil, err
	}
	a.webhooks.UsePeople(a.people)
	a.tickets = a.webhooks.Store()
	a.sessions = session.NewStore(d, cfg.scrub, time.Now)
	if err := a.buildOrchestrator(cfg); err != nil {
		return nil, err
	}
	if err := a.queue.Init(); err != nil {
		return nil, err
	}
	return a, nil
}

// buildOrchestrator wires the main routing Session on the router model.
func (a *app) buildOrchestrator(cfg *config) error {
	if cfg.RouterModel == "" {
		a.logger.Warn("no model configured (SUPERAGENT_MODEL): routing is off; cards wait as candidates")
		return nil
	}
	router, err := cfg.Router.watchedClient(modelhealth.NewWatch(a.db, modelhealth.Main, cfg.Router.Model, cfg.scrub, a.logger, nil), nil)
	if err != nil {
		return err
	}
	slug := cfg.GitHubAppSlug
	if slug == "" {
		slug = "superagent"
	}
	feishuState := "not connected"
	if cfg.FeishuAppID != "" {
		feishuState = "connected (" + cfg.FeishuMode + ")"
	}
	env := []promptparts.Var{
		{Name: "superagent version", Value: buildVersion()},
		{Name: "GitHub App", Value: "@" + slug},
		{Name: "Feishu", Value: feishuState},
	}
	usage, err := session.NewMetrics(a.registry)
	if err != nil {
		return err
	}
	// The main Session lives on; rollover, not a step limit, bounds it.
	rt := session.New(session.Config{MaxSteps: 1 << 30, Metrics: usage}, a.db, router, orchestrator.PromptSource(a.prompts, env, orchestrator.Repositories(a.db, 0)), cfg.scrub, time.Now)
	a.orchestrator, err = orchestrator.New(orchestrator.Config{
		Debounce:    cfg.RoutingDebounce,
		ProposalTTL: cfg.ProposalTTL,
		Gate: orchestrator.Gate{
			GitHubPermission:  cfg.GateGitHubPermission,
			FeishuChats:       cfg.FeishuAllowedChats,
			FeishuMembers:     cfg.FeishuAllowedMembers,
			AdminGitHubLogins: cfg.AdminGitHubLogins,
			AdminFeishuIDs:    cfg.AdminFeishuIDs,
		},
		BotLogin: slug,
		LinkURL: func(openID string) string {
			return admin.LinkOfferURL(cfg.PublicURL, a.oauth, openID, time.Now())
		},
		Environment: env,
		Registerer:  a.registry,
		Logger:      a.logger,
	}, orchestrator.Deps{
		DB: a.db, Queue: a.queue, Tickets: a.tickets, Sessions: rt, Prompts: a.prompts,
		Acks:        &outbox.Messenger{DB: a.db, GitHub: a.github, Feishu: a.feishu, Prompts: a.prompts, PublicURL: cfg.PublicURL},
		Permissions: &githubapp.PermissionCache{DB: a.db, Client: a.github},
		AtLimit:     a.stoppedAtLimit,
		People:      a.people,
		ChatRepos:   webhooks.ChatRepos,
	})
	if err != nil {
		return err
	}
	a.orchestrator.Register(a.queue)
	a.webhooks.AddHook(a.orchestrator)
	a.webhooks.AnswerCards(a.orchestrator.AnswerCardAction)
	return a.buildExecutor(cfg, env, usage)
}

// buildExecutor wires the Executor Sessions on the executor model, with
// their workspaces and command sandbox under the data directory.
func (a *app) buildExecutor(cfg *config, env []promptparts.Var, usage *session.Metrics) error {
	var images func(context.Context, string) []string
	if cfg.ModelImages {
		images = shotImages(shots.New(shots.Config{}, a.db), cfg.PublicURL)
	}
	m, err := cfg.ExecutorModel.watchedClient(modelhealth.NewWatch(a.db, modelhealth.Executor, cfg.ExecutorModel.Model, cfg.scrub, a.logger, nil), images)
	if err != nil {
		return err
	}
	if cfg.Sandbox == workspace.SandboxNone {
		a.logger.Warn("SUPERAGENT_SANDBOX=none: the Executors' commands run without isolation and can read this process's files; use only for development")
	}
	ws, err := workspace.NewManager(workspace.Config{Root: filepath.Join(cfg.DataDir, "workspaces"), Sandbox: cfg.Sandbox,
		Network: cfg.SandboxNetwork, Egress: cfg.SandboxEgress, Logger: a.logger, ExtraReadOnly: cfg.SandboxReadOnly, MaxBytes: cfg.SandboxDisk, MaxFiles: int64(cfg.SandboxFiles),
		CPUSeconds: cfg.SandboxCPUSeconds, MemoryBytes: cfg.SandboxMemory, MaxProcesses: cfg.SandboxProcesses,
		SetupTimeout: cfg.SetupTimeout, SetupMaxBytes: cfg.SetupDisk})
	if err != nil {
		return &settingError{"SUPERAGENT_SANDBOX", err.Error() + " (install bubblewrap, or set SUPERAGENT_SANDBOX=none for development only)"}
	}
	a.executor, err = executor.New(executor.Config{
		Session: session.Config{MaxWallTime: cfg.ExecutorWallTime, TokenBudget: cfg.TicketBudget, CostBudget: cfg.TicketCostBudget, Metrics: usage,
			MaxSteps: int64(cfg.ExecutorMaxSteps), RepeatLimit: cfg.ExecutorRepeatLimit, StallSteps: cfg.ExecutorStallSteps},
		LeaseTTL:    cfg.ExecutorLease,
		MCPTimeout:  cfg.MCPTimeout,
		ReviewBots:  cfg.ReviewBots,
		PublicURL:   cfg.PublicURL,
		Local:       cfg.localRepos,
		MayCommand:  a.orchestrator.MayCommand,
		MayWorkIn:   a.orchestrator.RequesterMayWorkIn,
		Environment: env,
		Registerer:  a.registry,
		Logger:      a.logger,
	}, executor.Deps{
		DB: a.db, Tickets: a.tickets, Wake: a.orchestrator.Waker(), Prompts: a.prompts, Model: m, Scrubber: cfg.scrub,
		Workspaces: ws, GitHub: a.github, Feishu: a.feishu, Continuer: a.stopper(), RepoEnv: a.repoEnv,
	})
	if err != nil {
		return err
	}
	a.executor.Register(a.queue)
	if n, err := a.executor.SweepWorkspaces(context.Background()); err != nil {
		a.logger.Error("sweeping the workspaces of ended tickets", "error", err)
	} else if n > 0 {
		a.logger.Info("removed the workspaces of ended tickets", "count", n)
	}
	return nil
}

// trial tries prompt drafts on recorded requests for the panel, asking
// each role's model again when one is configured.
func (a *app) trial(cfg *config) *trial.Trial {
	models := map[session.Role]trial.Model{}
	for role, m := range map[session.Role]roleModel{session.RoleExecutor: cfg.ExecutorModel, session.RoleMain: cfg.Router} {
		if m.Model == "" {
			continue
		}
		if c, err := m.client(); err == nil {
			models[role] = c
		}
	}
	return trial.New(trial.Config{Models: models, Scrubber: cfg.scrub}, a.db, a.prompts, a.sessions)
}

// pauser pauses and resumes Tickets for the panel and the API; with the
// orchestrator, pauses are confirmed and a resume wakes the Executor.
func (a *app) pauser() *tickets.Pauser {
	if a.orchestrator == nil {
		return tickets.NewPauser(a.db, a.tickets).WithLogger(a.logger)
	}
	return tickets.NewPauser(a.db, a.tickets, a.orchestrator).WithLogger(a.logger)
}

// stopper stops, continues and retries Tickets for the panel, the API and
// the Executor (a person's message after a limit); with the orchestrator,
// each is said once in the Ticket's conversation and wakes the Executor,
// which knows whether a Session stopped at a limit.
func (a *app) stopper() *tickets.Stopper {
	if a.orchestrator == nil {
		return tickets.NewStopper(a.db, a.tickets, nil).WithLogger(a.logger)
	}
	return tickets.NewStopper(a.db, a.tickets, a.stoppedAtLimit, a.orchestrator).WithLogger(a.logger)
}

// stoppedAtLimit is the Executor's tickets.LimitCheck, for the parts built
// before it (the orchestrator's continue command, the Stopper it uses).
func (a *app) stoppedAtLimit(ctx context.Context, q db.Querier, ticketID int64) (bool, error) {
	if a.executor == nil {
		return false, nil
	}
	return a.executor.StoppedAtLimit(ctx, q, ticketID)
}

// serve runs one process: workers always, and with withHTTP the HTTP server
// too (and migrations at start). It returns when ctx ends, after a graceful
// shutdown bounded by cfg.ShutdownTimeout.
func serve(ctx context.Context, cfg *config, stdout, stderr io.Writer, withHTTP bool) error {
	logger := newLogger(stderr, cfg, cfg.LogLevel)
	if gcfloor.Keep(gcfloor.DefaultFloor) {
		logger.Debug("garbage collector given a heap floor", "floor_mib", gcfloor.DefaultFloor>>20)
	}
	d, err := db.Open(ctx, cfg.DatabaseURL, db.Options{})
	if err != nil {
		return err
	}
	defer d.Close()

	if withHTTP {
		if err := migrations.Apply(ctx, d, logger); err != nil {
			return err
		}
	} else if err := waitForMigrations(ctx, d, logger); err != nil {
		return err
	}

	a, err := buildApp(ctx, cfg, logger, d)
	if err != nil {
		return err
	}
	if err := a.prompts.Start(ctx); err != nil {
		return err
	}
	defer a.prompts.Stop()

	var srv *http.Server
	var ln net.Listener
	addr := cfg.Addr
	switch {
	case withHTTP:
		if srv, err = a.httpServer(ctx, cfg, stdout); err != nil {
			return err
		}
	case cfg.MetricsAddr != "":
		srv, addr = a.probeServer(ctx), cfg.MetricsAddr
	}
	if srv != nil {
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", addr); err != nil {
			return fmt.Errorf("listening on %s: %w", addr, err)
		}
	}

	if err := a.queue.Start(ctx); err != nil {
		return err
	}
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		a.watchLeases(ctx, cfg.ExecutorLease)
	}()
	if a.orchestrator != nil {
		// Whatever waited while the service was down (or had no model) gets
		// a turn; if one is already scheduled this adds nothing.
		if err := d.InTx(ctx, func(tx *db.Tx) error { return a.orchestrator.ScheduleTurn(ctx, tx) }); err != nil {
			logger.Warn("scheduling a routing turn at start", "error", err)
		}
	}
	httpErr := make(chan error, 1)
	if srv != nil {
		go func() { httpErr <- srv.Serve(ln) }()
	}
	switch {
	case withHTTP:
		logger.Info("serving", "addr", ln.Addr().String(), "dialect", d.Dialect(), "worker_id", a.queue.ID())
		if cfg.FeishuMode == "longconn" {
			a.startFeishuLongConn(ctx, cfg)
		}
	case srv != nil:
		logger.Info("working", "dialect", d.Dialect(), "worker_id", a.queue.ID(), "metrics_addr", ln.Addr().String())
	default:
		logger.Info("working", "dialect", d.Dialect(), "worker_id", a.queue.ID())
	}

	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "deadline", cfg.ShutdownTimeout)
	case err := <-httpErr:
		runErr = fmt.Errorf("HTTP server: %w", err)
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if srv != nil {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			logger.Warn("HTTP shutdown incomplete", "error", err)
		}
	}
	<-watching
	if err := a.queue.Stop(shutdownCtx); err != nil {
		return errors.Join(runErr, err)
	}
	logger.Info("stopped")
	return runErr
}

func (a *app) httpServer(ctx context.Context, cfg *config, stdout io.Writer) (*http.Server, error) {
	token, err := ensureAdminToken(cfg.AdminToken, cfg.DataDir, stdout)
	if err != nil {
		return nil, err
	}
	if cfg.AdminToken == "" {
		// A token file edited by hand gets the setting's rules.
		if err := checkAdminToken(filepath.Join(cfg.DataDir, adminTokenFile), token); err != nil {
			return nil, err
		}
	}
	if cfg.FeishuMode == "webhook" && cfg.FeishuAppID != "" && cfg.FeishuEncryptKey == "" {
		a.logger.Warn("/webhooks/feishu is off: Feishu signs events only with an Encrypt Key; set SUPERAGENT_FEISHU_ENCRYPT_KEY and SUPERAGENT_FEISHU_VERIFICATION_TOKEN, or SUPERAGENT_FEISHU_MODE=longconn")
	}
	cfg.scrub.Add(token)
	jobs, err := a.queue.UIHandler(ctx, "/admin/jobs", a.logger)
	if err != nil {
		return nil, err
	}
	var chats admin.FeishuChats
	var feishuSignIn admin.FeishuSignIn
	if a.feishu != nil {
		chats, feishuSignIn = a.webhooks, a.feishu
	}
	var githubBot string
	if a.github != nil {
		githubBot = cmp.Or(cfg.GitHubAppSlug, "superagent")
	}
	panel, err := admin.New(admin.Config{Token: token, Jobs: jobs, Logger: a.logger, SecureCookie: cfg.SecureCookie,
		OAuth: a.oauth, PublicURL: cfg.PublicURL, AdminGitHubLogins: cfg.AdminGitHubLogins,
		TicketBudget: tickets.Budget{Tokens: cfg.TicketBudget, Cost: cfg.TicketCostBudget},
		GitHubBot:    githubBot, Feishu: a.feishu != nil}, a.db, a.prompts, admin.Deps{
		Tickets:      a.tickets,
		Sessions:     a.sessions,
		Pauser:       a.pauser(),
		Stopper:      a.stopper(),
		Connections:  connections(cfg, a.db),
		Chats:        chats,
		PullFiles:    a.pullFiles(),
		Scrubber:     cfg.scrub,
		Trial:        a.trial(cfg),
		RepoEnv:      a.repoEnv,
		People:       a.people,
		FeishuSignIn: feishuSignIn,
	})
	if err != nil {
		return nil, err
	}
	var migrated atomic.Bool
	hs := httpserver.New(httpserver.Config{
		Logger:         a.logger,
		Registerer:     a.registry,
		Gatherer:       a.registry,
		Ready:          readiness(a.db, &migrated),
		Authenticators: []httpserver.Authenticator{httpserver.BearerToken{Token: token, Actor: admin.TokenActor}, panel.Authenticator()},
	})
	a.prompts.Routes(hs.API)
	a.webhooks.Routes(hs.Root)
	a.webhooks.APIRoutes(hs.API)
	ticketsAPI := admin.NewTicketsAPI(a.db, a.tickets, a.sessions, a.logger).WithPauser(a.pauser()).WithStopper(a.stopper())
	if a.orchestrator != nil {
		ticketsAPI.WithOpener(a.orchestrator, cfg.PublicURL)
	}
	ticketsAPI.Routes(hs.API)
	panel.Routes(hs.Root)
	panel.SetupRoutes(hs.API)
	panel.OverviewRoutes(hs.API)
	panel.PeopleAPI().Routes(hs.API)
	// The Executors' screenshots, public at unguessable addresses.
	shots.New(shots.Config{}, a.db).Routes(hs.Root, a.logger)
	// Header, body, write and idle timeouts: see httpserver.HTTPServer; the
	// live Ticket pages stream past the write timeout (StreamWrites).
	srv := hs.HTTPServer(context.WithoutCancel(ctx))
	// Live Ticket pages stream until the page closes: end them when the
	// shutdown begins, or they hold it until its deadline.
	srv.RegisterOnShutdown(panel.CloseStreams)
	return srv, nil
}

// pullFiles lists a pull request's files through the installation that
// covers its repository, for the Ticket page; nil without a GitHub App.
func (a *app) pullFiles() admin.PullFiles {
	if a.github == nil {
		return nil
	}
	return func(ctx context.Context, repo string, number, limit int) ([]admin.PullFile, error) {
		files, err := a.github.PullFiles(ctx, a.db, repo, number, limit)
		if err != nil {
			return nil, err
		}
		out := make([]admin.PullFile, 0, len(files))
		for _, f := range files {
			out = append(out, admin.PullFile{Name: f.GetFilename(), Status: f.GetStatus(),
				Additions: f.GetAdditions(), Deletions: f.GetDeletions(), Patch: f.GetPatch()})
		}
		return out, nil
	}
}

// watchLeases restarts, from every process, the Executors and the main
// Session whose process died: twice per lease it looks for leases that
// lapsed. The periodic watchdog jobs do the same, but only River's leader
// enqueues them, and a dead leader's successor takes about 15 s to be
// elected; from here a dead process's work resumes within about one and a
// half leases.
func (a *app) watchLeases(ctx context.Context, lease time.Duration) {
	if a.executor == nil {
		return
	}
	tick := time.NewTicker(min(max(lease/2, 250*time.Millisecond), 30*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := a.executor.Revive(ctx); err != nil && ctx.Err() == nil {
			a.logger.Warn("checking executor leases", "error", err)
		}
		if _, err := a.orchestrator.Revive(ctx); err != nil && ctx.Err() == nil {
			a.logger.Warn("checking the main Session's lease", "error", err)
		}
	}
}

// probeServer is a worker's listener: health, readiness and its metrics.
// The worker has waited for the migrations, so readiness asks only the
// database.
func (a *app) probeServer(ctx context.Context) *http.Server {
	var migrated atomic.Bool
	migrated.Store(true)
	return &http.Server{
		Handler: httpserver.NewProbes(httpserver.Config{
			Logger: a.logger, Registerer: a.registry, Gatherer: a.registry, Ready: readiness(a.db, &migrated),
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(a.logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
}

// startFeishuLongConn receives Feishu events over the SDK's long connection
// instead of the webhook, for teams without a public URL.
func (a *app) startFeishuLongConn(ctx context.Context, cfg *config) {
	lc, err := feishu.NewLongConn(feishu.LongConnConfig{AppID: cfg.FeishuAppID, AppSecret: cfg.FeishuAppSecret, BaseURL: cfg.FeishuBaseURL, Registerer: a.registry,
		CardAnswer: a.webhooks.FeishuCardAnswer},
		a.webhooks.FeishuEvent, feishu.SystemClock(), a.logger)
	if err != nil {
		a.logger.Error("Feishu long connection not started", "error", err)
		return
	}
	go func() {
		if err := lc.Run(ctx); err != nil {
			a.logger.Error("Feishu long connection stopped", "error", err)
		}
	}()
}

// readiness reports ready once the database answers and every migration is
// applied; after the first success only the ping is repeated.
func readiness(d *db.DB, migrated *atomic.Bool) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := d.Ping(ctx); err != nil {
			return fmt.Errorf("database unreachable: %w", err)
		}
		if migrated.Load() {
			return nil
		}
		pending, err := migrations.Pending(ctx, d)
		if err != nil {
			return err
		}
		if pending {
			return errors.New("database migrations pending")
		}
		migrated.Store(true)
		return nil
	}
}

// waitForMigrations lets a worker start beside a serve process that is
// still migrating, instead of failing at once.
func waitForMigrations(ctx context.Context, d *db.DB, logger *slog.Logger) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pending, err := migrations.Pending(ctx, d)
		if err == nil && !pending {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("checking migrations: %w", err)
			}
			return errors.New("database schema is not up to date: run `superagent migrate` (or start `superagent serve`) first")
		}
		logger.Info("waiting for database migrations", "error", err)
		if err := retry.Sleep(ctx, 2*time.Second); err != nil {
			return err
		}
	}
}
