package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/retry"
	"github.com/superagent-dev/superagent/internal/secret"
)

// Config tunes the runtime. The zero value of each field is its documented
// default.
type Config struct {
	// MaxSteps caps a Session's model requests. Default: 200.
	MaxSteps int64
	// MaxWallTime caps one Run. Default: 2 hours.
	MaxWallTime time.Duration
	// TokenBudget caps the tokens (input, cache reads and writes, output)
	// of a Ticket's Sessions together, or of a Session without a Ticket.
	// Default: 0, no cap.
	TokenBudget int64
	// CostBudget caps their cost, in the model prices' currency. Default: 0,
	// no cap.
	CostBudget float64
	// Budget, when set, gives a Ticket's own caps in place of TokenBudget
	// and CostBudget (0 in a field: no cap), so that a person can raise
	// one Ticket's. Default: nil, the same caps for every Ticket.
	Budget func(ctx context.Context, q db.Querier, ticketID int64) (tokens int64, cost float64, err error)
	// ContextWindow is the model's context size in tokens. Default: the
	// model client's.
	ContextWindow int64
	// RolloverAt is the fraction of the context window past which the
	// conversation is handed off to a new Session. Default: 0.8.
	RolloverAt float64
	// WrapUpMessage is sent when a limit is reached, before one last request.
	// %s is the limit. Default: a request to stop, report and end.
	WrapUpMessage string
	// HandoffMessage asks for the handoff when no RunOptions.Handoff is
	// given. Default: a request to write the handoff its instructions
	// describe.
	HandoffMessage string
	// MaxToolResultBytes caps a tool result the model reads. Default: 64
	// KiB, and never more bytes than the context window has tokens (about
	// a quarter of it), so one result cannot fill the context.
	MaxToolResultBytes int
	// RepeatLimit is how many times in a row the same call (tool and
	// arguments) may come back with the same result, timings aside,
	// before the host notes it to the model; at twice as many the Session
	// wraps up and stops with ReasonRepeatedCall. Default: 0, not watched.
	RepeatLimit int
	// StallSteps is how many model requests in a row may pass without
	// progress (a message from outside, or the first successful call of
	// its kind by a Progress tool) before the host notes it; at twice as
	// many the Session wraps up and stops with ReasonNoProgress. Default:
	// 0, not watched.
	StallSteps int
	// FaultRetries is how many times an unusable answer (model.Fault: no
	// choices, a refusal, cut at the output limit, empty) is asked for
	// again in place before the Run gives up with a *FaultError. Default:
	// 3.
	FaultRetries int
	// FaultBackoff is the wait before asking again; it doubles each time,
	// up to 30 s. Default: 2 s.
	FaultBackoff time.Duration
	// Sleep waits, returning early with ctx's error. Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// RelaxedIntent lets a tool call's intent commit on PostgreSQL without
	// waiting for the WAL flush (one fsync, several milliseconds, per call).
	// A dying process still never repeats a side effect: PostgreSQL flushes
	// the intent within its wal_writer_delay. Only a crash of the database
	// server in that window could lose it. Default: false, wait for the
	// flush. SQLite is unaffected (WAL with synchronous=NORMAL).
	RelaxedIntent bool
	// Metrics, when set, count each request's tokens, cost and latency.
	Metrics *Metrics
	// Repository names the repository of a Ticket for the metrics' label;
	// nil or "" leaves it empty.
	Repository func(ctx context.Context, ticketID int64) string
}

const (
	defaultWrapUp = "The %s limit of this session has been reached. Do not start anything new: " +
		"finish by reporting where the work stands (what is done, what is not, what a person must do) " +
		"and end your turn. You will get no further turns in this session."
	defaultHandoff = "The conversation is close to the context limit and will continue in a fresh session " +
		"that sees only your handoff. Write the handoff now, as your handoff instructions describe: the goal, " +
		"what is done, what is in progress, decisions and their reasons, open questions, and the next steps. " +
		"Answer in text only."
	handoffPrefix = "Handoff from the previous session of this conversation:\n\n"
)

// Runtime runs Sessions.
type Runtime struct {
	cfg     Config
	d       *db.DB
	store   *Store
	model   Model
	prompts PromptSource
	scrub   *secret.Scrubber
	now     func() time.Time
}

// New returns a runtime over d. now is the clock (nil: time.Now); scrub may
// be nil only in tests that hold no secrets.
func New(cfg Config, d *db.DB, m Model, prompts PromptSource, scrub *secret.Scrubber, now func() time.Time) *Runtime {
	if now == nil {
		now = time.Now
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 200
	}
	if cfg.MaxWallTime <= 0 {
		cfg.MaxWallTime = 2 * time.Hour
	}
	if cfg.ContextWindow <= 0 {
		cfg.ContextWindow = m.ContextWindow()
	}
	if cfg.RolloverAt <= 0 || cfg.RolloverAt > 1 {
		cfg.RolloverAt = 0.8
	}
	if cfg.WrapUpMessage == "" {
		cfg.WrapUpMessage = defaultWrapUp
	}
	if cfg.HandoffMessage == "" {
		cfg.HandoffMessage = defaultHandoff
	}
	if cfg.MaxToolResultBytes <= 0 {
		cfg.MaxToolResultBytes = 64 << 10
	}
	cfg.MaxToolResultBytes = int(min(int64(cfg.MaxToolResultBytes), max(cfg.ContextWindow, 1024)))
	if cfg.FaultRetries <= 0 {
		cfg.FaultRetries = 3
	}
	if cfg.FaultBackoff <= 0 {
		cfg.FaultBackoff = 2 * time.Second
	}
	if cfg.Sleep == nil {
		cfg.Sleep = retry.Sleep
	}
	return &Runtime{cfg: cfg, d: d, store: NewStore(d, scrub, now), model: m, prompts: prompts, scrub: scrub, now: now}
}

// Store is the runtime's store, for creating Sessions, appending messages
// and reading transcripts and totals.
func (r *Runtime) Store() *Store { return r.store }

// Create stores a new Session (see Store.Create).
func (r *Runtime) Create(ctx context.Context, q db.Querier, role Role, ticketID int64) (*Session, error) {
	return r.store.Create(ctx, q, role, ticketID)
}

// Append adds an inbound message (see Store.Append).
func (r *Runtime) Append(ctx context.Context, q db.Querier, sessionID int64, text string) (int64, error) {
	return r.store.Append(ctx, q, sessionID, text)
}

// RunOptions are the caller's hooks for one Run.
type RunOptions struct {
	// StopCheck is consulted at every step boundary; stop=true ends the
	// Session as stopped with reason (a person paused or stopped the work).
	StopCheck func(ctx context.Context) (stop bool, reason string)
	// BeforeStep runs at every step boundary, after the last step's tool
	// calls are answered and before the conversation is read again: a
	// caller appends what arrived meanwhile (an Executor's follow-ups), so
	// the model sees it at its next step. An error ends the Run.
	BeforeStep func(ctx context.Context, sessionID int64) error
	// Handoff returns the request for a handoff at rollover (for example
	// the role's handoff part). Default: Config.HandoffMessage.
	Handoff func(ctx context.Context, s *Session) (string, error)
	// HandoffFacts returns what the caller knows for certain about the
	// work (the original request, the facts of the Ticket, open
	// questions, the last steps): at rollover it goes into the
	// successor's first message beside the model's handoff, so a sloppy
	// or empty handoff loses none of it. Default: none.
	HandoffFacts func(ctx context.Context, s *Session) (string, error)
	// Unfinished is asked when the model ends its turn: it says what the
	// turn left undone, in words for the model, or "" when nothing. The
	// first time in a turn the host reminds the model of it (NudgePrefix)
	// and the Session goes on; if the turn ends again with work undone,
	// the Session stops with ReasonUnfinished. An empty answer is asked
	// for again in place while something is undone. Default: nothing is
	// ever undone.
	Unfinished func(ctx context.Context, s *Session) (string, error)
}

// Outcome is how a Run ended.
type Outcome struct {
	// SessionID is the Session the conversation is in now: a successor when
	// it rolled over.
	SessionID int64
	State     State
	// Reason is one of the Reason constants or a StopCheck's reason.
	Reason string
	// Steps counts the model requests this Run made.
	Steps int
	// Final is the latest assistant text.
	Final string
	// RolledOver lists the Sessions this Run rolled over, in order.
	RolledOver []int64
}

// Run continues a Session until the model ends its turn, a limit or a stop
// ends it, or ctx is cancelled. It picks up where the stored conversation
// left off, so calling it again after a crash resumes the work; a rolled
// over Session's id leads to its successor. On cancellation it returns
// ctx's error and leaves the Session active for the next Run.
func (r *Runtime) Run(ctx context.Context, sessionID int64, tools *Registry, opts RunOptions) (Outcome, error) {
	started := r.now()
	out := Outcome{SessionID: sessionID}
	s, conv, err := r.load(ctx, sessionID)
	if err != nil {
		return out, err
	}
	resuming := true
	for {
		out.SessionID = s.ID
		out.Final = conv.lastText
		if s.State != StateActive {
			out.State, out.Reason = s.State, s.StateReason
			return out, nil
		}
		if err := r.answerCalls(ctx, s, conv, tools, resuming); err != nil {
			return r.interrupted(out, err)
		}
		resuming = false
		if opts.BeforeStep != nil {
			if err := opts.BeforeStep(ctx, s.ID); err != nil {
				return r.interrupted(out, err)
			}
		}
		if err := r.refresh(ctx, s, conv); err != nil {
			return out, err
		}
		out.Final = conv.lastText
		switch {
		case s.wrapUpReason != "" && conv.lastAssistantSeq > s.wrapUpSeq && len(conv.open) == 0:
			return r.finish(ctx, out, s, StateStopped, s.wrapUpReason)
		case conv.empty():
			return r.finish(ctx, out, s, StateDone, ReasonNoInput)
		case conv.turnEnded():
			undone, err := r.undone(ctx, s, opts)
			if err != nil {
				return r.interrupted(out, err)
			}
			if undone == "" {
				return r.finish(ctx, out, s, StateDone, ReasonEndTurn)
			}
			if nudged(conv.events) {
				r.count(nudgesOf, s, "stopped")
				return r.finish(ctx, out, s, StateStopped, ReasonUnfinished)
			}
			if err := r.note(ctx, s, conv, NudgePrefix+undone); err != nil {
				return r.interrupted(out, err)
			}
			r.count(nudgesOf, s, "reminded")
			continue
		}
		if err := ctx.Err(); err != nil {
			return r.interrupted(out, err)
		}
		if opts.StopCheck != nil {
			if stop, reason := opts.StopCheck(ctx); stop {
				return r.finish(ctx, out, s, StateStopped, reason)
			}
		}
		purpose := "step"
		var found watchFinding
		if s.wrapUpReason == "" {
			found = r.watch(conv, tools)
		}
		if found.note != "" {
			if err := r.note(ctx, s, conv, found.note); err != nil {
				return r.interrupted(out, err)
			}
			r.count(loopsOf, s, found.kind, "noted")
		}
		if s.wrapUpReason != "" {
			purpose = "wrap_up"
		} else if found.wrapUp != "" {
			if err := r.startWrapUp(ctx, s, conv, found.wrapUp); err != nil {
				return out, err
			}
			r.count(loopsOf, s, found.kind, "stopped")
			purpose = "wrap_up"
		} else if reason, err := r.limit(ctx, s, started); err != nil {
			return out, err
		} else if reason != "" {
			if err := r.startWrapUp(ctx, s, conv, reason); err != nil {
				return out, err
			}
			purpose = "wrap_up"
		} else if s.Requests > 0 && conv.estimate() > int64(r.cfg.RolloverAt*float64(r.cfg.ContextWindow)) {
			next, err := r.rollover(ctx, s, conv, tools, opts)
			if err != nil {
				return r.interrupted(out, err)
			}
			out.Steps++
			out.RolledOver = append(out.RolledOver, s.ID)
			if s, conv, err = r.load(ctx, next); err != nil {
				return out, err
			}
			continue
		}
		if err := r.step(ctx, s, conv, tools, purpose, opts); err != nil {
			return r.interrupted(out, err)
		}
		out.Steps++
	}
}

// interrupted reports a Run cut short: by cancellation (the Session stays
// active and resumable) or by an error.
func (r *Runtime) interrupted(out Outcome, err error) (Outcome, error) {
	out.State = StateActive
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		out.Reason = ReasonCancelled
	}
	return out, err
}

func (r *Runtime) finish(ctx context.Context, out Outcome, s *Session, state State, reason string) (Outcome, error) {
	if err := r.store.setState(ctx, r.d, s.ID, state, reason); err != nil {
		return out, err
	}
	s.State, s.StateReason = state, reason
	out.State, out.Reason = state, reason
	return out, nil
}

// load reads the Session that holds sessionID's conversation now and its
// transcript.
func (r *Runtime) load(ctx context.Context, sessionID int64) (*Session, *conversation, error) {
	s, err := r.store.Latest(ctx, r.d, sessionID)
	if err != nil {
		return nil, nil, err
	}
	msgs, err := r.store.Messages(ctx, r.d, s.ID, 0)
	if err != nil {
		return nil, nil, err
	}
	states, err := r.store.callStates(ctx, r.d, s.ID)
	if err != nil {
		return nil, nil, err
	}
	conv := &conversation{}
	for _, m := range msgs {
		if m.Role == model.RoleTool {
			m.state = states[m.ToolCallID]
		}
		conv.add(m)
	}
	tokens, err := r.store.lastRequestTokens(ctx, r.d, s.ID)
	if err != nil {
		return nil, nil, err
	}
	if tokens > 0 {
		conv.requested(tokens)
		for _, m := range msgs {
			if m.Seq > conv.lastAssistantSeq {
				conv.chars += len(m.Content)
			}
		}
	}
	return s, conv, nil
}

// refresh reads the messages stored since the conversation was last read:
// inbound messages appended by other callers.
func (r *Runtime) refresh(ctx context.Context, s *Session, conv *conversation) error {
	msgs, err := r.store.Messages(ctx, r.d, s.ID, conv.lastSeq)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		conv.add(m)
	}
	return nil
}

// adopt adds a message this runtime just stored. When another writer took
// a sequence number in between, the gap is read from the database first.
func (r *Runtime) adopt(ctx context.Context, s *Session, conv *conversation, m Message) error {
	if m.Seq == conv.lastSeq+1 {
		conv.add(m)
		return nil
	}
	return r.refresh(ctx, s, conv)
}

// limit returns the limit the Session has reached, if any.
func (r *Runtime) limit(ctx context.Context, s *Session, started time.Time) (string, error) {
	if s.Requests >= r.cfg.MaxSteps {
		return ReasonMaxSteps, nil
	}
	if r.now().Sub(started) >= r.cfg.MaxWallTime {
		return ReasonWallTime, nil
	}
	tokens, cost := r.cfg.TokenBudget, r.cfg.CostBudget
	if r.cfg.Budget != nil && s.TicketID != 0 {
		var err error
		if tokens, cost, err = r.cfg.Budget(ctx, r.d, s.TicketID); err != nil {
			return "", err
		}
	}
	if tokens <= 0 && cost <= 0 {
		return "", nil
	}
	t := Totals{Usage: s.Usage}
	if s.TicketID != 0 {
		var err error
		if t, err = r.store.TicketTotals(ctx, r.d, s.TicketID); err != nil {
			return "", err
		}
	}
	if tokens > 0 && t.Usage.Total() >= tokens {
		return ReasonTokenBudget, nil
	}
	if cost > 0 && t.Usage.Cost >= cost {
		return ReasonCostBudget, nil
	}
	return "", nil
}

// startWrapUp stores the wrap-up message and marks the Session as wrapping
// up, together, so a resumed Run makes the last request and stops.
func (r *Runtime) startWrapUp(ctx context.Context, s *Session, conv *conversation, reason string) error {
	var m Message
	err := r.d.InTx(ctx, func(tx *db.Tx) error {
		var err error
		m, err = r.store.insertMessage(ctx, tx, s.ID, Message{Role: model.RoleUser, Content: fmt.Sprintf(r.cfg.WrapUpMessage, reason)})
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE sessions SET wrap_up_seq = $2, wrap_up_reason = $3 WHERE id = $1`, s.ID, m.Seq, reason)
		if err != nil {
			return fmt.Errorf("marking session %d wrapping up: %w", s.ID, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.wrapUpSeq, s.wrapUpReason = m.Seq, reason
	return r.adopt(ctx, s, conv, m)
}

// ask assembles the prompt from the latest revision and sends the
// conversation (plus extra messages) to the model.
func (r *Runtime) ask(ctx context.Context, s *Session, msgs []model.Message, tools *Registry, textOnly bool) (*model.Response, *Request, error) {
	prompt, revision, err := r.prompts.SystemPrompt(ctx, s)
	if err != nil {
		return nil, nil, fmt.Errorf("assembling the system prompt of session %d: %w", s.ID, err)
	}
	assembled := sha256.Sum256([]byte(prompt))
	// A team's prompt text could hold a pasted token: it does not reach
	// the model either. The hash is of what was sent.
	prompt = r.scrub.Scrub(prompt)
	sum := sha256.Sum256([]byte(prompt))
	defs := tools.definitions()
	toolsJSON, toolsSHA, err := encodeTools(defs)
	if err != nil {
		return nil, nil, fmt.Errorf("session %d: %w", s.ID, err)
	}
	begin := r.now()
	resp, err := r.model.Complete(ctx, model.Request{System: prompt, Messages: msgs, Tools: defs, NoToolCalls: textOnly})
	if err != nil {
		return nil, nil, fmt.Errorf("session %d: %w", s.ID, err)
	}
	// What the model wrote is stored and replayed: keep it free of secrets
	// too, whatever it echoed.
	resp.Content = r.scrub.Scrub(resp.Content)
	resp.Reasoning = r.scrub.Scrub(resp.Reasoning)
	for i := range resp.ToolCalls {
		resp.ToolCalls[i].Arguments = r.scrub.Scrub(resp.ToolCalls[i].Arguments)
	}
	rec := &Request{
		SessionID: s.ID, PromptRevision: revision, PromptSHA256: hex.EncodeToString(sum[:]),
		AssembledSHA256: hex.EncodeToString(assembled[:]), ToolsSHA256: toolsSHA, tools: toolsJSON,
		Model: r.model.Model(), ResponseModel: resp.Model, FinishReason: resp.FinishReason,
		Usage: resp.Usage, Latency: r.now().Sub(begin), CreatedAt: r.now().UTC(),
	}
	r.observe(ctx, s, rec)
	return resp, rec, nil
}

// undone asks the caller what the turn left undone (RunOptions.Unfinished).
func (r *Runtime) undone(ctx context.Context, s *Session, opts RunOptions) (string, error) {
	if opts.Unfinished == nil {
		return "", nil
	}
	text, err := opts.Unfinished(ctx, s)
	if err != nil {
		return "", fmt.Errorf("checking what the turn of session %d left undone: %w", s.ID, err)
	}
	return strings.TrimSpace(text), nil
}

// step makes one model request (asking again in place while the answer is
// unusable) and stores it with the assistant message.
func (r *Runtime) step(ctx context.Context, s *Session, conv *conversation, tools *Registry, purpose string, opts RunOptions) error {
	resp, rec, err := r.answerOf(ctx, s, conv, tools, purpose, func() (bool, error) {
		undone, err := r.undone(ctx, s, opts)
		return undone == "", err
	})
	if err != nil {
		return err
	}
	m := Message{Role: model.RoleAssistant, Content: resp.Content, Reasoning: resp.Reasoning, ToolCalls: resp.ToolCalls}
	err = r.d.InTx(ctx, func(tx *db.Tx) error {
		if err := r.store.relaxCommit(ctx, tx); err != nil {
			return err
		}
		return r.store.recordRequest(ctx, tx, rec, &m)
	})
	if err != nil {
		return err
	}
	s.Requests++
	s.Usage = s.Usage.Add(resp.Usage)
	if err := r.adopt(ctx, s, conv, m); err != nil {
		return err
	}
	conv.requested(resp.Usage.Total())
	return nil
}

// answerCalls runs the last assistant message's calls that have no result
// yet. When resuming, a call whose intent was stored but not its end was
// interrupted by a crash: an idempotent tool runs again, any other is
// reported to the model as interrupted.
func (r *Runtime) answerCalls(ctx context.Context, s *Session, conv *conversation, tools *Registry, resuming bool) error {
	if len(conv.open) == 0 {
		return nil
	}
	started := map[string]int{}
	if resuming {
		var err error
		if started, err = r.store.startedCalls(ctx, r.d, s.ID); err != nil {
			return err
		}
	}
	for _, tc := range append([]model.ToolCall(nil), conv.open...) {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := r.answer(ctx, s, tools, tc, started)
		if err != nil {
			return err
		}
		if err := r.adopt(ctx, s, conv, m); err != nil {
			return err
		}
	}
	return nil
}

// recordIntent commits a call's intent before the tool starts.
func (r *Runtime) recordIntent(ctx context.Context, sessionID int64, tc model.ToolCall, attempt int) error {
	if !r.cfg.RelaxedIntent {
		return r.store.recordIntent(ctx, r.d, sessionID, tc, attempt)
	}
	return r.d.InTx(ctx, func(tx *db.Tx) error {
		if err := r.store.relaxCommit(ctx, tx); err != nil {
			return err
		}
		return r.store.recordIntent(ctx, tx, sessionID, tc, attempt)
	})
}

func (r *Runtime) answer(ctx context.Context, s *Session, tools *Registry, tc model.ToolCall, started map[string]int) (Message, error) {
	attempts, interrupted := started[tc.ID]
	tool := tools.lookup(tc.Name)
	if interrupted && (tool == nil || !tool.Idempotent) {
		return r.store.recordResult(ctx, s.ID, tc, true, toolInterrupted, Interrupted)
	}
	if tool == nil {
		return r.refused(s)(r.store.recordResult(ctx, s.ID, tc, false, toolRefused, refusedUnknown+strconv.Quote(tc.Name)))
	}
	call := Call{SessionID: s.ID, TicketID: s.TicketID, Role: s.Role, ID: tc.ID, Name: tc.Name}
	call.Arguments = []byte(tc.Arguments)
	args, refusal := tool.admit(ctx, call)
	if refusal != "" {
		return r.refused(s)(r.store.recordResult(ctx, s.ID, tc, interrupted, toolRefused, refusal))
	}
	call.Arguments = args
	if err := r.recordIntent(ctx, s.ID, tc, attempts+1); err != nil {
		return Message{}, err
	}
	result, err := tool.Handler(ctx, call)
	if err != nil && ctx.Err() != nil {
		// Cut off by cancellation: leave the intent open so the next Run
		// decides by the tool's idempotence.
		return Message{}, fmt.Errorf("running %s: %w", tc.Name, ctx.Err())
	}
	text, state := resultOf(result, err)
	text = cleanResult(r.scrub, text, r.cfg.MaxToolResultBytes)
	// The tool has acted: record that even if ctx ends now, or the next Run
	// would think it interrupted.
	return r.refused(s)(r.store.recordResult(context.WithoutCancel(ctx), s.ID, tc, true, state, text))
}

// refused counts a refused call in the metrics by its kind.
func (r *Runtime) refused(s *Session) func(Message, error) (Message, error) {
	return func(m Message, err error) (Message, error) {
		if err == nil && m.state == toolRefused {
			r.count(refusalsOf, s, RefusalKind(m.Content))
		}
		return m, err
	}
}
