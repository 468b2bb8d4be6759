package model

import (
	"encoding/json"
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
}
