package model_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/model"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// sleeper records the waits the client asks for and returns at once.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func newClient(t *testing.T, srv *fakeopenai.Server, mod func(*model.Config)) (*model.Client, *sleeper) {
	t.Helper()
	sl := &sleeper{}
	cfg := model.Config{
		BaseURL: srv.URL(), APIKey: "sk-test-key", Model: "test-model",
		Sleep: sl.Sleep, Random: func() float64 { return 0.5 },
		Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := model.New(cfg)
	require.NoError(t, err)
	return c, sl
}

var echoSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)

func TestCompleteToolsAndText(t *testing.T) {
	srv := fakeopenai.New(t,
		fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("call_1", "echo", `{"text":"hi"}`)}, Reasoning: "think"},
		fakeopenai.Reply{Content: "done", Reasoning: "via ollama", ReasoningField: "reasoning", Model: "test-model-2026"},
	)
	c, _ := newClient(t, srv, func(c *model.Config) { c.MaxOutputTokens = 512 })

	req := model.Request{
		System:   "you are a test",
		Messages: []model.Message{{Role: model.RoleUser, Content: "say hi"}},
		Tools:    []model.Tool{{Name: "echo", Description: "echoes", Parameters: echoSchema}},
	}
	resp, err := c.Complete(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, []model.ToolCall{{ID: "call_1", Name: "echo", Arguments: `{"text":"hi"}`}}, resp.ToolCalls)
	require.Equal(t, "tool_calls", resp.FinishReason)
	require.Equal(t, "think", resp.Reasoning)

	got := srv.Last()
	require.Equal(t, "test-model", got.Model)
	require.Equal(t, "you are a test", got.System())
	require.Equal(t, []string{"echo"}, got.ToolNames())
	require.Equal(t, "object", got.Tools[0].Parameters["type"])
	require.EqualValues(t, 512, got.MaxTokens)
	require.Contains(t, got.Body, "max_tokens", "non-OpenAI hosts get max_tokens")
	require.Equal(t, "Bearer sk-test-key", got.Header.Get("Authorization"))

	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, ToolCalls: resp.ToolCalls, Reasoning: resp.Reasoning},
		model.Message{Role: model.RoleTool, ToolCallID: "call_1", Content: "hi"})
	resp, err = c.Complete(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, "done", resp.Content)
	require.Equal(t, "via ollama", resp.Reasoning)
	require.Equal(t, "test-model-2026", resp.Model)
	require.Equal(t, "stop", resp.FinishReason)

	got = srv.Last()
	require.Len(t, got.Messages, 4)
	require.Equal(t, "tool", got.Messages[3].Role)
	require.Equal(t, "call_1", got.Messages[3].ToolCallID)
	require.Equal(t, "echo", got.Messages[2].ToolCalls[0].Name)
	require.NotContains(t, got.Messages[2].Raw, "reasoning_content", "a local host needs no replay")
}

func TestReasoningReplay(t *testing.T) {
	for _, host := range []string{"api.deepseek.com", "api.moonshot.cn", "api.kimi.com"} {
		require.True(t, model.RequiresReplay(host), host)
	}
	for _, host := range []string{"api.openai.com", "dashscope.aliyuncs.com", "127.0.0.1"} {
		require.False(t, model.RequiresReplay(host), host)
	}

	srv := fakeopenai.New(t,
		fakeopenai.Reply{Reasoning: "I should list files", ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("c1", "ls", `{}`)},
			Usage: fakeopenai.UsageDeepSeek(0, 50, 20, 12)},
		fakeopenai.Text("two files"),
	)
	// The fake listens on 127.0.0.1, so a DeepSeek-like configuration says so.
	c, _ := newClient(t, srv, func(c *model.Config) { c.ReasoningReplay = model.ReplayAlways })
	require.True(t, c.ReplaysReasoning())

	msgs := []model.Message{{Role: model.RoleUser, Content: "what is here?"}}
	resp, err := c.Complete(t.Context(), model.Request{Messages: msgs, Tools: []model.Tool{{Name: "ls"}}})
	require.NoError(t, err)
	require.Equal(t, "I should list files", resp.Reasoning)
	require.EqualValues(t, 12, resp.Usage.Reasoning)
	msgs = append(msgs,
		model.Message{Role: model.RoleAssistant, Reasoning: resp.Reasoning, ToolCalls: resp.ToolCalls},
		model.Message{Role: model.RoleTool, ToolCallID: "c1", Content: "a b"},
		// A plain answer's reasoning is not replayed.
		model.Message{Role: model.RoleAssistant, Content: "ok", Reasoning: "private"},
		model.Message{Role: model.RoleUser, Content: "and?"},
	)
	_, err = c.Complete(t.Context(), model.Request{Messages: msgs, Tools: []model.Tool{{Name: "ls"}}})
	require.NoError(t, err)
	sent := srv.Last().Messages
	require.Equal(t, "I should list files", sent[1].ReasoningContent)
	require.Empty(t, sent[3].ReasoningContent)
}

func TestRetries(t *testing.T) {
	t.Run("429 with Retry-After seconds, then 500, then success", func(t *testing.T) {
		srv := fakeopenai.New(t, fakeopenai.Status(http.StatusTooManyRequests, "7"),
			fakeopenai.Status(http.StatusInternalServerError, ""), fakeopenai.Text("finally"))
		c, sl := newClient(t, srv, nil)
		resp, err := c.Complete(t.Context(), model.Request{Messages: []model.Message{{Role: "user", Content: "hi"}}})
		require.NoError(t, err)
		require.Equal(t, "finally", resp.Content)
		require.Len(t, srv.Requests(), 3)
		// Retry-After beats the 0.75 s jittered first backoff; the second
		// wait is the jittered backoff (2 s * 0.75).
		require.Equal(t, []time.Duration{7 * time.Second, 1500 * time.Millisecond}, sl.waits)
	})
	t.Run("Retry-After as an HTTP date", func(t *testing.T) {
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		srv := fakeopenai.New(t, fakeopenai.Status(http.StatusServiceUnavailable, fakeopenai.RetryAfterDate(now.Add(30*time.Second))),
			fakeopenai.Text("ok"))
		c, sl := newClient(t, srv, nil)
		_, err := c.Complete(t.Context(), model.Request{Messages: []model.Message{{Role: "user", Content: "hi"}}})
		require.NoError(t, err)
		require.Equal(t, []time.Duration{30 * time.Second}, sl.waits)
	})
	t.Run("bounded", func(t *testing.T) {
		srv := fakeopenai.New(t)
		srv.Fallback(fakeopenai.Status(http.StatusBadGateway, ""))
		c, sl := newClient(t, srv, func(c *model.Config) { c.MaxRetries = 3 })
		_, err := c.Complete(t.Context(), model.Request{Messages: []model.Message{{Role: "user", Content: "hi"}}})
		require.ErrorContains(t, err, "502")
		require.Len(t, srv.Requests(), 4)
		require.Len(t, sl.waits, 3)
	})
	t.Run("a Retry-After beyond the cap gives up", func(t *testing.T) {
		srv := fakeopenai.New(t, fakeopenai.Status(http.StatusTooManyRequests, "3600"))
		c, sl := newClient(t, srv, nil)
		_, err := c.Complete(t.Context(), model.Request{Messages: []model.Message{{Role: "user", Content: "hi"}}})
		require.ErrorContains(t, err, "asks to wait 1h0m0s")
		require.Empty(t, sl.waits)
	})
	t.Run("every attempt is observed, retries included", func(t *testing.T) {
		srv := fakeopenai.New(t, fakeopenai.Status(http.StatusServiceUnavailable, ""), fakeopenai.Text("ok"))
		var seen []error
		c, _ := newClient(t, srv, func(c *model.Config) {
			c.Observe = func(_ context.Context, err error) { seen = append(seen, err) }
		})
		_, err := c.Complete(t.Context(), model.Request{Messages: []model.Message{{Role: "user", Content: "hi"}}})
		require.NoError(t, err)
		require.Len(t, seen, 2)
		require.ErrorContains(t, seen[0], "503", "the first attempt's failure is told at once, before the retry")
		require.NoError(t, seen[1])
	})
	t.Run("400 is not retried", func(t *testing.T) {
		srv := fakeopenai.New(t, fakeopenai.Status(http.StatusBadRequest, ""))
		c, _ := newClient(t, srv, nil)
		_, err := c.Complete(t.Context(), model.Request{Messages: []model.Message{{Role: "user", Content: "hi"}}})
		require.ErrorContains(t, err, "400")
		require.Len(t, srv.Requests(), 1)
	})
	t.Run("a slow attempt times out and is retried", func(t *testing.T) {
		srv := fakeopenai.New(t, fakeopenai.Reply{Hang: true}, fakeopenai.Text("quick"))
		c, sl := newClient(t, srv, func(c *model.Config) { c.Timeout = 50 * time.Millisecond })
		resp, err := c.Complete(t.Context(), model.Request{Messages: []model.Message{{Role: "user", Content: "hi"}}})
		require.NoError(t, err)
		require.Equal(t, "quick", resp.Content)
		require.Len(t, sl.waits, 1)
	})
}

func TestCancellation(t *testing.T) {
	arrived := make(chan struct{})
	srv := fakeopenai.New(t, fakeopenai.Respond(func(fakeopenai.Request) fakeopenai.Reply {
		close(arrived)
		return fakeopenai.Reply{Hang: true}
	}))
	c, sl := newClient(t, srv, nil)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-arrived
		cancel()
	}()
	_, err := c.Complete(ctx, model.Request{Messages: []model.Message{{Role: "user", Content: "hi"}}})
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, sl.waits, "a cancelled request is not retried")
}

func TestExtraBodyAndOpenAIField(t *testing.T) {
	srv := fakeopenai.New(t, fakeopenai.Text("ok"))
	c, _ := newClient(t, srv, func(c *model.Config) {
		c.ExtraBody = map[string]any{"thinking": map[string]any{"type": "enabled"}}
		c.MaxTokensField = "max_completion_tokens"
		c.MaxOutputTokens = 100
	})
	_, err := c.Complete(t.Context(), model.Request{Messages: []model.Message{{Role: "user", Content: "hi"}},
		Tools: []model.Tool{{Name: "x"}}, NoToolCalls: true})
	require.NoError(t, err)
	got := srv.Last()
	require.Equal(t, map[string]any{"type": "enabled"}, got.Body["thinking"])
	require.Contains(t, got.Body, "max_completion_tokens")
	require.Equal(t, "none", got.ToolChoice)
}

func TestConfigErrors(t *testing.T) {
	_, err := model.New(model.Config{})
	require.Error(t, err)
	_, err = model.New(model.Config{Model: "m", ReasoningReplay: "sometimes"})
	require.Error(t, err)
}
