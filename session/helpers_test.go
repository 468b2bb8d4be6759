package session_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/secret"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/session"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// pgx and database/sql keep background goroutines per pool.
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("internal/poll.runtime_pollWait"),
	)
}

// The secrets the process "holds" in these tests.
const (
	apiKey  = "sk-live-0123456789abcdefABCDEF"
	ghToken = "ghs_Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"
)

// prompts is a PromptSource whose text a test saves between requests.
type prompts struct {
	mu    sync.Mutex
	text  string
	rev   int64
	calls int
}

func newPrompts(text string) *prompts { return &prompts{text: text, rev: 1} }

func (p *prompts) SystemPrompt(context.Context, *session.Session) (string, int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	return p.text, p.rev, nil
}

func (p *prompts) Save(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.text = text
	p.rev++
}

// clock is a manual clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	d       *db.DB
	srv     *fakeopenai.Server
	prompts *prompts
	scrub   *secret.Scrubber
	clock   *clock
	waits   []time.Duration
	mcfg    model.Config
	cfg     session.Config
	rt      *session.Runtime
}

// setup starts a fake model with the replies and a runtime over d. mod may
// change the configurations before the runtime is built.
func setup(t *testing.T, d *db.DB, mod func(*env), replies ...fakeopenai.Reply) *env {
	t.Helper()
	e := &env{
		d:       d,
		srv:     fakeopenai.New(t, replies...),
		prompts: newPrompts("You are the test agent. Revision one."),
		scrub:   secret.New(apiKey, ghToken),
		clock:   &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)},
	}
	e.mcfg = model.Config{
		BaseURL: e.srv.URL(), APIKey: apiKey, Model: "fake-model",
		Now: e.clock.Now, Random: func() float64 { return 0 },
		Sleep: func(ctx context.Context, d time.Duration) error {
			e.waits = append(e.waits, d)
			return ctx.Err()
		},
	}
	if mod != nil {
		mod(e)
	}
	e.rt = e.runtime(t)
	return e
}

// runtime builds a fresh runtime over the same database and fake, as a
// restarted process would.
func (e *env) runtime(t *testing.T) *session.Runtime {
	t.Helper()
	client, err := model.New(e.mcfg)
	require.NoError(t, err)
	return session.New(e.cfg, e.d, client, e.prompts, e.scrub, e.clock.Now)
}

func (e *env) create(t *testing.T, role session.Role, ticket int64, text string) *session.Session {
	t.Helper()
	ctx := t.Context()
	s, err := e.rt.Create(ctx, e.d, role, ticket)
	require.NoError(t, err)
	if text != "" {
		_, err = e.rt.Append(ctx, e.d, s.ID, text)
		require.NoError(t, err)
	}
	return s
}

func (e *env) messages(t *testing.T, sessionID int64) []session.Message {
	t.Helper()
	msgs, err := e.rt.Store().Messages(t.Context(), e.d, sessionID, 0)
	require.NoError(t, err)
	return msgs
}

func (e *env) requests(t *testing.T, sessionID int64) []session.Request {
	t.Helper()
	reqs, err := e.rt.Store().Requests(t.Context(), e.d, sessionID)
	require.NoError(t, err)
	return reqs
}

func (e *env) get(t *testing.T, sessionID int64) *session.Session {
	t.Helper()
	s, err := e.rt.Store().Get(t.Context(), e.d, sessionID)
	require.NoError(t, err)
	return s
}

// dump returns every text column the sessions tables hold.
func dump(t *testing.T, d *db.DB) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT content || reasoning || tool_calls || tool_call_id FROM session_messages`,
		`SELECT call_id || name || arguments FROM session_tool_calls`,
		`SELECT state_reason FROM sessions`,
	} {
		rows, err := d.Query(t.Context(), q)
		require.NoError(t, err)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			b.WriteString(s)
			b.WriteByte('\n')
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	return b.String()
}

// tool builds a tool whose handler is fn and whose arguments are any
// object.
func tool(name string, idempotent bool, fn func(ctx context.Context, c session.Call) (string, error)) session.Tool {
	return session.Spec[map[string]any]{Name: name, Description: "test tool " + name, Idempotent: idempotent,
		Handler: func(ctx context.Context, c session.Call, _ map[string]any) (string, error) { return fn(ctx, c) }}.Tool()
}

func registry(t *testing.T, tools ...session.Tool) *session.Registry {
	t.Helper()
	r, err := session.NewRegistry(tools...)
	require.NoError(t, err)
	return r
}

// toolResults maps call ids to the tool results a recorded request carried.
func toolResults(req fakeopenai.Request) map[string]string {
	out := map[string]string{}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

func roles(req fakeopenai.Request) []string {
	out := make([]string, len(req.Messages))
	for i, m := range req.Messages {
		out[i] = m.Role
	}
	return out
}
