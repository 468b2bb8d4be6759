package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/jobs"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// Config tunes the main Session. The zero value of each field is its
// documented default.
type Config struct {
	// Debounce is how long after the end of a turn that routed cards the
	// next turn waits before it reads, so a burst becomes one batch; on a
	// quiet service a turn starts at once (after Settle). A turn that
	// only read Reports or notices does not hold the next one back.
	// Default 2 s; at most MaxDelay.
	Debounce time.Duration
	// MaxDelay caps Debounce. Default 10 s.
	MaxDelay time.Duration
	// Settle is how long a turn that starts at once waits for cards to stop
	// arriving before it reads them: it reads when none came for Settle,
	// and after at most ten times Settle. A lone request waits Settle; a
	// burst is read whole. Default 100 ms.
	Settle time.Duration
	// MaxCandidates is the number of candidates appended to the Session at
	// once; more wait for the next batch of the same turn. Default 30.
	MaxCandidates int
	// TurnTimeout bounds one turn job. Default 10 minutes.
	TurnTimeout time.Duration
	// LeaseTTL is how long the turn's lease lasts unless renewed; a running
	// turn renews it every third of that, so a turn whose process died
	// frees the main Session after at most this long. Default 1 minute.
	LeaseTTL time.Duration
	// Gate says who may start work and who may save prompts.
	Gate Gate
	// ProposalTTL is how long a proposal waits for a person to accept it
	// before it expires, with one sentence where it was proposed. Default
	// 72 hours; negative: proposals never expire.
	ProposalTTL time.Duration
	// LinkURL is the link that lets the Feishu user openID prove their
	// GitHub login, offered when the gate refuses them for the lack of
	// one. Nil: no link is offered.
	LinkURL func(openID string) string
	// BotLogin is how people address the bot in GitHub comments
	// ("superagent" for "@superagent pause"). Default "superagent".
	BotLogin string
	// Environment is the deployment-wide Environment section of the main
	// Session's prompt.
	Environment []promptparts.Var
	// Registerer receives the metrics. Default: none.
	Registerer prometheus.Registerer
	// Logger receives turn errors. Default: discarded.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Deps are the components the main Session uses.
type Deps struct {
	DB *db.DB
	// Queue enqueues turns and Executor jobs; register the workers with
	// Register before its Init.
	Queue   *queue.Queue
	Tickets *tickets.Store
	// Sessions runs the main Session; build it with PromptSource as its
	// prompt source and the router model.
	Sessions *session.Runtime
	Prompts  *promptparts.Service
	// Acks sends acknowledgements, questions and proposals (an
	// outbox.Messenger). Default: none are sent (they stay recorded as
	// pending intents).
	Acks outbox.Sender
	// AtLimit tells whether a Ticket's latest Executor Session stopped at
	// a limit, so that "continue" applies to it (the Executor's
	// StoppedAtLimit). Default: never; only a stopped Ticket continues.
	AtLimit tickets.LimitCheck
	// Permissions reads a person's permission on a repository (a
	// githubapp.PermissionCache), for the gate on a Ticket's target
	// repository. Nil: a request may open work only in its own repository.
	Permissions Permissions
	// People resolves a Feishu requester to the GitHub logins they hold.
	// Nil: a Feishu requester opens work only in the repositories their
	// chat opens.
	People *people.Store
	// ChatRepos reads the repositories a Feishu chat opens to its members.
	// Nil: none.
	ChatRepos ChatRepos
}

// Permissions reads login's permission level on owner/name through an
// installation.
type Permissions interface {
	Level(ctx context.Context, installationID int64, owner, name, login string) (string, error)
}

// Orchestrator runs the main Session's turns.
type Orchestrator struct {
	cfg     Config
	deps    Deps
	metrics *metrics
	wake    *jobs.Waker
}

// New returns an Orchestrator.
func New(cfg Config, deps Deps) (*Orchestrator, error) {
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = 10 * time.Second
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = 2 * time.Second
	}
	cfg.Debounce = min(cfg.Debounce, cfg.MaxDelay)
	if cfg.Settle <= 0 {
		cfg.Settle = 100 * time.Millisecond
	}
	if cfg.MaxCandidates <= 0 {
		cfg.MaxCandidates = 30
	}
	if cfg.TurnTimeout <= 0 {
		cfg.TurnTimeout = 10 * time.Minute
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = time.Minute
	}
	if cfg.BotLogin == "" {
		cfg.BotLogin = "superagent"
	}
	if cfg.ProposalTTL == 0 {
		cfg.ProposalTTL = DefaultProposalTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	var problems []error
	if deps.DB == nil {
		problems = append(problems, errors.New("Deps.DB is required"))
	}
	if deps.Tickets == nil {
		problems = append(problems, errors.New("Deps.Tickets is required"))
	}
	if deps.Sessions == nil {
		problems = append(problems, errors.New("Deps.Sessions is required"))
	}
	if deps.Prompts == nil {
		problems = append(problems, errors.New("Deps.Prompts is required"))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("configuring the orchestrator: %w", errors.Join(problems...))
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	o := &Orchestrator{cfg: cfg, deps: deps, metrics: m}
	o.wake = &jobs.Waker{Queue: deps.Queue, Tickets: deps.Tickets, Now: cfg.Now}
	return o, nil
}

// Register adds the turn worker to q. The Executor's worker for
// jobs.ExecuteArgs is package executor's.
func (o *Orchestrator) Register(q *queue.Queue) {
	queue.AddWorker(q, &RouteWorker{o: o})
	queue.AddWorker(q, &ReviveWorker{o: o})
	queue.AddPeriodic(q, o.cfg.LeaseTTL, jobs.ReviveArgs{})
	o.registerExpiry(q)
}

var _ tickets.Hook = (*Orchestrator)(nil)

// CardAdmitted is the tickets.Hook ingestion calls inside the transaction
// that stores each card: a person's command is applied at once, a merged
// or closed pull request ends its Ticket, a follow-up wakes the Executors
// of the Tickets it reached, and a candidate or follow-up schedules a
// turn.
func (o *Orchestrator) CardAdmitted(ctx context.Context, tx *db.Tx, c tickets.Card) error {
	if err := o.applyCommand(ctx, tx, c); err != nil {
		return err
	}
	ended, err := o.wake.PullEnded(ctx, tx, c)
	if err != nil {
		return err
	}
	for _, t := range ended {
		tx.AfterCommit(func() {
			if c.Kind == tickets.KindPullMerged {
				o.cfg.Logger.Info("pull request merged", "ticket", t.ID, "repo", t.Repo, "pr", t.PullNumber, "by", c.Author.Login, "card", c.ID)
			}
			o.cfg.Logger.Info("ticket ended", "ticket", t.ID, "repo", t.Repo, "pr", t.PullNumber, "merged", c.Kind == tickets.KindPullMerged)
		})
	}
	if c.State != tickets.CardCandidate && c.State != tickets.CardFollowUp {
		return nil
	}
	if c.State == tickets.CardFollowUp {
		if err := o.wakeFollowers(ctx, tx, c); err != nil {
			return err
		}
	}
	return o.ScheduleTurn(ctx, tx)
}

// ReadAhead has tx read ahead what CardAdmitted reads for a card that
// is no command: whether a main Session turn waits.
func (o *Orchestrator) ReadAhead(tx *db.Tx) { o.wake.ReadAheadTurn(tx) }

// MayChangeTickets tells whether CardAdmitted may end, stop or pause a
// Ticket for c: only a command does, and the end of a pull request.
func (o *Orchestrator) MayChangeTickets(c tickets.Card) bool {
	if _, ok := ParseCommand(c); ok {
		return true
	}
	return c.Kind == tickets.KindPullMerged || c.Kind == tickets.KindPullClosed
}

// wakeFollowers enqueues the Executor of every Ticket a follow-up reached,
// unless a person holds the Ticket or it still waits to be accepted: a
// paused Ticket's follow-ups wait for the resume.
func (o *Orchestrator) wakeFollowers(ctx context.Context, tx *db.Tx, c tickets.Card) error {
	ids, err := o.deps.Tickets.FollowUpTickets(ctx, tx, c.ID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		t, err := o.deps.Tickets.Ticket(ctx, tx, id)
		if err != nil {
			return err
		}
		if t.Pause != nil || t.Proposal || tickets.Ended(t.State) {
			continue
		}
		if err := o.EnqueueExecutor(ctx, tx, id); err != nil {
			return err
		}
	}
	return nil
}

// ScheduleTurn enqueues a turn inside tx, unless one is already waiting
// (see jobs.Waker.ScheduleTurn).
func (o *Orchestrator) ScheduleTurn(ctx context.Context, tx *db.Tx) error {
	return o.wake.ScheduleTurn(ctx, tx)
}

// EnqueueExecutor wakes the Ticket's Executor in tx (see
// jobs.Waker.WakeExecutor).
func (o *Orchestrator) EnqueueExecutor(ctx context.Context, tx *db.Tx, ticketID int64) error {
	return o.wake.WakeExecutor(ctx, tx, ticketID)
}

// Waker is the main Session's wake operations, with its clock: the
// Executors use it to store Reports and hand-backs and to wake
// the main Session.
func (o *Orchestrator) Waker() *jobs.Waker { return o.wake }
