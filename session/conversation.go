package session

import (
	"github.com/superagent-dev/superagent/internal/model"
)

// conversation is a Session's transcript in the order the model must read
// it. Messages are stored in commit order, so an inbound message can land
// between an assistant's tool calls and their results; the API wants the
// results right after the calls, so such messages wait in deferred until
// the last result is in.
type conversation struct {
	msgs     []model.Message
	deferred []model.Message
	// open are the last assistant message's calls without a result, in order.
	open []model.ToolCall
	// lastSeq is the highest stored sequence number seen.
	lastSeq int64
	// lastRole is the role of the message with the highest sequence number.
	lastRole string
	// lastAssistantSeq is the sequence number of the latest assistant message.
	lastAssistantSeq int64
	// lastText is the latest assistant text.
	lastText string
	// tokensAtRequest is the size of the conversation at the last request
	// (its prompt and output tokens); chars counts what came after.
	tokensAtRequest int64
	chars           int
	// events is what happened in the conversation, in order, for the
	// loop and stall watch (watch.go).
	events []event
	// calls maps the open calls' ids to what they asked.
	calls map[string]model.ToolCall
}

func (c *conversation) add(m Message) {
	c.lastSeq = m.Seq
	c.lastRole = m.Role
	c.chars += len(m.Content) + len(m.Reasoning)
	mm := model.Message{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning, ToolCallID: m.ToolCallID}
	switch m.Role {
	case model.RoleAssistant:
		c.lastAssistantSeq = m.Seq
		c.lastText = m.Content
		mm.ToolCalls = m.ToolCalls
		if c.calls == nil {
			c.calls = map[string]model.ToolCall{}
		}
		for _, tc := range m.ToolCalls {
			c.chars += len(tc.Arguments) + len(tc.Name)
			c.calls[tc.ID] = tc
		}
		c.msgs = append(c.msgs, mm)
		c.open = append([]model.ToolCall(nil), m.ToolCalls...)
		c.events = append(c.events, event{kind: eventStep, seq: m.Seq})
	case model.RoleTool:
		c.msgs = append(c.msgs, mm)
		tc := c.calls[m.ToolCallID]
		delete(c.calls, m.ToolCallID)
		c.events = append(c.events, event{kind: eventResult, seq: m.Seq, name: tc.Name, key: callKey(tc),
			result: sameResult(m.Content), done: m.state == toolDone})
		for i, tc := range c.open {
			if tc.ID == m.ToolCallID {
				c.open = append(c.open[:i], c.open[i+1:]...)
				break
			}
		}
		if len(c.open) == 0 && len(c.deferred) > 0 {
			c.msgs = append(c.msgs, c.deferred...)
			c.deferred = nil
		}
	default:
		c.events = append(c.events, event{kind: inbound(m.Content), seq: m.Seq})
		if len(c.open) > 0 {
			c.deferred = append(c.deferred, mm)
		} else {
			c.msgs = append(c.msgs, mm)
		}
	}
}

// turnEnded reports whether the model has answered everything: the latest
// message is the model's own and it has no calls pending.
func (c *conversation) turnEnded() bool {
	return c.lastRole == model.RoleAssistant && len(c.open) == 0
}

// empty reports whether there is nothing for the model to answer.
func (c *conversation) empty() bool { return c.lastSeq == 0 }

// estimate is the conversation's size in tokens: the last request's count
// plus about four characters a token for what came after.
func (c *conversation) estimate() int64 {
	return c.tokensAtRequest + int64(c.chars/4)
}

// requested notes that a request measured the conversation at n tokens.
func (c *conversation) requested(n int64) {
	c.tokensAtRequest = n
	c.chars = 0
}

// messages is what the model reads now.
func (c *conversation) messages() []model.Message {
	return c.msgs
}
