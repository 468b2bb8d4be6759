package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/secret"
	"github.com/superagent-dev/superagent/jobs"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/shots"
	"github.com/superagent-dev/superagent/tickets"
)

// Config tunes the Executors. The zero value of each field is its
// documented default.
type Config struct {
	// Session configures the Executor Sessions' runtime (steps, wall time,
	// budgets). Its MaxWallTime also bounds one job. Its RepeatLimit and
	// StallSteps default to DefaultRepeatLimit and DefaultStallSteps here
	// (the runtime's own default is not to watch).
	Session session.Config
	// BranchPrefix names the Ticket's branch: prefix + Ticket id. Default
	// "superagent/ticket-".
	BranchPrefix string
	// LeaseTTL is how long an Executor's lease lasts unless renewed; a job
	// renews it every third of that. A process that dies frees its Tickets
	// after at most this long. Default 2 minutes.
	LeaseTTL time.Duration
	// Snooze is how long a job waits when another job of the same Ticket
	// holds the lease. Default 10 s.
	Snooze time.Duration
	// MaxChatWords caps a chat message. Default 100 (a host-enforced fact).
	MaxChatWords int
	// ReviewBots are logins treated as automated reviewers besides [bot]
	// accounts and the team's Communication list.
	ReviewBots []string
	// MaxBotRounds caps the rounds of review one automated reviewer gets
	// per pull request. Default 3.
	MaxBotRounds int
	// MaxFixAttempts caps the fixes pushed after a check failed on the
	// pull request: each further commit that fails a check uses one, and
	// once they are used up git_push refuses. Default 3.
	MaxFixAttempts int
	// PublicURL is the panel's public base (SUPERAGENT_PUBLIC_URL): the
	// progress comment and the check run link to the Ticket's page under
	// it. Default: none, and no link is written.
	PublicURL string
	// NoProgress turns the progress comment and the check run off. Default
	// false: a Ticket with a repository shows its progress on GitHub.
	NoProgress bool
	// MayCommand reports why the author of a card may not command a
	// Ticket (continue it by writing to it after a limit), or nil. Use the
	// main Session's (orchestrator.Orchestrator.MayCommand): the requester,
	// anyone the gate admits in the repository, admins. Default: only the
	// requester.
	MayCommand func(t tickets.Ticket, c tickets.Card) error
	// MayWorkIn reports why a Ticket without a repository may not be
	// given repo now (a *session.Refusal the model reads), or nil: the
	// gate applied to its requester at that moment. Use the main
	// Session's (orchestrator.Orchestrator.RequesterMayWorkIn). Default:
	// none, and repository_set refuses.
	MayWorkIn func(ctx context.Context, t tickets.Ticket, repo string) error
	// Local maps repository names to local git checkouts that stand in
	// for GitHub (superagent run): a Ticket of one clones it, git_push
	// pushes its branch into it, and only the tools that need neither
	// GitHub nor Feishu are offered, without checkpoints. Default: none.
	Local map[string]workspace.Remote
	// MCPTimeout bounds starting a repository's MCP server and each call
	// of one of its tools; a server that takes longer is cut off for the
	// rest of the job. Default DefaultMCPTimeout.
	MCPTimeout time.Duration
	// Environment is the deployment-wide part of the Environment section;
	// each Ticket's facts follow it.
	Environment []promptparts.Var
	// Registerer receives the superagent_executor_* metrics. Default: none.
	Registerer prometheus.Registerer
	// Logger receives errors. Default: discarded.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Deps are the components the Executors use.
type Deps struct {
	DB      *db.DB
	Tickets *tickets.Store
	// Wake stores Reports and hand-backs (and wakes the main Session) and
	// enqueues Executor jobs; use the main Session's
	// (orchestrator.Orchestrator.Waker), so turns keep its Debounce.
	Wake    *jobs.Waker
	Prompts *promptparts.Service
	// Model is the Executor's model client.
	Model session.Model
	// Scrubber keeps secrets out of transcripts, messages and logs.
	Scrubber *secret.Scrubber
	// Workspaces holds the Tickets' clones and runs their commands.
	Workspaces *workspace.Manager
	// GitHub is the App's client; nil when GitHub is not set up.
	GitHub *githubapp.Client
	// Feishu is the Feishu client; nil when Feishu is not set up.
	Feishu *feishu.Client
	// Continuer continues a Ticket when a person writes to it after its
	// Session stopped at a limit; use the Stopper the panel uses, whose
	// hooks say so in the Ticket's conversation. Default: a Stopper
	// without hooks.
	Continuer Continuer
	// RepoEnv holds the team's default setup script, the repositories'
	// secrets and the Tickets' setup outcomes. Default: a store over DB
	// without a key, which reads no secrets.
	RepoEnv *repoenv.Store
	// Shots keeps the screenshot tool's images. Default: a store over DB.
	Shots *shots.Store
}

// Defaults of the watches on an Executor Session (session.Config). Three
// identical results in a row say the call will not change by itself: the
// host notes it, and three more after the note stop the Session, so a
// loop costs at most six calls and the wrap-up. Thirty requests without
// a new change, command or message is more than reading a large change
// takes; the Session stops at sixty.
const (
	DefaultRepeatLimit = 3
	DefaultStallSteps  = 30
)

// Executor runs Executor Sessions.
type Executor struct {
	cfg      Config
	deps     Deps
	sessions *session.Runtime
	metrics  *metrics

	bot botIdentity
	// wipRemotes caches each repository's clone URL and default branch
	// for the checkpoints (workspace.Remote without its token).
	wipRemotes sync.Map
}

// New returns an Executor.
func New(cfg Config, deps Deps) (*Executor, error) {
	if cfg.BranchPrefix == "" {
		cfg.BranchPrefix = "superagent/ticket-"
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 2 * time.Minute
	}
	if cfg.Snooze <= 0 {
		cfg.Snooze = 10 * time.Second
	}
	if cfg.MaxChatWords <= 0 {
		cfg.MaxChatWords = 100
	}
	if cfg.MaxBotRounds <= 0 {
		cfg.MaxBotRounds = 3
	}
	if cfg.MaxFixAttempts <= 0 {
		cfg.MaxFixAttempts = 3
	}
	if cfg.Session.MaxWallTime <= 0 {
		cfg.Session.MaxWallTime = 2 * time.Hour
	}
	if cfg.Session.RepeatLimit <= 0 {
		cfg.Session.RepeatLimit = DefaultRepeatLimit
	}
	if cfg.Session.StallSteps <= 0 {
		cfg.Session.StallSteps = DefaultStallSteps
	}
	if cfg.MCPTimeout <= 0 {
		cfg.MCPTimeout = DefaultMCPTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	var problems []error
	for name, missing := range map[string]bool{
		"Deps.DB": deps.DB == nil, "Deps.Tickets": deps.Tickets == nil, "Deps.Wake": deps.Wake == nil,
		"Deps.Prompts": deps.Prompts == nil, "Deps.Model": deps.Model == nil, "Deps.Workspaces": deps.Workspaces == nil,
		"Deps.Scrubber": deps.Scrubber == nil,
	} {
		if missing {
			problems = append(problems, fmt.Errorf("%s is required", name))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("configuring the executor: %w", errors.Join(problems...))
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	if deps.Shots == nil {
		deps.Shots = shots.New(shots.Config{Now: cfg.Now}, deps.DB)
	}
	if deps.RepoEnv == nil {
		deps.RepoEnv = repoenv.New(deps.DB, nil, cfg.Now)
	}
	e := &Executor{cfg: cfg, deps: deps, metrics: m}
	if e.deps.Continuer == nil {
		e.deps.Continuer = tickets.NewStopper(deps.DB, deps.Tickets, e.StoppedAtLimit).WithLogger(cfg.Logger)
	}
	if cfg.Session.Metrics != nil && cfg.Session.Repository == nil {
		cfg.Session.Repository = e.repository
	}
	if cfg.Session.Budget == nil {
		cfg.Session.Budget = e.sessionBudget
	}
	e.sessions = session.New(cfg.Session, deps.DB, deps.Model, e, deps.Scrubber, cfg.Now)
	return e, nil
}

// Register adds the Executor's worker for jobs.ExecuteArgs to q, the
// status cards' for jobs.CardArgs, and the watchdog that restarts Executors whose process died, every
// LeaseTTL.
func (e *Executor) Register(q *queue.Queue) {
	queue.AddWorker(q, e.Worker())
	queue.AddWorker(q, &Watchdog{e: e})
	queue.AddWorker(q, &CardWorker{e: e})
	queue.AddPeriodic(q, e.cfg.LeaseTTL, WatchArgs{})
}

// Worker returns the worker Register adds, for a caller that runs jobs
// itself.
func (e *Executor) Worker() *Worker { return &Worker{e: e} }

// Sessions is the Executor Sessions' runtime, for reading transcripts.
func (e *Executor) Sessions() *session.Runtime { return e.sessions }

// branch is the Ticket's working branch.
func (e *Executor) branch(ticketID int64) string {
	return e.cfg.BranchPrefix + strconv.FormatInt(ticketID, 10)
}

var _ session.PromptSource = (*Executor)(nil)

// SystemPrompt assembles an Executor Session's prompt from the latest
// revision for every model request: the Ticket's facts in the Environment
// section, the AGENTS.md chain of the directories it worked in, and, for an
// inferred Ticket, the rules that admitted it.
func (e *Executor) SystemPrompt(ctx context.Context, s *session.Session) (string, int64, error) {
	in, err := e.promptInput(ctx, s.TicketID)
	if err != nil {
		return "", 0, err
	}
	return e.deps.Prompts.Assemble(ctx, in)
}
