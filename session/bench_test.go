package session_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/secret"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/session"
)

// stepModel answers instantly with one tool call per request, then ends the
// turn: the benchmark measures the runtime, not a model.
type stepModel struct{ n, steps int }

func (m *stepModel) Complete(context.Context, model.Request) (*model.Response, error) {
	m.n++
	u := model.Usage{Input: 1200, CacheRead: 8000, Output: 60}
	if m.n > m.steps {
		return &model.Response{Content: "done", FinishReason: "stop", Usage: u, Model: "bench"}, nil
	}
	return &model.Response{
		ToolCalls:    []model.ToolCall{{ID: fmt.Sprintf("call_%d", m.n), Name: "read_file", Arguments: `{"path":"internal/session/runtime.go"}`}},
		FinishReason: "tool_calls", Usage: u, Model: "bench",
	}, nil
}

func (m *stepModel) Model() string        { return "bench" }
func (m *stepModel) ContextWindow() int64 { return 1 << 40 }

// BenchmarkStep measures the runtime's own cost per step: prompt assembly
// (a fake source), recording the request and the assistant message, the
// tool call's intent and its scrubbed result. ns/op is per step. On
// PostgreSQL each step waits for one WAL flush (the intent) unless the
// intent is relaxed: the "postgres" figure is bounded below by the
// server's commit latency, "postgres-relaxed" shows the runtime's own cost.
func BenchmarkStep(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchmarkStep(b, dbtest.SQLite(b), false) })
	b.Run("postgres", func(b *testing.B) { benchmarkStep(b, dbtest.Postgres(b), false) })
	b.Run("postgres-relaxed", func(b *testing.B) { benchmarkStep(b, dbtest.Postgres(b), true) })
}

func benchmarkStep(b *testing.B, d *db.DB, relaxed bool) {
	ctx := context.Background()
	scrub := secret.New(apiKey, ghToken)
	m := &stepModel{steps: b.N}
	cfg := session.Config{MaxSteps: int64(b.N) + 10, RelaxedIntent: relaxed}
	rt := session.New(cfg, d, m, newPrompts("system prompt"), scrub, nil)
	output := "package session\n\n" + fmt.Sprintf("%2000s", "source text")
	tools, err := session.NewRegistry(session.Spec[pathArgs]{
		Name: "read_file", Idempotent: true,
		Handler: func(context.Context, session.Call, pathArgs) (string, error) { return output, nil },
	}.Tool())
	require.NoError(b, err)
	s, err := rt.Create(ctx, d, session.RoleExecutor, 1)
	require.NoError(b, err)
	_, err = rt.Append(ctx, d, s.ID, "read the runtime")
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	out, err := rt.Run(ctx, s.ID, tools, session.RunOptions{})
	b.StopTimer()
	require.NoError(b, err)
	require.Equal(b, b.N+1, out.Steps)
}
