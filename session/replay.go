package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
)

// ErrRequestNotFound is returned when a model request does not exist.
var ErrRequestNotFound = errors.New("model request not found")

// storedTool is a tool definition as session_tool_sets keeps it.
type storedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// encodeTools is the stored form of a request's tool definitions and its
// SHA-256; both are empty for a request without tools.
func encodeTools(defs []model.Tool) (string, string, error) {
	if len(defs) == 0 {
		return "", "", nil
	}
	out := make([]storedTool, len(defs))
	for i, t := range defs {
		out[i] = storedTool(t)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", "", fmt.Errorf("encoding tool definitions: %w", err)
	}
	sum := sha256.Sum256(b)
	return string(b), hex.EncodeToString(sum[:]), nil
}

// storeTools stores r's tool set unless this store already has.
func (st *Store) storeTools(ctx context.Context, q db.Querier, r *Request) error {
	if r.ToolsSHA256 == "" || r.tools == "" {
		return nil
	}
	if _, ok := st.toolSets.Load(r.ToolsSHA256); ok {
		return nil
	}
	if _, err := q.Exec(ctx, `INSERT INTO session_tool_sets (sha256, tools, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (sha256) DO NOTHING`, r.ToolsSHA256, r.tools, r.CreatedAt); err != nil {
		return fmt.Errorf("storing the tools of a model request of session %d: %w", r.SessionID, err)
	}
	// In a transaction, remembered only once it commits.
	remember := func() { st.toolSets.Store(r.ToolsSHA256, true) }
	if tx, ok := q.(*db.Tx); ok {
		tx.AfterCommit(remember)
	} else {
		remember()
	}
	return nil
}

// Request loads one model request.
func (st *Store) Request(ctx context.Context, q db.Querier, id int64) (Request, error) {
	rows, err := q.Query(ctx, `SELECT `+requestColumns+` FROM session_requests WHERE id = $1`, id)
	out, err := scanRequests(rows, err)
	if err != nil {
		return Request{}, fmt.Errorf("loading model request %d: %w", id, err)
	}
	if len(out) == 0 {
		return Request{}, fmt.Errorf("loading model request %d: %w", id, ErrRequestNotFound)
	}
	return out[0], nil
}

// RecentRequests lists the latest n model requests of the Sessions of
// role, newest first.
func (st *Store) RecentRequests(ctx context.Context, q db.Querier, role Role, n int) ([]Request, error) {
	rows, err := q.Query(ctx, `SELECT `+prefixed("r.", requestColumns)+` FROM session_requests r
		JOIN sessions s ON s.id = r.session_id WHERE s.role = $1 ORDER BY r.id DESC LIMIT $2`, string(role), n)
	out, err := scanRequests(rows, err)
	if err != nil {
		return nil, fmt.Errorf("listing the latest %s model requests: %w", role, err)
	}
	return out, nil
}

// prefixed qualifies each of a comma-separated column list.
func prefixed(p, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// Replay is a recorded model request as it was sent and answered: enough
// to send it again with another system prompt.
type Replay struct {
	Request Request
	Session *Session
	// Messages are the conversation the request sent, in order, as stored
	// (secrets scrubbed).
	Messages []model.Message
	// Tools are the tools it offered; ToolsRecorded is false for a request
	// made before they were recorded.
	Tools         []model.Tool
	ToolsRecorded bool
	// NoToolCalls says the request asked for text only (a handoff).
	NoToolCalls bool
	// Answer is the assistant message the request produced.
	Answer Message
}

// Replay reads what model request id sent and got back. It writes nothing.
func (st *Store) Replay(ctx context.Context, q db.Querier, id int64) (Replay, error) {
	req, err := st.Request(ctx, q, id)
	if err != nil {
		return Replay{}, err
	}
	s, err := st.Get(ctx, q, req.SessionID)
	if err != nil {
		return Replay{}, err
	}
	msgs, err := st.Messages(ctx, q, req.SessionID, 0)
	if err != nil {
		return Replay{}, err
	}
	out := Replay{Request: req, Session: s, NoToolCalls: req.Purpose == "handoff"}
	conv := &conversation{}
	found := false
	for _, m := range msgs {
		if m.RequestID == id && m.Role == model.RoleAssistant {
			out.Answer, found = m, true
			break
		}
		conv.add(m)
	}
	if !found {
		return Replay{}, fmt.Errorf("replaying model request %d: its answer is not stored", id)
	}
	out.Messages = conv.messages()
	if req.ToolsSHA256 != "" {
		var raw string
		err := q.QueryRow(ctx, `SELECT tools FROM session_tool_sets WHERE sha256 = $1`, req.ToolsSHA256).Scan(&raw)
		if err != nil {
			return Replay{}, fmt.Errorf("replaying model request %d: reading its tools: %w", id, err)
		}
		var tools []storedTool
		if err := json.Unmarshal([]byte(raw), &tools); err != nil {
			return Replay{}, fmt.Errorf("replaying model request %d: reading its tools: %w", id, err)
		}
		for _, t := range tools {
			out.Tools = append(out.Tools, model.Tool(t))
		}
		out.ToolsRecorded = true
	}
	return out, nil
}
