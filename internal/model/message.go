package model

import (
	"encoding/json"
	"strings"
)

// Roles of the messages in a Request. The system prompt is not a message:
// it travels in Request.System.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one provider-neutral message of a conversation.
type Message struct {
	// Role is RoleUser, RoleAssistant or RoleTool.
	Role string
	// Content is the text. For a tool message it is the tool's result.
	Content string
	// Reasoning is the reasoning text an assistant message came with. It is
	// sent back only where the client's replay setting asks for it.
	Reasoning string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID names the call a tool message answers.
	ToolCallID string
}

// ToolCall is one function call the model asked for.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text the model produced. It may be invalid JSON:
	// the model is free to write anything.
	Arguments string `json:"arguments"`
}

// Tool describes a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is a JSON schema object. Empty means no parameters.
	Parameters json.RawMessage
}

// Request is one chat completion request.
type Request struct {
	// System is the assembled system prompt.
	System   string
	Messages []Message
	Tools    []Tool
	// NoToolCalls asks the model to answer in text although tools are
	// offered (tool_choice "none"); the tools are still sent so the prompt
	// prefix, and the provider's cache of it, stay the same.
	NoToolCalls bool
}

// Response is the model's answer, provider-neutral.
type Response struct {
	Content   string
	Reasoning string
	ToolCalls []ToolCall
	// FinishReason is the provider's reason, e.g. "stop", "tool_calls", "length".
	FinishReason string
	Usage        Usage
	// Model is the model name the provider reports having used.
	Model string
	// Refusal is the model's refusal text, when it declined to answer
	// (OpenAI's message.refusal).
	Refusal string
	// NoChoices says the provider answered without any choice: there is
	// no message at all, only (perhaps) usage.
	NoChoices bool
}

// Faults of an answer that came back but gives the caller nothing it can
// act on. A caller retries them; they are not transport errors.
const (
	// FaultNoChoices: the answer holds no choice at all.
	FaultNoChoices = "no_choices"
	// FaultRefusal: the model refused (a refusal, or a content filter).
	FaultRefusal = "refusal"
	// FaultTruncated: the answer was cut at the output limit
	// (finish_reason "length"); its text or tool arguments are partial.
	FaultTruncated = "truncated"
	// FaultEmpty: neither text nor a tool call.
	FaultEmpty = "empty"
)

// Fault is the kind of fault of the answer (one of the Fault constants),
// or "" when it is usable.
func (r *Response) Fault() string {
	switch {
	case r.NoChoices:
		return FaultNoChoices
	case r.Refusal != "" || r.FinishReason == "content_filter":
		return FaultRefusal
	case r.FinishReason == "length":
		return FaultTruncated
	case strings.TrimSpace(r.Content) == "" && len(r.ToolCalls) == 0:
		return FaultEmpty
	}
	return ""
}
