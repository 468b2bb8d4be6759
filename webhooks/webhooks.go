// Package webhooks is superagent's ingestion: it receives GitHub App
// webhooks (and Feishu events), verifies them before reading them, stores
// each delivery raw and enqueues its processing in one transaction, and
// answers at once. The processing job turns a delivery into a Trigger card
// in its Thread (through package tickets), keeps the list of installations
// and repositories, and drops what concerns nobody. It also serves the card
// list under /api/cards.
package webhooks

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/fresh"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/tickets"
)

// DefaultGitHubMaxBody is GitHub's own cap on webhook payloads.
const DefaultGitHubMaxBody = 25 << 20

// Config configures ingestion. The zero value of each field is the
// documented default.
type Config struct {
	// GitHub configures POST /webhooks/github.
	GitHub GitHubConfig
	// Feishu configures POST /webhooks/feishu and the long connection.
	Feishu FeishuConfig
	// TextLimit is the number of characters of text a card carries before
	// it is truncated. Default tickets.DefaultTextLimit (4,000).
	TextLimit int
	// PermissionTTL is how long a GitHub permission level read from the API
	// is reused. Default 10 minutes.
	PermissionTTL time.Duration
	// Hooks are told about every card inside the transaction that stores
	// it; the routing issue plugs its debounced route job in here.
	Hooks []tickets.Hook
	// Registerer receives the deliveries counter. Default: none.
	Registerer prometheus.Registerer
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// GitHubConfig configures the GitHub endpoint.
type GitHubConfig struct {
	// WebhookSecret verifies X-Hub-Signature-256. Without it the endpoint
	// answers 404.
	WebhookSecret string
	// AppID, when set, must match X-GitHub-Hook-Installation-Target-ID
	// whenever GitHub sends that header.
	AppID int64
	// Slug is the App's slug; its bot account is "<slug>[bot]". Events from
	// that account are dropped and "@<slug>" addresses the bot. Default:
	// read once from the API (GET /app) when a GitHub client is given.
	Slug string
	// MaxBody caps the request body. Default DefaultGitHubMaxBody (25 MB).
	MaxBody int64
	// TriggerLabel is the label that, added to an issue, addresses the bot
	// (an explicit request when the person who added it passes the gate).
	// Default DefaultTriggerLabel.
	TriggerLabel string
}

// FeishuConfig configures the Feishu endpoint and event processing.
type FeishuConfig struct {
	// Verifier holds the verification token, the Encrypt Key (both
	// required for POST /webhooks/feishu, which answers 404 without them),
	// the app id events must name, and the timestamp window.
	Verifier feishu.VerifierConfig
	// BotOpenID is the bot's open_id: mentions of it address the bot and
	// its own messages are dropped. Default: read through the Feishu client
	// (GET /open-apis/bot/v3/info) when one is given.
	BotOpenID string
	// MaxBody caps the request body. Default feishu.MaxBodyBytes (1 MiB).
	MaxBody int64
	// NameTTL is how long a sender's display name, read from the contact
	// API, is kept before it is read again. Default 24 hours.
	NameTTL time.Duration
	// NameTimeout bounds one name lookup, so a slow contact API delays a
	// message by at most this much. Default 3 seconds.
	NameTimeout time.Duration
}

// Service receives and processes deliveries.
type Service struct {
	cfg     Config
	d       *db.DB
	q       *queue.Queue
	gh      *githubapp.Client
	fs      *feishu.Client
	lark    *feishu.Verifier
	logger  *slog.Logger
	store   *tickets.Store
	metrics *metrics

	commits *committer
	people  *people.Store

	slugMu sync.Mutex
	slug   string
	perms  *githubapp.PermissionCache
	// facts are the repository facts this process committed (factsFresh).
	facts fresh.Memory[repositoryFacts, struct{}]

	// cardAnswer answers card actions (AnswerCards).
	cardAnswer CardAnswerer

	// githubRefusals and feishuRefusals log refused signatures.
	githubRefusals, feishuRefusals rejections
}

// New builds the ingestion service and registers its River worker on q
// (call q.Init afterwards). gh may be nil: permission levels are then
// "unknown" and the slug must be configured. fs may be nil: the bot's
// open_id must then be configured for Feishu mentions to count.
func New(cfg Config, d *db.DB, q *queue.Queue, gh *githubapp.Client, fs *feishu.Client, logger *slog.Logger) (*Service, error) {
	if d == nil || q == nil {
		return nil, errors.New("creating webhooks service: database and queue are required")
	}
	if cfg.TextLimit <= 0 {
		cfg.TextLimit = tickets.DefaultTextLimit
	}
	if cfg.PermissionTTL <= 0 {
		cfg.PermissionTTL = 10 * time.Minute
	}
	if cfg.GitHub.MaxBody <= 0 {
		cfg.GitHub.MaxBody = DefaultGitHubMaxBody
	}
	if cfg.GitHub.TriggerLabel == "" {
		cfg.GitHub.TriggerLabel = DefaultTriggerLabel
	}
	if cfg.Feishu.MaxBody <= 0 {
		cfg.Feishu.MaxBody = feishu.MaxBodyBytes
	}
	if cfg.Feishu.NameTTL <= 0 {
		cfg.Feishu.NameTTL = 24 * time.Hour
	}
	if cfg.Feishu.NameTimeout <= 0 {
		cfg.Feishu.NameTimeout = 3 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Service{
		cfg: cfg, d: d, q: q, gh: gh, fs: fs, logger: logger, metrics: m,
		store: tickets.New(tickets.Config{Now: cfg.Now}),
		slug:  cfg.GitHub.Slug,
	}
	s.githubRefusals.endpoint, s.feishuRefusals.endpoint = "/webhooks/github", "/webhooks/feishu"
	s.perms = &githubapp.PermissionCache{DB: d, Client: gh, TTL: cfg.PermissionTTL, Now: cfg.Now}
	// SQLite has one writer: one batch at a time. On PostgreSQL a batch is
	// two round trips, and fewer, larger batches cost less of the server's
	// CPU than more in flight (internal/bench, 2026-12-03: carded at 63-75 % of
	// River's insert in most runs with two, 52-59 % with four, one level
	// with two); two keep acknowledgements moving while one batch waits on
	// a row lock.
	s.commits = &committer{d: d, write: s.writeDeliveries, max: 64, slots: 1}
	if d.Dialect() == db.Postgres {
		s.commits.slots = 2
	}
	// The Feishu endpoint stays off (404) until it can authenticate events.
	if v, err := feishu.NewVerifier(cfg.Feishu.Verifier, cfg.Now); err == nil {
		s.lark = v
	}
	if cfg.GitHub.WebhookSecret != "" && s.slug == "" && gh == nil {
		logger.Warn("GitHub App slug unknown: the bot's own events cannot be told apart and mentions are not detected")
	}
	queue.AddWorker(q, &Worker{s: s})
	return s, nil
}

// AddHook adds a card hook. Call it before the queue starts.
func (s *Service) AddHook(h tickets.Hook) { s.cfg.Hooks = append(s.cfg.Hooks, h) }

// UsePeople resolves the authors of the cards to people: a Feishu sender
// becomes a person (a member named as Feishu's contact API says) the first
// time they are seen, and a card shows its author's person's name.
func (s *Service) UsePeople(p *people.Store) { s.people = p }

// Store is the tickets store the service writes cards with.
func (s *Service) Store() *tickets.Store { return s.store }

// Routes mounts the webhook endpoints (POST /webhooks/github and
// /webhooks/feishu) on the root router. They do their own body limits and
// authentication.
func (s *Service) Routes(r chi.Router) {
	r.Post("/webhooks/github", s.handleGitHub)
	r.Post("/webhooks/feishu", s.handle(s.receiveFeishu))
}

// APIRoutes mounts the read API (GET /cards, /cards/{id}, /cards/{id}/text)
// on the authenticated /api router.
func (s *Service) APIRoutes(r chi.Router) {
	r.Get("/cards", s.handle(s.listCards))
	r.Get("/cards/{id}", s.handle(s.getCard))
	r.Get("/cards/{id}/text", s.handle(s.cardText))
	r.Get("/feishu/chats", s.handle(s.listFeishuChats))
	r.Put("/feishu/chats/{chat_id}", s.handle(s.putFeishuChat))
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }
