package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/queue"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/jobs"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// env is one deployment under test: a database, the fake model scripted as
// the main Session, fake GitHub and Feishu behind the real clients.
type env struct {
	d       *db.DB
	model   *fakeopenai.Server
	gh      *fakegithub.Server
	fs      *fakefeishu.Server
	store   *tickets.Store
	prompts *promptparts.Service
	q       *queue.Queue
	o       *orchestrator.Orchestrator
	reg     *prometheus.Registry
	cfg     orchestrator.Config
	ghc     *githubapp.Client
	fsc     *feishu.Client
	seq     atomic.Int64
	// deps, when set, adjusts the orchestrator's Deps.
	deps func(*orchestrator.Deps)
}

const installation = 7

func setup(t *testing.T, d *db.DB, mod func(*orchestrator.Config)) *env {
	t.Helper()
	e := &env{d: d, model: fakeopenai.New(t), gh: fakegithub.New(t), fs: fakefeishu.New(t), store: tickets.New(tickets.Config{})}
	t.Cleanup(e.fs.Close)
	e.gh.ServeConversations()
	// Unscripted requests (reminders) end the turn.
	e.model.Fallback(fakeopenai.Text("No further decisions."))
	var err error
	e.prompts, err = promptparts.New(promptparts.Config{}, d)
	require.NoError(t, err)
	t.Cleanup(e.prompts.Stop)
	e.ghc, err = githubapp.New(githubapp.Config{AppID: e.gh.AppID, PrivateKey: e.gh.PrivateKey(), BaseURL: e.gh.URL})
	require.NoError(t, err)
	e.fsc, err = feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: e.fs.URL, ChatInterval: -1}, nil, nil)
	require.NoError(t, err)
	seed.Installation(t, d, installation, "octo/repo")
	e.cfg = orchestrator.Config{
		Gate:     orchestrator.Gate{FeishuChats: []string{"oc_team"}, AdminGitHubLogins: []string{"alice"}},
		Debounce: time.Second,
	}
	if mod != nil {
		mod(&e.cfg)
	}
	e.q = queue.New(d, queue.Config{ID: "test", FetchPollInterval: 100 * time.Millisecond})
	e.o = e.orchestrator(t)
	e.o.Register(e.q)
	// The Executor is package executor's; these tests only count its jobs.
	queue.AddWorker(e.q, river.WorkFunc(func(context.Context, *river.Job[jobs.ExecuteArgs]) error { return nil }))
	queue.AddWorker(e.q, river.WorkFunc(func(context.Context, *river.Job[jobs.CardArgs]) error { return nil }))
	require.NoError(t, e.q.Init())
	return e
}

// orchestrator builds a fresh orchestrator and runtime over the same
// database and fakes, as a restarted process would.
func (e *env) orchestrator(t *testing.T) *orchestrator.Orchestrator {
	t.Helper()
	client, err := model.New(model.Config{BaseURL: e.model.URL(), APIKey: "test", Model: "router",
		Random: func() float64 { return 0 },
		Sleep:  func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	require.NoError(t, err)
	rt := session.New(session.Config{}, e.d, client, orchestrator.PromptSource(e.prompts, []promptparts.Var{{Name: "deployment", Value: "test"}}, orchestrator.Repositories(e.d, 0)), nil, nil)
	cfg := e.cfg
	e.reg = prometheus.NewRegistry()
	cfg.Registerer = e.reg
	deps := orchestrator.Deps{DB: e.d, Queue: e.q, Tickets: e.store, Sessions: rt, Prompts: e.prompts,
		Acks:        &outbox.Messenger{DB: e.d, GitHub: e.ghc, Feishu: e.fsc, Prompts: e.prompts},
		Permissions: &githubapp.PermissionCache{DB: e.d, Client: e.ghc}}
	if e.deps != nil {
		e.deps(&deps)
	}
	o, err := orchestrator.New(cfg, deps)
	require.NoError(t, err)
	return o
}

// card describes a GitHub comment to admit.
type card struct {
	number     int
	login      string
	permission string
	bot        bool
	kind       string
	addressed  bool
	text       string
	refs       []tickets.Reference
}

// admit stores a GitHub comment card through the orchestrator's hook, as
// ingestion does.
func (e *env) admit(t *testing.T, c card) tickets.Card {
	t.Helper()
	ctx := context.Background()
	n := e.seq.Add(1)
	id := seed.Delivery(t, e.d, "d"+strconv.FormatInt(n, 10))
	author := tickets.Author{ID: c.login, Login: c.login, Type: tickets.AuthorUser, Permission: c.permission}
	if c.bot {
		author.Type = tickets.AuthorBot
	}
	kind := c.kind
	if kind == "" {
		kind = "comment"
	}
	nc := tickets.NewCard{DeliveryID: id, Source: tickets.SourceGitHub, Kind: kind,
		Thread: tickets.Thread{Source: tickets.SourceGitHub, Key: fmt.Sprintf("github:octo/repo#%d", c.number), Repo: "octo/repo", Number: c.number, Title: "Issue " + strconv.Itoa(c.number)},
		Author: author, Addressed: c.addressed, References: c.refs, Text: c.text,
		URL: fmt.Sprintf("https://github.com/octo/repo/issues/%d#issuecomment-%d", c.number, 5000+n)}
	if c.addressed {
		nc.AddressedWhy = "mention"
	}
	var out tickets.Card
	require.NoError(t, e.d.InTx(ctx, func(tx *db.Tx) (err error) {
		out, err = e.store.Admit(ctx, tx, nc, 0, e.o)
		return err
	}))
	return out
}

// request is a person with write permission asking the bot on an issue.
func request(number int, text string) card {
	return card{number: number, login: "alice", permission: "write", addressed: true, text: "@superagent " + text}
}

func route(id string, decisions ...orchestrator.Decision) fakeopenai.ToolCall {
	b, _ := json.Marshal(map[string]any{"decisions": decisions})
	return fakeopenai.Call(id, orchestrator.ToolRoute, string(b))
}

func (e *env) turn(t *testing.T) orchestrator.TurnResult {
	t.Helper()
	res, err := e.o.Turn(context.Background(), "test")
	require.NoError(t, err)
	return res
}

func (e *env) ticketCount(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, e.d.QueryRow(context.Background(), `SELECT COUNT(*) FROM tickets`).Scan(&n))
	return n
}

func (e *env) jobs(t *testing.T, kind string) int {
	t.Helper()
	var n int
	require.NoError(t, e.d.QueryRow(context.Background(), `SELECT COUNT(*) FROM river_job WHERE kind = $1`, kind).Scan(&n))
	return n
}

// toolResult returns the content of the tool message answering callID in
// the requests the fake model received.
func (e *env) toolResult(t *testing.T, callID string) string {
	t.Helper()
	for _, r := range e.model.Requests() {
		for _, m := range r.Messages {
			if m.Role == "tool" && m.ToolCallID == callID {
				return m.Content
			}
		}
	}
	t.Fatalf("no tool result for %s", callID)
	return ""
}

var cardIDs = regexp.MustCompile(`(?m)^card ([0-9]+) · `)

// candidatesIn lists the candidate card ids in a request's last message.
func candidatesIn(r fakeopenai.Request) []int64 {
	var ids []int64
	for _, m := range cardIDs.FindAllStringSubmatch(r.LastMessage().Content, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		ids = append(ids, n)
	}
	return ids
}

func words(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }

// unfinishedTurns counts turn jobs not completed yet.
func (e *env) unfinishedTurns(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, e.d.QueryRow(context.Background(), `SELECT COUNT(*) FROM river_job WHERE kind = 'route_turn' AND state <> 'completed'`).Scan(&n))
	return n
}
