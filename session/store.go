package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/secret"
)

// ErrNotFound is returned when a Session does not exist.
var ErrNotFound = errors.New("session not found")

// Store reads and writes Sessions and their transcripts. It needs no model
// and serves the panel and the report as well as the runtime. Every text it
// writes passes through the Scrubber first.
type Store struct {
	d     *db.DB
	scrub *secret.Scrubber
	now   func() time.Time
	// toolSets are the tool sets known to be stored, to skip writing them
	// again on every request.
	toolSets sync.Map
}

// NewStore returns a Store. A nil scrubber scrubs nothing; a nil now is
// time.Now.
func NewStore(d *db.DB, scrub *secret.Scrubber, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{d: d, scrub: scrub, now: now}
}

const sessionColumns = `id, role, ticket_id, state, state_reason, predecessor_id, last_seq, wrap_up_seq,
	wrap_up_reason, requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
	reasoning_tokens, cost, created_at, updated_at`

func scanSession(row db.Row) (*Session, error) {
	var (
		s           Session
		ticket, pre *int64
	)
	err := row.Scan(&s.ID, &s.Role, &ticket, &s.State, &s.StateReason, &pre, &s.lastSeq, &s.wrapUpSeq,
		&s.wrapUpReason, &s.Requests, &s.Usage.Input, &s.Usage.Output, &s.Usage.CacheRead, &s.Usage.CacheWrite,
		&s.Usage.Reasoning, &s.Usage.Cost, &s.CreatedAt, &s.UpdatedAt)
	if err != nil {
		return nil, err
	}
	if ticket != nil {
		s.TicketID = *ticket
	}
	if pre != nil {
		s.PredecessorID = *pre
	}
	return &s, nil
}

func nullable(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// Create stores a new active Session, in q (a transaction of the caller's,
// or the database). ticketID 0 means none.
func (st *Store) Create(ctx context.Context, q db.Querier, role Role, ticketID int64) (*Session, error) {
	return st.create(ctx, q, role, ticketID, 0)
}

func (st *Store) create(ctx context.Context, q db.Querier, role Role, ticketID, predecessor int64) (*Session, error) {
	if role != RoleMain && role != RoleExecutor {
		return nil, fmt.Errorf("creating session: unknown role %q", role)
	}
	now := st.now().UTC()
	s, err := scanSession(q.QueryRow(ctx, `INSERT INTO sessions (role, ticket_id, state, predecessor_id, created_at, updated_at)
		VALUES ($1, $2, 'active', $3, $4, $4) RETURNING `+sessionColumns,
		string(role), nullable(ticketID), nullable(predecessor), now))
	if err != nil {
		return nil, fmt.Errorf("creating %s session: %w", role, err)
	}
	return s, nil
}

// Get loads a Session.
func (st *Store) Get(ctx context.Context, q db.Querier, id int64) (*Session, error) {
	s, err := scanSession(q.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, id))
	if errors.Is(err, db.ErrNoRows) {
		return nil, fmt.Errorf("loading session %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("loading session %d: %w", id, err)
	}
	return s, nil
}

// Latest follows a Session's rollovers and returns the Session that holds
// its conversation now.
func (st *Store) Latest(ctx context.Context, q db.Querier, id int64) (*Session, error) {
	for {
		s, err := st.Get(ctx, q, id)
		if err != nil || s.State != StateRolledOver {
			return s, err
		}
		if err := q.QueryRow(ctx, `SELECT id FROM sessions WHERE predecessor_id = $1`, id).Scan(&id); err != nil {
			return nil, fmt.Errorf("finding successor of rolled-over session %d: %w", s.ID, err)
		}
	}
}

// ForTicket lists a Ticket's Sessions, oldest first.
func (st *Store) ForTicket(ctx context.Context, q db.Querier, ticketID int64) ([]*Session, error) {
	rows, err := q.Query(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE ticket_id = $1 ORDER BY id`, ticketID)
	if err != nil {
		return nil, fmt.Errorf("listing sessions of ticket %d: %w", ticketID, err)
	}
	defer rows.Close()
	var out []*Session
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("listing sessions of ticket %d: %w", ticketID, err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Append adds an inbound user message (a Trigger card, a notice) to a
// Session; the runtime picks it up at its next step. A rolled-over
// Session's message goes to its successor, and a done Session becomes
// active again. It returns the Session that received the message.
func (st *Store) Append(ctx context.Context, q db.Querier, sessionID int64, text string) (int64, error) {
	id := sessionID
	for {
		var (
			seq   int64
			state State
		)
		err := q.QueryRow(ctx, `UPDATE sessions SET last_seq = last_seq + 1, updated_at = $2,
			state = CASE WHEN state = 'done' THEN 'active' ELSE state END,
			state_reason = CASE WHEN state = 'done' THEN '' ELSE state_reason END
			WHERE id = $1 RETURNING last_seq, state`, id, st.now().UTC()).Scan(&seq, &state)
		if errors.Is(err, db.ErrNoRows) {
			return 0, fmt.Errorf("appending to session %d: %w", id, ErrNotFound)
		}
		if err != nil {
			return 0, fmt.Errorf("appending to session %d: %w", id, err)
		}
		if state == StateRolledOver {
			if err := q.QueryRow(ctx, `SELECT id FROM sessions WHERE predecessor_id = $1`, id).Scan(&id); err != nil {
				return 0, fmt.Errorf("appending: finding successor of session %d: %w", id, err)
			}
			continue
		}
		_, err = st.insertMessageAt(ctx, q, id, seq, Message{Role: model.RoleUser, Content: text})
		return id, err
	}
}

// setState records a Session's state and why.
func (st *Store) setState(ctx context.Context, q db.Querier, id int64, state State, reason string) error {
	_, err := q.Exec(ctx, `UPDATE sessions SET state = $2, state_reason = $3, updated_at = $4 WHERE id = $1`,
		id, string(state), reason, st.now().UTC())
	if err != nil {
		return fmt.Errorf("marking session %d %s: %w", id, state, err)
	}
	return nil
}

// Stop marks a Session stopped (a person's stop, outside a running loop).
func (st *Store) Stop(ctx context.Context, q db.Querier, id int64, reason string) error {
	return st.setState(ctx, q, id, StateStopped, reason)
}

// Fail marks a Session failed, for a caller that gives up on it.
func (st *Store) Fail(ctx context.Context, q db.Querier, id int64, reason string) error {
	return st.setState(ctx, q, id, StateFailed, st.scrub.Scrub(reason))
}

// Reopen makes a done or stopped Session active again, clearing a pending
// wrap-up, so that the next Run continues it.
func (st *Store) Reopen(ctx context.Context, q db.Querier, id int64) error {
	n, err := q.Exec(ctx, `UPDATE sessions SET state = 'active', state_reason = '', wrap_up_reason = '',
		updated_at = $2 WHERE id = $1 AND state IN ('done', 'stopped', 'active')`, id, st.now().UTC())
	if err != nil {
		return fmt.Errorf("reopening session %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("reopening session %d: it does not exist, rolled over or failed", id)
	}
	return nil
}

// nextSeq allocates a message sequence number. The row lock it takes
// serialises writers, so sequence order is commit order.
func (st *Store) nextSeq(ctx context.Context, q db.Querier, id int64) (int64, error) {
	var seq int64
	err := q.QueryRow(ctx, `UPDATE sessions SET last_seq = last_seq + 1, updated_at = $2 WHERE id = $1 RETURNING last_seq`,
		id, st.now().UTC()).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("allocating message number in session %d: %w", id, err)
	}
	return seq, nil
}

func (st *Store) insertMessage(ctx context.Context, q db.Querier, id int64, m Message) (Message, error) {
	seq, err := st.nextSeq(ctx, q, id)
	if err != nil {
		return m, err
	}
	return st.insertMessageAt(ctx, q, id, seq, m)
}

// insertMessageAt stores m, scrubbed, at seq and returns it as stored.
func (st *Store) insertMessageAt(ctx context.Context, q db.Querier, id, seq int64, m Message) (Message, error) {
	m.SessionID, m.Seq, m.CreatedAt = id, seq, st.now().UTC()
	m.Content = st.scrub.Scrub(m.Content)
	m.Reasoning = st.scrub.Scrub(m.Reasoning)
	calls := ""
	if len(m.ToolCalls) > 0 {
		for i := range m.ToolCalls {
			m.ToolCalls[i].Arguments = st.scrub.Scrub(m.ToolCalls[i].Arguments)
		}
		b, err := json.Marshal(m.ToolCalls)
		if err != nil {
			return m, fmt.Errorf("encoding tool calls: %w", err)
		}
		calls = string(b)
	}
	err := q.QueryRow(ctx, `INSERT INTO session_messages
		(session_id, seq, role, content, reasoning, tool_calls, tool_call_id, request_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
		id, seq, m.Role, m.Content, m.Reasoning, calls, m.ToolCallID, nullable(m.RequestID), m.CreatedAt).Scan(&m.ID)
	if err != nil {
		return m, fmt.Errorf("storing %s message in session %d: %w", m.Role, id, err)
	}
	return m, nil
}

// Messages returns a Session's transcript from after seq (0: all), in order.
func (st *Store) Messages(ctx context.Context, q db.Querier, sessionID, afterSeq int64) ([]Message, error) {
	rows, err := q.Query(ctx, `SELECT id, seq, role, content, reasoning, tool_calls, tool_call_id, request_id, created_at
		FROM session_messages WHERE session_id = $1 AND seq > $2 ORDER BY seq`, sessionID, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("loading messages of session %d: %w", sessionID, err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m := Message{SessionID: sessionID}
		var (
			calls string
			req   *int64
		)
		if err := rows.Scan(&m.ID, &m.Seq, &m.Role, &m.Content, &m.Reasoning, &calls, &m.ToolCallID, &req, &m.CreatedAt); err != nil {
			return nil, fmt.Errorf("loading messages of session %d: %w", sessionID, err)
		}
		if req != nil {
			m.RequestID = *req
		}
		if calls != "" {
			if err := json.Unmarshal([]byte(calls), &m.ToolCalls); err != nil {
				return nil, fmt.Errorf("decoding tool calls of message %d: %w", m.ID, err)
			}
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// recordRequest stores a model request, adds its usage to the Session's
// totals and, when answer is not nil, stores the answer as the next
// message, in q.
func (st *Store) recordRequest(ctx context.Context, q db.Querier, r *Request, answer *Message) error {
	u := r.Usage
	if err := st.storeTools(ctx, q, r); err != nil {
		return err
	}
	err := q.QueryRow(ctx, `INSERT INTO session_requests (session_id, prompt_revision, prompt_sha256, model,
		response_model, purpose, finish_reason, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
		reasoning_tokens, cost, latency_ms, created_at, assembled_sha256, tools_sha256)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) RETURNING id`,
		r.SessionID, r.PromptRevision, r.PromptSHA256, r.Model, r.ResponseModel, r.Purpose, r.FinishReason,
		u.Input, u.Output, u.CacheRead, u.CacheWrite, u.Reasoning, u.Cost, r.Latency.Milliseconds(), r.CreatedAt,
		r.AssembledSHA256, r.ToolsSHA256).Scan(&r.ID)
	if err != nil {
		return fmt.Errorf("recording model request of session %d: %w", r.SessionID, err)
	}
	// One statement adds the usage and allocates the answer's number.
	var seq int64
	err = q.QueryRow(ctx, `UPDATE sessions SET requests = requests + 1, input_tokens = input_tokens + $2,
		output_tokens = output_tokens + $3, cache_read_tokens = cache_read_tokens + $4,
		cache_write_tokens = cache_write_tokens + $5, reasoning_tokens = reasoning_tokens + $6, cost = cost + $7,
		last_seq = last_seq + $8, updated_at = $9
		WHERE id = $1 RETURNING last_seq`, r.SessionID, u.Input, u.Output, u.CacheRead, u.CacheWrite, u.Reasoning, u.Cost,
		btoi(answer != nil), r.CreatedAt).Scan(&seq)
	if err != nil {
		return fmt.Errorf("adding usage to session %d: %w", r.SessionID, err)
	}
	if answer == nil {
		return nil
	}
	answer.RequestID = r.ID
	*answer, err = st.insertMessageAt(ctx, q, r.SessionID, seq, *answer)
	return err
}

func btoi(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// relaxCommit lets a PostgreSQL transaction commit without waiting for its
// WAL flush. Only records whose loss in a database crash is safe use it: a
// model request and its answer (the model is asked again) and a tool result
// (the durable intent then reports the call interrupted). A later
// synchronous commit flushes them anyway. SQLite in WAL mode with
// synchronous=NORMAL already behaves so.
func (st *Store) relaxCommit(ctx context.Context, tx *db.Tx) error {
	if st.d.Dialect() != db.Postgres {
		return nil
	}
	if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit TO OFF`); err != nil {
		return fmt.Errorf("relaxing commit: %w", err)
	}
	return nil
}

// Requests lists a Session's model requests, in order.
func (st *Store) Requests(ctx context.Context, q db.Querier, sessionID int64) ([]Request, error) {
	rows, err := q.Query(ctx, `SELECT `+requestColumns+` FROM session_requests WHERE session_id = $1 ORDER BY id`, sessionID)
	out, err := scanRequests(rows, err)
	if err != nil {
		return nil, fmt.Errorf("loading model requests of session %d: %w", sessionID, err)
	}
	return out, nil
}

const requestColumns = `id, session_id, prompt_revision, prompt_sha256, model, response_model, purpose, finish_reason,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost, latency_ms, created_at,
	assembled_sha256, tools_sha256`

func scanRequests(rows db.Rows, err error) ([]Request, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Request
	for rows.Next() {
		var (
			r  Request
			ms int64
		)
		if err := rows.Scan(&r.ID, &r.SessionID, &r.PromptRevision, &r.PromptSHA256, &r.Model, &r.ResponseModel, &r.Purpose,
			&r.FinishReason, &r.Usage.Input, &r.Usage.Output, &r.Usage.CacheRead, &r.Usage.CacheWrite,
			&r.Usage.Reasoning, &r.Usage.Cost, &ms, &r.CreatedAt, &r.AssembledSHA256, &r.ToolsSHA256); err != nil {
			return nil, err
		}
		r.Latency = time.Duration(ms) * time.Millisecond
		out = append(out, r)
	}
	return out, rows.Err()
}

// lastRequestTokens is the prompt plus output of the Session's latest
// request, the best measure of the conversation's size at that point.
func (st *Store) lastRequestTokens(ctx context.Context, q db.Querier, sessionID int64) (int64, error) {
	var n int64
	err := q.QueryRow(ctx, `SELECT input_tokens + cache_read_tokens + cache_write_tokens + output_tokens
		FROM session_requests WHERE session_id = $1 ORDER BY id DESC LIMIT 1`, sessionID).Scan(&n)
	if errors.Is(err, db.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("loading last request of session %d: %w", sessionID, err)
	}
	return n, nil
}

const totalsSelect = `SELECT COUNT(*), CAST(COALESCE(SUM(requests), 0) AS BIGINT),
	CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT), CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT),
	CAST(COALESCE(SUM(cache_read_tokens), 0) AS BIGINT), CAST(COALESCE(SUM(cache_write_tokens), 0) AS BIGINT),
	CAST(COALESCE(SUM(reasoning_tokens), 0) AS BIGINT), COALESCE(SUM(cost), 0) FROM sessions `

func scanTotals(row db.Row) (Totals, error) {
	var t Totals
	err := row.Scan(&t.Sessions, &t.Requests, &t.Usage.Input, &t.Usage.Output, &t.Usage.CacheRead,
		&t.Usage.CacheWrite, &t.Usage.Reasoning, &t.Usage.Cost)
	return t, err
}

// UsedRevision reports whether any model request of a Ticket's Sessions
// was made under prompt revision rev.
func (st *Store) UsedRevision(ctx context.Context, q db.Querier, ticketID, rev int64) (bool, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM session_requests r JOIN sessions s ON s.id = r.session_id
WHERE s.ticket_id = $1 AND r.prompt_revision = $2`, ticketID, rev).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("checking the revisions of ticket %d: %w", ticketID, err)
	}
	return n > 0, nil
}

// TicketTotals sums the usage of every Session of a Ticket.
func (st *Store) TicketTotals(ctx context.Context, q db.Querier, ticketID int64) (Totals, error) {
	t, err := scanTotals(q.QueryRow(ctx, totalsSelect+`WHERE ticket_id = $1`, ticketID))
	if err != nil {
		return t, fmt.Errorf("summing usage of ticket %d: %w", ticketID, err)
	}
	return t, nil
}

// SessionTotals is one Session's usage as Totals.
func (st *Store) SessionTotals(ctx context.Context, q db.Querier, sessionID int64) (Totals, error) {
	t, err := scanTotals(q.QueryRow(ctx, totalsSelect+`WHERE id = $1`, sessionID))
	if err != nil {
		return t, fmt.Errorf("summing usage of session %d: %w", sessionID, err)
	}
	return t, nil
}
