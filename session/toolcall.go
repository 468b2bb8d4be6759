package session

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
)

// Tool call states in session_tool_calls.
const (
	toolStarted     = "started"
	toolDone        = "done"
	toolFailed      = "failed"
	toolRefused     = "refused"
	toolInterrupted = "interrupted"
)

// Interrupted is the result the model reads for a call with side effects
// that a crash interrupted.
const Interrupted = "interrupted: this call was cut off before its result was recorded; " +
	"it may or may not have happened. Check before retrying."

// startedCalls returns the calls of a Session whose intent was recorded but
// whose end was not: the process died while they ran.
func (st *Store) startedCalls(ctx context.Context, q db.Querier, sessionID int64) (map[string]int, error) {
	rows, err := q.Query(ctx, `SELECT call_id, attempts FROM session_tool_calls WHERE session_id = $1 AND state = 'started'`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("loading interrupted tool calls of session %d: %w", sessionID, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var (
			id       string
			attempts int
		)
		if err := rows.Scan(&id, &attempts); err != nil {
			return nil, fmt.Errorf("loading interrupted tool calls of session %d: %w", sessionID, err)
		}
		out[id] = attempts
	}
	return out, rows.Err()
}

// recordIntent stores that a call is about to run; it must be committed
// before the tool starts.
func (st *Store) recordIntent(ctx context.Context, q db.Querier, sessionID int64, call model.ToolCall, attempt int) error {
	var err error
	if attempt == 1 {
		_, err = q.Exec(ctx, `INSERT INTO session_tool_calls (session_id, call_id, name, arguments, state, attempts, started_at)
			VALUES ($1, $2, $3, $4, 'started', 1, $5)`, sessionID, call.ID, call.Name, st.scrub.Scrub(call.Arguments), st.now().UTC())
	} else {
		_, err = q.Exec(ctx, `UPDATE session_tool_calls SET attempts = $3, started_at = $4 WHERE session_id = $1 AND call_id = $2`,
			sessionID, call.ID, attempt, st.now().UTC())
	}
	if err != nil {
		return fmt.Errorf("recording start of tool call %s (%s): %w", call.ID, call.Name, err)
	}
	return nil
}

// recordResult stores a call's end and its result message in one
// transaction. started says whether an intent row exists.
func (st *Store) recordResult(ctx context.Context, sessionID int64, call model.ToolCall, started bool, state, result string) (Message, error) {
	var stored Message
	err := st.d.InTx(ctx, func(tx *db.Tx) error {
		if err := st.relaxCommit(ctx, tx); err != nil {
			return err
		}
		now := st.now().UTC()
		var err error
		if started {
			_, err = tx.Exec(ctx, `UPDATE session_tool_calls SET state = $3, finished_at = $4 WHERE session_id = $1 AND call_id = $2`,
				sessionID, call.ID, state, now)
		} else {
			_, err = tx.Exec(ctx, `INSERT INTO session_tool_calls (session_id, call_id, name, arguments, state, attempts, started_at, finished_at)
				VALUES ($1, $2, $3, $4, $5, 0, $6, $6)`, sessionID, call.ID, call.Name, st.scrub.Scrub(call.Arguments), state, now)
		}
		if err != nil {
			return fmt.Errorf("recording end of tool call %s (%s): %w", call.ID, call.Name, err)
		}
		stored, err = st.insertMessage(ctx, tx, sessionID, Message{Role: model.RoleTool, Content: result, ToolCallID: call.ID})
		return err
	})
	stored.state = state
	return stored, err
}

// ToolCallRecord is a stored tool call, for the panel and tests.
type ToolCallRecord struct {
	CallID    string
	Name      string
	Arguments string
	State     string
	Attempts  int
}

// ToolCalls lists a Session's tool calls in the order they started.
func (st *Store) ToolCalls(ctx context.Context, q db.Querier, sessionID int64) ([]ToolCallRecord, error) {
	rows, err := q.Query(ctx, `SELECT call_id, name, arguments, state, attempts FROM session_tool_calls
		WHERE session_id = $1 ORDER BY id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("loading tool calls of session %d: %w", sessionID, err)
	}
	defer rows.Close()
	var out []ToolCallRecord
	for rows.Next() {
		var r ToolCallRecord
		if err := rows.Scan(&r.CallID, &r.Name, &r.Arguments, &r.State, &r.Attempts); err != nil {
			return nil, fmt.Errorf("loading tool calls of session %d: %w", sessionID, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// scrubMargin is kept beyond the cut when clipping a long result before
// scrubbing: more than the longest encoded secret (a base64 PEM key is
// about 2.3 KB), so a secret cut by the clip lies wholly past the final cut.
const scrubMargin = 16 << 10

// cleanResult scrubs a tool result and cuts it to at most max bytes. Only
// what can be kept is scrubbed, so a command that prints megabytes costs
// no more than one that prints max.
func cleanResult(s interface{ Scrub(string) string }, text string, max int) string {
	n := len(text)
	if n > max+scrubMargin {
		text = text[:max+scrubMargin]
	}
	// PostgreSQL's text refuses NUL, which a command's output may hold
	// (a binary file, /proc/*/environ): keep the rest of the result.
	text = strings.ReplaceAll(text, "\x00", "\uFFFD")
	return truncate(s.Scrub(text), max, n)
}

// truncate cuts text to at most max bytes on a rune boundary, saying so;
// total is the original length reported.
func truncate(text string, max, total int) string {
	if max <= 0 || len(text) <= max {
		return text
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", cut, total)
}
