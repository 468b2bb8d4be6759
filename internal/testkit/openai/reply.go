package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Reply is one scripted answer.
type Reply struct {
	// Status is the HTTP status. Default 200. Any other status answers with
	// an OpenAI-style error body (or Body).
	Status int
	// Header is set on the response, e.g. {"Retry-After": "2"}.
	Header map[string]string
	// Body, when set, is sent verbatim instead of a completion.
	Body string

	// Content is the assistant's text.
	Content string
	// Reasoning is sent in ReasoningField ("reasoning_content" by default;
	// "reasoning" is the Ollama/llama.cpp spelling).
	Reasoning      string
	ReasoningField string
	// ToolCalls are the calls the assistant makes; an empty ID is filled in.
	ToolCalls []ToolCall
	// FinishReason defaults to "tool_calls" with calls, else "stop";
	// "length" is an answer cut at the output limit, "content_filter" one
	// a filter stopped.
	FinishReason string
	// Refusal is sent in the message's refusal field (content null), as
	// OpenAI does when the model declines.
	Refusal string
	// NoChoices answers with an empty choices array (and the usage), as
	// some providers and gateways do for a generation they dropped.
	NoChoices bool
	// Usage is the raw usage object. Default: UsageOpenAI(100, 0, 10).
	Usage map[string]any
	// Model is the reported model. Default: the requested one.
	Model string

	// Delay holds the answer back (returning early if the client goes away).
	Delay time.Duration
	// Hang never answers: the handler returns when the client gives up.
	Hang bool

	// Func computes the reply from the request when set; the returned
	// reply's own Func is ignored.
	Func func(Request) Reply
}

// ToolCall is a function call in a reply or a recorded request.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Text is a plain answer that ends the turn.
func Text(content string) Reply { return Reply{Content: content} }

// Calls is an answer that calls tools.
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Call builds a tool call; args is JSON text.
func Call(id, name, args string) ToolCall { return ToolCall{ID: id, Name: name, Arguments: args} }

// Status is an error answer; retryAfter, when not empty, is sent as the
// Retry-After header (seconds or an HTTP date).
func Status(code int, retryAfter string) Reply {
	r := Reply{Status: code}
	if retryAfter != "" {
		r.Header = map[string]string{"Retry-After": retryAfter}
	}
	return r
}

// Empty is an answer with neither text nor a tool call.
func Empty() Reply { return Reply{} }

// NoChoices is an answer without any choice.
func NoChoices() Reply { return Reply{NoChoices: true} }

// Truncated is text cut at the output limit (finish_reason "length").
func Truncated(partial string) Reply { return Reply{Content: partial, FinishReason: "length"} }

// Refused is the model declining, in the refusal field.
func Refused(why string) Reply { return Reply{Refusal: why} }

// Respond computes the reply from the request.
func Respond(fn func(Request) Reply) Reply { return Reply{Func: fn} }

// UsageOpenAI is OpenAI's (and Qwen's, vLLM's) usage shape: prompt_tokens
// includes cached tokens, reported in prompt_tokens_details.
func UsageOpenAI(prompt, cached, completion int64) map[string]any {
	return map[string]any{
		"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
		"prompt_tokens_details": map[string]any{"cached_tokens": cached},
	}
}

// UsageDeepSeek is DeepSeek's shape: hit and miss counts beside prompt_tokens.
func UsageDeepSeek(hit, miss, completion, reasoning int64) map[string]any {
	return map[string]any{
		"prompt_tokens": hit + miss, "completion_tokens": completion, "total_tokens": hit + miss + completion,
		"prompt_cache_hit_tokens": hit, "prompt_cache_miss_tokens": miss,
		"completion_tokens_details": map[string]any{"reasoning_tokens": reasoning},
	}
}

// UsageKimi is Moonshot's shape: cached_tokens at the top level.
func UsageKimi(prompt, cached, completion int64) map[string]any {
	return map[string]any{
		"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
		"cached_tokens": cached,
	}
}

// UsageAnthropic is the shape of Anthropic-compatible gateways: input_tokens
// excludes cache reads and writes.
func UsageAnthropic(input, read, write, output int64) map[string]any {
	return map[string]any{
		"input_tokens": input, "output_tokens": output,
		"cache_read_input_tokens": read, "cache_creation_input_tokens": write,
	}
}

// UsageQwen is DashScope's OpenAI-compatible shape with explicit caching.
func UsageQwen(prompt, cached, created, completion int64) map[string]any {
	return map[string]any{
		"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
		"prompt_tokens_details": map[string]any{"cached_tokens": cached, "cache_creation_input_tokens": created},
	}
}

// Request is a recorded request, decoded.
type Request struct {
	Model     string
	Messages  []Message
	Tools     []Tool
	MaxTokens int64
	// ToolChoice is the decoded tool_choice, nil when absent.
	ToolChoice any
	Stream     bool
	// Body is the whole decoded body, extra fields included.
	Body   map[string]any
	Header http.Header
}

// Message is a recorded message.
type Message struct {
	Role    string
	Content string
	// ReasoningContent and Reasoning are the replayed reasoning fields.
	ReasoningContent string
	Reasoning        string
	ToolCalls        []ToolCall
	ToolCallID       string
	// Raw is the whole decoded message, extra fields included.
	Raw map[string]any
}

// Tool is a recorded tool definition.
type Tool struct {
	Name        string
	Description string
	Parameters  map[string]any
}

// System returns the system (or developer) message's text.
func (r Request) System() string {
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			return m.Content
		}
	}
	return ""
}

// LastMessage returns the last message, or a zero Message.
func (r Request) LastMessage() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// Text joins every message's content, for "does it contain" assertions.
func (r Request) Text() string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Content)
		b.WriteByte('\n')
		for _, c := range m.ToolCalls {
			b.WriteString(c.Arguments)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// ToolNames lists the offered tools' names.
func (r Request) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Name
	}
	return names
}

type wireRequest struct {
	Model    string            `json:"model"`
	Messages []json.RawMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	MaxTokens           *int64 `json:"max_tokens"`
	MaxCompletionTokens *int64 `json:"max_completion_tokens"`
	ToolChoice          any    `json:"tool_choice"`
	Stream              bool   `json:"stream"`
}

type wireMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        string          `json:"reasoning"`
	ToolCallID       string          `json:"tool_call_id"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func decodeRequest(body []byte, h http.Header) (Request, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return Request{}, fmt.Errorf("decoding request: %w", err)
	}
	req := Request{Model: w.Model, ToolChoice: w.ToolChoice, Stream: w.Stream, Header: h.Clone()}
	if err := json.Unmarshal(body, &req.Body); err != nil {
		return Request{}, fmt.Errorf("decoding request: %w", err)
	}
	switch {
	case w.MaxCompletionTokens != nil:
		req.MaxTokens = *w.MaxCompletionTokens
	case w.MaxTokens != nil:
		req.MaxTokens = *w.MaxTokens
	}
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	for i, raw := range w.Messages {
		var m wireMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return Request{}, fmt.Errorf("decoding message %d: %w", i, err)
		}
		msg := Message{Role: m.Role, Content: contentText(m.Content), ReasoningContent: m.ReasoningContent,
			Reasoning: m.Reasoning, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		_ = json.Unmarshal(raw, &msg.Raw)
		req.Messages = append(req.Messages, msg)
	}
	return req, nil
}

// contentText flattens a string or an array of text parts.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

// RetryAfterDate formats t for a Retry-After header.
func RetryAfterDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// RetryAfterSeconds formats d for a Retry-After header.
func RetryAfterSeconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }
