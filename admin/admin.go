// Package admin is the panel people use to run superagent, served by the
// binary under /admin/: every prompt part with its default, the team's text
// and the "Default updated" diff; team sections, skills and policy; version
// history with diffs and restore; Tickets with their Threads, Sessions,
// transcripts and token use; and River's job view under /admin/jobs/. It
// also serves the Tickets API on /api (TicketsAPI: list, read, pause,
// resume, stop and continue Tickets). A Ticket's page updates live while its
// Session runs, from server-sent events that read the database.
//
// Pages are server-rendered (html/template over an embedded file system) and
// work without JavaScript; a small script only adds conveniences. People sign
// in with the admin token or GitHub and get a session cookie whose id is
// stored hashed and revoked on sign-out; the session lasts only while what
// granted it holds (the same token, the login's role), checked on every
// request, and ends after two idle hours or eight in all. Every form carries a per-session CSRF token, and
// the same cookie authenticates the JSON API through Authenticator, which
// requires the token in a header for anything but reads.
//
// Prompt changes go through promptparts.Service: saves name their base
// revision, and a refused stale save keeps the person's draft on the server
// so that it survives a reload and can be rebased onto the latest revision.
package admin

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/secret"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/promptparts/trial"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

//go:embed templates static
var assets embed.FS

// Config tunes the panel. The zero value is the documented default, except
// that without a Token nobody can sign in.
type Config struct {
	// Token is the admin token people sign in with. Empty: sign-in is
	// refused.
	Token string
	// SessionTTL is the most a sign-in lasts, however busy. Default
	// DefaultSessionTTL.
	SessionTTL time.Duration
	// SessionIdle ends a session unused this long. Default
	// DefaultSessionIdle.
	SessionIdle time.Duration
	// SecureCookie marks the session cookie Secure on every response, for a
	// deployment behind a TLS-terminating proxy. Default: Secure only when
	// the request itself arrived over TLS.
	SecureCookie bool
	// Jobs is River's job UI serving under /admin/jobs (queue.UIHandler).
	// Default: none; /admin/jobs/ says the job view is not configured.
	Jobs http.Handler
	// MaxStreams bounds the live Ticket pages streaming at once; more are
	// refused with 503 and update on reload. Default DefaultMaxStreams.
	MaxStreams int
	// MaxStreamsPerSession bounds those one session holds; more are
	// refused with 429. Default DefaultMaxStreamsPerSession.
	MaxStreamsPerSession int
	// StreamPoll is how often a live stream reads the database. Default
	// DefaultStreamPoll.
	StreamPoll time.Duration
	// Logger receives handler errors. Default: discarded.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Rand is the source of session ids and CSRF tokens. Default
	// crypto/rand.Reader.
	Rand io.Reader
	// OAuth is the GitHub App's user authorization, for signing in with
	// GitHub and for Feishu users linking their GitHub login. Nil or
	// without a client id and secret: both are off.
	OAuth *people.OAuth
	// PublicURL is the service's public base (SUPERAGENT_PUBLIC_URL); the
	// OAuth callback is PublicURL/oauth/github/callback. Required with
	// OAuth.
	PublicURL string
	// AdminGitHubLogins sign in with GitHub as admins even without a
	// person record (SUPERAGENT_ADMIN_GITHUB_LOGINS).
	AdminGitHubLogins []string
	// TicketBudget is the budget of a Ticket nobody raised (the
	// Executor's default), shown on the Ticket's page. Default: no cap.
	TicketBudget tickets.Budget
	// GitHubBot is the login people mention to ask the GitHub App for
	// work (its slug, without the @); empty when GitHub is not set up.
	// Empty pages use it to say how work arrives.
	GitHubBot string
	// Feishu says the Feishu bot is set up, for the same pages.
	Feishu bool
}

// Deps are the optional read sides the Ticket pages use. A nil field hides
// what it would show.
type Deps struct {
	// Tickets reads Tickets and Threads.
	Tickets *tickets.Store
	// Sessions reads Sessions, transcripts and model requests.
	Sessions *session.Store
	// Pauser pauses and resumes Tickets.
	Pauser Pauser
	// Stopper stops and continues Tickets; nil hides those controls.
	Stopper Stopper
	// Connections reports the deployment's connections for the overview
	// (what is configured, with a fix hint); nil shows none.
	Connections func(ctx context.Context) []Connection
	// Chats lists the Feishu chats and sets their proactive admission
	// (webhooks.Service); nil: the chats page says Feishu is not set up.
	Chats FeishuChats
	// PullFiles lists a pull request's changed files for the Ticket page;
	// nil leaves them out.
	PullFiles PullFiles
	// Scrubber removes secrets from rebuilt prompts, as the Sessions did
	// before sending them.
	Scrubber *secret.Scrubber
	// Trial tries drafts on recorded model requests; nil hides it.
	Trial *trial.Trial
	// RepoEnv holds the team's default setup script, the repositories'
	// secrets and the Tickets' setup outcomes; nil hides the setup page.
	RepoEnv *repoenv.Store
	// People is who is who; nil hides the people page and turns GitHub
	// sign-in off.
	People *people.Store
	// FeishuSignIn is Feishu's web sign-in (feishu.Client), which a Feishu
	// user's link to their GitHub login begins with; nil turns such links
	// off.
	FeishuSignIn FeishuSignIn
}

// FeishuSignIn is Feishu's web sign-in: the page that signs a browser in
// and returns to redirectURI with a code, and who the code belongs to.
type FeishuSignIn interface {
	SignInURL(redirectURI, state string) string
	SignedInUser(ctx context.Context, code string) (feishu.SignedInUser, error)
}

// Admin is the panel.
type Admin struct {
	cfg      Config
	db       *db.DB
	prompts  *promptparts.Service
	deps     Deps
	sessions sessionStore
	drafts   draftStore
	audit    auditStore
	reads    ticketReads
	limit    signInLimit
	pages    *renderer
	static   fs.FS
	streams  *streams
	// mark is the admin token's fingerprint (tokenMark), worked out once.
	mark func() string
}

// New returns the panel over d and prompts.
func New(cfg Config, d *db.DB, prompts *promptparts.Service, deps Deps) (*Admin, error) {
	if d == nil || prompts == nil {
		return nil, errors.New("creating admin panel: a database and the prompt service are required")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.MaxStreamsPerSession <= 0 {
		cfg.MaxStreamsPerSession = DefaultMaxStreamsPerSession
	}
	if cfg.StreamPoll <= 0 {
		cfg.StreamPoll = DefaultStreamPoll
	}
	pages, err := newRenderer(assets)
	if err != nil {
		return nil, fmt.Errorf("creating admin panel: %w", err)
	}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, fmt.Errorf("creating admin panel: %w", err)
	}
	return &Admin{cfg: cfg, db: d, prompts: prompts, deps: deps, pages: pages, static: static, streams: newStreams(cfg.MaxStreams, cfg.MaxStreamsPerSession),
		mark: sync.OnceValue(func() string { return tokenMark(cfg.Token) })}, nil
}

// Routes mounts the panel under /admin on r (main gives the root router):
//
//	GET        /admin/signin, POST /admin/signin, POST /admin/signout
//	GET        /admin/ (overview), /admin/static/*
//	GET, POST  /admin/prompts, /admin/prompts/{key...}
//	GET        /admin/prompts/requests/{id} (a recorded request's prompt)
//	GET, POST  /admin/prompts/try (try a draft on recorded requests)
//	GET, POST  /admin/sections, /admin/skills, /admin/skills/{name}, /admin/policy
//	GET, POST  /admin/versions, /admin/versions/{revision}, /admin/versions/diff
//	GET, POST  /admin/tickets, /admin/tickets/{id}
//	GET        /admin/tickets/{id}/events (the live page's server-sent events)
//	GET, POST  /admin/chats (Feishu chats and their proactive admission)
//	GET        /admin/activity
//	GET, POST  /admin/setup (the default setup script, repository secrets)
//	GET, POST  /admin/people (who is who; changes by admins)
//	GET        /admin/signin/github (sign in with GitHub)
//	GET        /oauth/github/callback (GitHub's OAuth redirect)
//	GET, POST  /oauth/github/link (a Feishu user links their GitHub login)
//	GET        /oauth/feishu/callback (Feishu's sign-in redirect, for a link)
//	*          /admin/jobs/ (River UI)
//
// Everything but sign-in and the static files requires a session; every
// POST requires the session's CSRF token, and cross-origin browser requests
// that change state are refused outright.
func (a *Admin) Routes(r chi.Router) {
	cop := http.NewCrossOriginProtection()
	r.Get("/", a.getRoot)
	r.Route("/admin", func(r chi.Router) {
		r.Use(cop.Handler, noStore)
		r.Handle("/static/*", http.StripPrefix("/admin/static/", http.FileServerFS(a.static)))
		r.Get("/signin", a.handle(a.getSignIn))
		r.Post("/signin", a.handle(a.postSignIn))
		r.Get("/signin/github", a.handle(a.getSignInGitHub))
		r.Group(func(r chi.Router) {
			r.Use(a.requireSession)
			r.Post("/signout", a.handle(a.postSignOut))
			r.Get("/", a.handle(a.getOverview))
			r.Get("/prompts", a.handle(a.getPrompts))
			r.Get("/prompts/requests/{id}", a.handle(a.getRequestPrompt))
			r.Get("/prompts/try", a.handle(a.getTry))
			r.Post("/prompts/try", a.handle(a.postTry))
			r.Get("/prompts/*", a.handle(a.getPart))
			r.Post("/prompts/*", a.handle(a.postPart))
			r.Get("/sections", a.handle(a.getSections))
			r.Post("/sections", a.handle(a.postSections))
			r.Get("/skills", a.handle(a.getSkills))
			r.Get("/skills/{name}", a.handle(a.getSkill))
			r.Post("/skills", a.handle(a.postSkill))
			r.Post("/skills/{name}", a.handle(a.postSkill))
			r.Get("/policy", a.handle(a.getPolicy))
			r.Post("/policy", a.handle(a.postPolicy))
			r.Get("/versions", a.handle(a.getVersions))
			r.Get("/versions/diff", a.handle(a.getDiff))
			r.Get("/versions/{revision}", a.handle(a.getVersion))
			r.Post("/versions/{revision}", a.handle(a.postRestore))
			r.Get("/tickets", a.handle(a.getTickets))
			r.Get("/tickets/{id}", a.handle(a.getTicket))
			r.Get("/tickets/{id}/events", a.handle(a.getTicketEvents))
			r.Post("/tickets/{id}", a.handle(a.postTicket))
			r.Get("/chats", a.handle(a.getChats))
			r.Post("/chats", a.handle(a.postChats))
			r.Get("/activity", a.handle(a.getActivity))
			r.Get("/people", a.handle(a.getPeople))
			r.Post("/people", a.handle(a.postPeople))
			r.Get("/setup", a.handle(a.getSetup))
			r.Post("/setup", a.handle(a.postSetup))
			r.Handle("/jobs", http.RedirectHandler("/admin/jobs/", http.StatusMovedPermanently))
			r.Handle("/jobs/*", a.jobs())
		})
	})
	r.Route("/oauth", func(r chi.Router) {
		r.Use(cop.Handler, noStore)
		r.Get("/github/callback", a.handle(a.getOAuthCallback))
		r.Get("/github/link", a.handle(a.getLink))
		r.Post("/github/link", a.handle(a.postLink))
		r.Get("/feishu/callback", a.handle(a.getFeishuCallback))
	})
}

// Authenticator returns the /api authenticator for the panel's session
// cookie; main lists it beside httpserver.BearerToken.
func (a *Admin) Authenticator() *CookieAuthenticator {
	return &CookieAuthenticator{a: a}
}

func (a *Admin) jobs() http.Handler {
	if a.cfg.Jobs != nil {
		return withPanelNav(a.cfg.Jobs)
	}
	return a.handle(func(w http.ResponseWriter, r *http.Request) error {
		return a.render(w, r, http.StatusNotFound, "message.html", pageData{
			Title: "Jobs", Nav: "jobs",
			Data: message{Heading: "Jobs", Text: "The job view is not configured in this process."},
		})
	})
}

// noStore keeps panel pages, which show prompts and transcripts, out of
// shared caches and the browser's back-forward cache on shared machines.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "same-origin")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// handle adapts a handler that returns an error: an *httpserver.Error is
// shown as a page with its status and message; anything else is logged and
// shown as a generic failure.
func (a *Admin) handle(fn httpserver.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := fn(w, r)
		if err == nil {
			return
		}
		status, msg := http.StatusInternalServerError, "Something went wrong; the error is in the server log."
		var he *httpserver.Error
		if errors.As(err, &he) {
			status, msg = he.Status, he.Message
		}
		if status >= 500 {
			a.cfg.Logger.Error("admin request failed", "status", status, "error", err, "path", r.URL.Path)
		}
		if rerr := a.render(w, r, status, "message.html", pageData{
			Title: http.StatusText(status),
			Data:  message{Heading: http.StatusText(status), Text: msg},
		}); rerr != nil {
			a.cfg.Logger.Error("rendering admin error page", "error", rerr)
		}
	}
}

// message is the data of the plain message page.
type message struct {
	Heading string
	Text    string
}
