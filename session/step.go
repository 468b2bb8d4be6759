package session

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/superagent-dev/superagent/internal/db"
)

// Step is one tool call of a Ticket's Sessions as people watch it: the
// panel's live Ticket page and the progress comment on GitHub.
type Step struct {
	// ID orders the steps of every Session (it only grows).
	ID        int64
	SessionID int64
	Name      string
	// Summary is the tool and a short, one-line account of its arguments
	// (StepSummary), from the stored arguments, which are scrubbed.
	Summary string
	// State is started (running, or cut off by a crash), done, failed,
	// refused or interrupted.
	State     string
	StartedAt time.Time
}

// Running reports whether the step has not finished.
func (s Step) Running() bool { return s.State == toolStarted }

// summaryKeys are the arguments that say most about a call, best first.
var summaryKeys = []string{"command", "path", "pattern", "query", "title", "message", "state", "purpose", "text", "summary", "branch"}

// maxSummary caps a step summary, in characters.
const maxSummary = 80

// StepSummary describes a tool call in one short line: its name and its
// most telling argument ("run_command: go test ./..."), or the names of
// its arguments. Pass arguments that were scrubbed (as stored); it keeps
// at most 80 characters of the value.
func StepSummary(name, arguments string) string {
	var args map[string]any
	if err := json.Unmarshal([]byte(arguments), &args); err != nil || len(args) == 0 {
		return name
	}
	for _, k := range summaryKeys {
		if v, ok := args[k].(string); ok && strings.TrimSpace(v) != "" {
			return name + ": " + clip(strings.Join(strings.Fields(v), " "), maxSummary)
		}
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return name + " (" + clip(strings.Join(keys, ", "), maxSummary) + ")"
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// TicketSteps lists the tool calls of a Ticket's Sessions whose id is
// above afterID, newest first, at most limit of them.
func (st *Store) TicketSteps(ctx context.Context, q db.Querier, ticketID, afterID int64, limit int) ([]Step, error) {
	rows, err := q.Query(ctx, `SELECT c.id, c.session_id, c.name, c.arguments, c.state, c.started_at
FROM session_tool_calls c JOIN sessions s ON s.id = c.session_id
WHERE s.ticket_id = $1 AND c.id > $2 ORDER BY c.id DESC LIMIT $3`, ticketID, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("listing the steps of ticket %d: %w", ticketID, err)
	}
	defer rows.Close()
	var out []Step
	for rows.Next() {
		var s Step
		var args string
		if err := rows.Scan(&s.ID, &s.SessionID, &s.Name, &args, &s.State, &s.StartedAt); err != nil {
			return nil, fmt.Errorf("listing the steps of ticket %d: %w", ticketID, err)
		}
		s.Summary, s.StartedAt = StepSummary(s.Name, args), s.StartedAt.UTC()
		out = append(out, s)
	}
	return out, rows.Err()
}

// TicketMessages lists the transcript messages of a Ticket's Sessions
// whose id is above afterID, newest first, at most limit of them.
func (st *Store) TicketMessages(ctx context.Context, q db.Querier, ticketID, afterID int64, limit int) ([]Message, error) {
	rows, err := q.Query(ctx, `SELECT m.id, m.session_id, m.seq, m.role, m.content, m.reasoning, m.tool_calls, m.tool_call_id, m.created_at
FROM session_messages m JOIN sessions s ON s.id = m.session_id
WHERE s.ticket_id = $1 AND m.id > $2 ORDER BY m.id DESC LIMIT $3`, ticketID, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("listing the messages of ticket %d: %w", ticketID, err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		var calls string
		if err := rows.Scan(&m.ID, &m.SessionID, &m.Seq, &m.Role, &m.Content, &m.Reasoning, &calls, &m.ToolCallID, &m.CreatedAt); err != nil {
			return nil, fmt.Errorf("listing the messages of ticket %d: %w", ticketID, err)
		}
		if calls != "" {
			if err := json.Unmarshal([]byte(calls), &m.ToolCalls); err != nil {
				return nil, fmt.Errorf("decoding tool calls of message %d: %w", m.ID, err)
			}
		}
		m.CreatedAt = m.CreatedAt.UTC()
		out = append(out, m)
	}
	return out, rows.Err()
}
