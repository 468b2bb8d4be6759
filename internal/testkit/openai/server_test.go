package openai

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func post(t *testing.T, url, body string) (int, map[string]any, http.Header) {
	t.Helper()
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), string(b))
	return resp.StatusCode, out, resp.Header
}

func TestScriptAndRecording(t *testing.T) {
	s := New(t,
		Status(http.StatusTooManyRequests, "3"),
		Reply{Content: "hi", Reasoning: "r", ReasoningField: "reasoning", Usage: UsageKimi(10, 4, 2)},
		Respond(func(r Request) Reply { return Text("you said " + r.LastMessage().Content) }),
	)
	body := `{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"hello"}]},
		{"role":"assistant","content":null,"reasoning_content":"why","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"out"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
		"max_tokens":5,"thinking":{"type":"enabled"}}`
	code, out, h := post(t, s.URL(), body)
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, "3", h.Get("Retry-After"))
	require.Contains(t, out, "error")

	code, out, _ = post(t, s.URL(), body)
	require.Equal(t, http.StatusOK, code)
	msg := out["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	require.Equal(t, "hi", msg["content"])
	require.Equal(t, "r", msg["reasoning"])
	require.EqualValues(t, 4, out["usage"].(map[string]any)["cached_tokens"])

	_, out, _ = post(t, s.URL(), `{"model":"m","messages":[{"role":"user","content":"ping"}]}`)
	msg = out["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	require.Equal(t, "you said ping", msg["content"])
	require.Equal(t, 0, s.Pending())

	reqs := s.Requests()
	require.Len(t, reqs, 3)
	r := reqs[0]
	require.Equal(t, "sys", r.System())
	require.Equal(t, "hello", r.Messages[1].Content)
	require.Equal(t, "why", r.Messages[2].ReasoningContent)
	require.Equal(t, []ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}, r.Messages[2].ToolCalls)
	require.Equal(t, "c1", r.Messages[3].ToolCallID)
	require.Equal(t, []string{"f"}, r.ToolNames())
	require.EqualValues(t, 5, r.MaxTokens)
	require.Equal(t, map[string]any{"type": "enabled"}, r.Body["thinking"])
}

func TestStreamingRefused(t *testing.T) {
	s := New(t, Text("x"))
	code, _, _ := post(t, s.URL(), `{"model":"m","stream":true,"messages":[]}`)
	require.Equal(t, http.StatusBadRequest, code)
}

// TestUnusableAnswersOnTheWire checks the shapes of the answers that carry
// nothing to act on against OpenAI's chat completion object: choices is
// an empty array, or the message holds a refusal with null content, or
// finish_reason says where the answer was cut.
func TestUnusableAnswersOnTheWire(t *testing.T) {
	s := New(t, NoChoices(), Refused("no"), Truncated("half a sent"))
	const body = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	_, out, _ := post(t, s.URL(), body)
	require.Equal(t, []any{}, out["choices"])
	require.NotNil(t, out["usage"])

	_, out, _ = post(t, s.URL(), body)
	msg := out["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	require.Equal(t, "no", msg["refusal"])
	require.Contains(t, msg, "content")
	require.Nil(t, msg["content"])

	_, out, _ = post(t, s.URL(), body)
	choice := out["choices"].([]any)[0].(map[string]any)
	require.Equal(t, "length", choice["finish_reason"])
	require.Nil(t, choice["message"].(map[string]any)["refusal"], "refusal is null when the model did not refuse")
}
