package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/executor"
	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/secret"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/jobs"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

const (
	repo         = "octo/hello"
	installation = 7
	modelKey     = "sk-executor-test-key-0123456789"
)

// env is one deployment under test: a database, fake GitHub serving a real
// git repository, the fake model scripted as the Executor, and the real
// executor with its sandbox.
type env struct {
	d       *db.DB
	gh      *fakegithub.Server
	model   *fakeopenai.Server
	store   *tickets.Store
	prompts *promptparts.Service
	wake    *jobs.Waker
	x       *executor.Executor
	ghc     *githubapp.Client
	fsc     *feishu.Client // nil unless a test sets up Feishu
	reg     *prometheus.Registry
	scrub   *secret.Scrubber
	dataDir string
	bare    string
	logs    *syncBuffer
	// progress turns on the progress comment and check run, under
	// publicURL; the tests of other writes leave them off.
	progress  bool
	publicURL string
	// session tunes the Executor Sessions' runtime.
	session session.Config
	// repoEnv, when set, is the Executor's store of setup scripts and
	// secrets.
	repoEnv *repoenv.Store
	// mayWorkIn, when set, is the gate repository_set applies.
	mayWorkIn func(ctx context.Context, t tickets.Ticket, repo string) error
	// readOnly are host directories bound read-only into the sandbox;
	// mcpTimeout bounds the MCP servers' calls.
	readOnly   []string
	mcpTimeout time.Duration
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func requireSandbox(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bwrap is required under CI")
		}
		t.Skip("bwrap is not installed")
	}
}

// heedsReminders makes a brain follow the host's reminder of a turn that
// ended with the Ticket still working: it reports the Ticket waiting,
// saying what its last answer said. The tests of sloppy models script
// their own answer to it.
func heedsReminders(brain func(fakeopenai.Request) fakeopenai.Reply) func(fakeopenai.Request) fakeopenai.Reply {
	return func(req fakeopenai.Request) fakeopenai.Reply {
		last := req.LastMessage()
		if last.Role != "user" || !strings.HasPrefix(last.Content, session.NudgePrefix) {
			return brain(req)
		}
		said := "The work is where the transcript leaves it."
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if m := req.Messages[i]; m.Role == "assistant" && strings.TrimSpace(m.Content) != "" {
				said = m.Content
				break
			}
		}
		args, _ := json.Marshal(map[string]string{"state": "waiting", "summary": said + heededReminder})
		return call("report", string(args))
	}
}

// heededReminder ends the summary of heedsReminders' report.
const heededReminder = " Waiting for what comes next."

// readme is the repository's README with the typo the tests fix.
const readme = "# Hello\n\nThis projetc says hello.\n"

func setup(t *testing.T, d *db.DB, brain func(fakeopenai.Request) fakeopenai.Reply) *env {
	t.Helper()
	requireSandbox(t)
	e := &env{d: d, gh: fakegithub.New(t), model: fakeopenai.New(t), store: tickets.New(tickets.Config{}),
		dataDir: t.TempDir(), logs: &syncBuffer{}}
	e.bare = e.gh.AddRepo(t, repo, "main", map[string]string{
		"README.md": readme,
		"test.sh":   "#!/bin/sh\nif grep -q projetc README.md; then echo 'typo still there'; exit 1; fi\necho ok\n",
		"AGENTS.md": "Run ./test.sh before committing.\n",
	})
	e.model.Fallback(fakeopenai.Respond(heedsReminders(brain)))
	// Secrets the service holds; none may reach the model or a transcript.
	require.NoError(t, os.WriteFile(filepath.Join(e.dataDir, "superagent.db"), []byte("DATABASE-FILE-SECRET"), 0o600))
	e.scrub = secret.New(modelKey, string(e.gh.PrivateKey()))
	var err error
	e.prompts, err = promptparts.New(promptparts.Config{}, d)
	require.NoError(t, err)
	t.Cleanup(e.prompts.Stop)
	e.ghc, err = githubapp.New(githubapp.Config{AppID: e.gh.AppID, PrivateKey: e.gh.PrivateKey(), BaseURL: e.gh.URL})
	require.NoError(t, err)
	seed.Installation(t, d, installation, repo)
	e.x = e.executor(t)
	return e
}

// executor builds a fresh executor over the same
// database and fakes, as a restarted process would.
func (e *env) executor(t *testing.T) *executor.Executor {
	t.Helper()
	client, err := model.New(model.Config{BaseURL: e.model.URL(), APIKey: modelKey, Model: "executor",
		Prices: map[string]model.Price{"executor": {Input: 1000, Output: 1000}},
		Random: func() float64 { return 0 },
		Sleep:  func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	require.NoError(t, err)
	// No queue: a test runs the Executor's jobs by hand, and the main
	// Session's turns are not the Executor's to run.
	e.wake = &jobs.Waker{Tickets: e.store}
	ws, err := workspace.NewManager(workspace.Config{Root: filepath.Join(e.dataDir, "workspaces"), ExtraReadOnly: e.readOnly})
	require.NoError(t, err)
	logger := slog.New(secret.NewHandler(slog.NewTextHandler(e.logs, nil), e.scrub))
	e.reg = prometheus.NewRegistry()
	x, err := executor.New(executor.Config{Logger: logger, LeaseTTL: 3 * time.Second, Registerer: e.reg,
		NoProgress: !e.progress, PublicURL: e.publicURL, Session: e.session, MayWorkIn: e.mayWorkIn, MCPTimeout: e.mcpTimeout},
		executor.Deps{DB: e.d, Tickets: e.store, Wake: e.wake, Prompts: e.prompts, Model: client, Scrubber: e.scrub,
			Workspaces: ws, GitHub: e.ghc, Feishu: e.fsc, RepoEnv: e.repoEnv})
	require.NoError(t, err)
	return x
}

// request stores a person's request on issue 1 and makes it a Ticket, as
// the main Session would, and returns the Ticket and its card.
func (e *env) request(t *testing.T, text string) (tickets.Ticket, tickets.Card) {
	t.Helper()
	e.gh.AddIssue(repo, 1, "Typo in the README", "The README says projetc.", "alice")
	c := e.admit(t, 1, "alice", text)
	return e.ticketOf(t, c, "Fix the README typo"), c
}

// ticketOf makes card c a Ticket in repo, as the main Session would.
func (e *env) ticketOf(t *testing.T, c tickets.Card, title string) tickets.Ticket {
	t.Helper()
	return e.ticketIn(t, c, title, repo)
}

// ticketIn makes card c a Ticket in repository in ("" for none yet).
func (e *env) ticketIn(t *testing.T, c tickets.Card, title, in string) tickets.Ticket {
	t.Helper()
	ctx := context.Background()
	var tk tickets.Ticket
	require.NoError(t, e.d.InTx(ctx, func(tx *db.Tx) error {
		author := c.Author
		m := tickets.Mandate{RequestedBy: &author, Source: c.Source, Actions: []string{"reply", "branch", "pull_request"}}
		if in != "" {
			m.Repos = []string{in}
		}
		var err error
		tk, err = e.store.CreateTicket(ctx, tx, tickets.Ticket{Title: title, Repo: in, SourceCardID: c.ID, Mandate: m})
		if err != nil {
			return err
		}
		if err := e.store.Subscribe(ctx, tx, tk.ID, c.Thread.ID); err != nil {
			return err
		}
		return e.store.SetCardState(ctx, tx, c.ID, tickets.CardRouted, tk.ID)
	}))
	return tk
}

var deliverySeq struct {
	sync.Mutex
	n int
}

// admit stores a comment card on issue (or pull request) number.
func (e *env) admit(t *testing.T, number int, login, text string) tickets.Card {
	t.Helper()
	return e.admitCard(t, tickets.NewCard{Source: tickets.SourceGitHub, Kind: "comment",
		Thread:    tickets.Thread{Source: tickets.SourceGitHub, Key: fmt.Sprintf("github:%s#%d", repo, number), Repo: repo, Number: number},
		Author:    tickets.Author{ID: login, Login: login, Type: tickets.AuthorUser, Permission: "write"},
		Addressed: true, AddressedWhy: "mention", Text: text,
		URL: fmt.Sprintf("https://github.com/%s/issues/%d#issuecomment-%d", repo, number, e.gh.AddComment(repo, number, login, text))})
}

func (e *env) admitCard(t *testing.T, nc tickets.NewCard) tickets.Card {
	t.Helper()
	ctx := context.Background()
	deliverySeq.Lock()
	deliverySeq.n++
	n := deliverySeq.n
	deliverySeq.Unlock()
	nc.DeliveryID = seed.Delivery(t, e.d, "x"+strconv.Itoa(n))
	var out tickets.Card
	require.NoError(t, e.d.InTx(ctx, func(tx *db.Tx) (err error) {
		out, err = e.store.Admit(ctx, tx, nc, 0)
		return err
	}))
	return out
}

// run runs the Ticket's Executor to the end.
func (e *env) run(t *testing.T, ticketID int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, e.x.Execute(ctx, ticketID, "test"))
}

// transcript is everything stored for the Ticket's Sessions: messages,
// tool calls and results.
func (e *env) transcript(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	rows, err := e.d.Query(context.Background(), `SELECT content, reasoning, tool_calls FROM session_messages ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var content, reasoning, calls string
		require.NoError(t, rows.Scan(&content, &reasoning, &calls))
		b.WriteString(content + "\n" + reasoning + "\n" + calls + "\n")
	}
	require.NoError(t, rows.Err())
	return b.String()
}

// calls lists the tool calls the model made and the results it read, in
// order, across the requests it received.
type step struct{ name, args, result string }

// The report heedsReminders answers a reminder with is left out: it is
// the test brain's manners, not the step a test scripted.
func steps(req fakeopenai.Request) []step {
	var out []step
	byID := map[string]int{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if c.Name == "report" && strings.Contains(c.Arguments, heededReminder) {
				continue
			}
			byID[c.ID] = len(out)
			out = append(out, step{name: c.Name, args: c.Arguments})
		}
		if m.Role == "tool" {
			if i, ok := byID[m.ToolCallID]; ok {
				out[i].result = m.Content
			}
		}
	}
	return out
}

// done reports whether a call of name succeeded (its result is neither a
// refusal, an error nor an interruption).
func done(ss []step, name string) bool {
	for _, s := range ss {
		if s.name == name && s.result != "" && !strings.HasPrefix(s.result, "refused") && !strings.HasPrefix(s.result, "error") &&
			!strings.Contains(s.result, "interrupted") {
			return true
		}
	}
	return false
}

var cardLine = regexp.MustCompile(`(?m)^card ([0-9]+) · `)

// firstCard is the id of the first card the Executor was given.
func firstCard(req fakeopenai.Request) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			if c := cardLine.FindStringSubmatch(m.Content); c != nil {
				return c[1]
			}
		}
	}
	return "0"
}

var callSeq struct {
	sync.Mutex
	n int
}

func call(name, args string) fakeopenai.Reply {
	callSeq.Lock()
	callSeq.n++
	id := "call_" + strconv.Itoa(callSeq.n)
	callSeq.Unlock()
	return fakeopenai.Calls(fakeopenai.Call(id, name, args))
}

// typoFixer is the Executor's model for the README typo: it confirms,
// reads, edits, tests, commits, pushes, opens a draft, answers and
// reports done with what is left for a person (the draft's review),
// deciding each step from what is done so far, so that a resumed
// conversation picks up where it stopped.
func typoFixer(req fakeopenai.Request) fakeopenai.Reply {
	ss := steps(req)
	card := firstCard(req)
	switch {
	case !done(ss, "reply"):
		return call("reply", `{"purpose":"confirm","in_reply_to":`+card+`,"text":"I will fix the misspelled word in README.md and open a pull request with the change."}`)
	case !done(ss, "read_file"):
		return call("read_file", `{"path":"README.md"}`)
	case !done(ss, "edit_file"):
		return call("edit_file", `{"path":"README.md","old_text":"projetc","new_text":"project"}`)
	case !done(ss, "run_command"):
		return call("run_command", `{"command":"sh test.sh","timeout_seconds":30}`)
	case !done(ss, "git_commit"):
		return call("git_commit", `{"message":"Fix a typo in the README"}`)
	case !done(ss, "git_push"):
		return call("git_push", `{}`)
	case !done(ss, "pr_open"):
		return call("pr_open", `{"title":"Fix a typo in the README","body":"Fixes the misspelled word. Verified with ./test.sh (exit 0)."}`)
	case countDone(ss, "reply") < 2:
		return call("reply", `{"purpose":"result","in_reply_to":`+card+`,"text":"The fix is in a draft pull request; ./test.sh passes."}`)
	case !done(ss, "report"):
		return call("report", `{"state":"done","summary":"Fixed the README typo in a draft pull request; verified with ./test.sh, which passes.",`+
			`"human_action":"Please review the draft pull request and mark it ready if the wording suits you."}`)
	}
	return fakeopenai.Text("Done.")
}

func countDone(ss []step, name string) int {
	n := 0
	for _, s := range ss {
		if s.name == name && s.result != "" && !strings.HasPrefix(s.result, "refused") && !strings.HasPrefix(s.result, "error") {
			n++
		}
	}
	return n
}

// gitLog lists the subjects on branch in the bare remote.
func gitLog(t *testing.T, bare, branch string) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", bare, "log", "--format=%an <%ae> %s", branch).CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

func gitShow(t *testing.T, bare, rev string) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", bare, "show", rev).CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}
