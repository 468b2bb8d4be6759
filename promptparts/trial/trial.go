// Package trial tries a draft prompt configuration on recorded model
// requests. For each request it shows the system prompt the draft would
// have given it, as a diff against the prompt it had; with a model
// configured for the request's role, it also sends the same conversation
// and tools again under the draft and shows the new answer (tool calls
// included) beside the recorded one, with tokens and cost. Tool calls are
// shown, never run, and nothing is written: no Ticket, Session, request or
// prompt record.
package trial

import (
	"context"
	"errors"
	"fmt"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/secret"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
)

// Model answers the re-run requests; *model.Client is one.
type Model interface {
	Complete(ctx context.Context, req model.Request) (*model.Response, error)
	Model() string
}

var _ Model = (*model.Client)(nil)

// Config tunes a Trial. The zero value is the documented default.
type Config struct {
	// Models answer the re-run requests, by the role of the request's
	// Session. Default: none; a role without a model gets the prompt diff
	// only.
	Models map[session.Role]Model
	// Scrubber removes secrets from the prompts and answers shown, and
	// from the draft's prompt before it is sent, as the Sessions do.
	// Default: none.
	Scrubber *secret.Scrubber
}

// Trial tries drafts on recorded requests.
type Trial struct {
	cfg      Config
	db       *db.DB
	prompts  *promptparts.Service
	sessions *session.Store
}

// New returns a Trial reading d.
func New(cfg Config, d *db.DB, prompts *promptparts.Service, sessions *session.Store) *Trial {
	return &Trial{cfg: cfg, db: d, prompts: prompts, sessions: sessions}
}

// HasModel reports whether requests of role are re-run.
func (t *Trial) HasModel(role session.Role) bool { return t.cfg.Models[role] != nil }

// Answer is what a model answered.
type Answer struct {
	Model        string
	Content      string
	ToolCalls    []model.ToolCall
	FinishReason string
	Usage        model.Usage
}

// Result is one request tried.
type Result struct {
	Request session.Request
	Role    session.Role
	// TicketID is the Ticket of the request's Session; 0 for none.
	TicketID int64
	// Problem says why the request could not be tried, such as a prompt
	// made before prompts were recorded; the fields below are then empty.
	Problem string
	// Prompt is the change from the system prompt the request was sent to
	// the one the draft gives it ("" on both sides when unchanged).
	Prompt promptparts.Change
	// PromptVerified says the rebuilt prompt hashes to the SHA-256 recorded
	// with the request: the left side is exactly what was sent.
	PromptVerified bool
	// Recorded is the answer the request got.
	Recorded Answer
	// Draft is the answer under the draft; nil when the role has no model
	// or the request failed (DraftError).
	Draft      *Answer
	DraftError string
}

// ErrNoRequests is returned when a selection names no request.
var ErrNoRequests = errors.New("no recorded model requests to try")

// Select picks the requests to try: ids, or when there are none the last
// n of role's Sessions, oldest first.
func (t *Trial) Select(ctx context.Context, ids []int64, last int, role session.Role) ([]int64, error) {
	if len(ids) > 0 {
		return ids, nil
	}
	if last <= 0 {
		return nil, ErrNoRequests
	}
	reqs, err := t.sessions.RecentRequests(ctx, t.db, role, last)
	if err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%w: no %s Session has made a model request", ErrNoRequests, role)
	}
	out := make([]int64, len(reqs))
	for i, r := range reqs {
		out[len(reqs)-1-i] = r.ID
	}
	return out, nil
}

// Run tries d on each request in turn. An unknown request id is an error
// (session.ErrRequestNotFound); a request that cannot be tried is a Result
// with a Problem.
func (t *Trial) Run(ctx context.Context, d promptparts.Draft, ids []int64) ([]Result, error) {
	if len(ids) == 0 {
		return nil, ErrNoRequests
	}
	out := make([]Result, 0, len(ids))
	for _, id := range ids {
		r, err := t.one(ctx, d, id)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (t *Trial) one(ctx context.Context, d promptparts.Draft, id int64) (Result, error) {
	rp, err := t.sessions.Replay(ctx, t.db, id)
	if err != nil {
		return Result{}, err
	}
	scrub := t.cfg.Scrubber.Scrub
	res := Result{Request: rp.Request, Role: rp.Session.Role, TicketID: rp.Session.TicketID, Recorded: Answer{
		Model: rp.Request.ResponseModel, Content: scrub(rp.Answer.Content), ToolCalls: rp.Answer.ToolCalls,
		FinishReason: rp.Request.FinishReason, Usage: rp.Request.Usage,
	}}
	if rp.Request.AssembledSHA256 == "" {
		res.Problem = "this request was made before prompts were recorded, so its prompt cannot be rebuilt"
		return res, nil
	}
	recorded, draft, err := t.prompts.DraftPrompt(ctx, d, rp.Request.AssembledSHA256)
	if errors.Is(err, promptparts.ErrNotRecorded) {
		res.Problem = "the prompt of this request cannot be rebuilt: " + err.Error()
		return res, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("trying request %d: %w", id, err)
	}
	sent, next := scrub(recorded.Text), scrub(draft)
	res.PromptVerified = recorded.Verified && promptparts.SHA256(sent) == rp.Request.PromptSHA256
	res.Prompt = promptparts.NewChange("system prompt", sent, next)
	if sent == next {
		res.Prompt = promptparts.Change{Key: "system prompt"}
	}
	m := t.cfg.Models[res.Role]
	if m == nil {
		return res, nil
	}
	if !rp.ToolsRecorded && rp.Request.ToolsSHA256 == "" && len(rp.Answer.ToolCalls) > 0 {
		res.DraftError = "the tools this request offered were not recorded, so it cannot be sent again as it was"
		return res, nil
	}
	resp, err := m.Complete(ctx, model.Request{System: next, Messages: rp.Messages, Tools: rp.Tools, NoToolCalls: rp.NoToolCalls})
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		res.DraftError = scrub(err.Error())
		return res, nil
	}
	if resp.NoChoices {
		res.DraftError = "the model answered without any choice (no message at all); try again"
		return res, nil
	}
	calls := make([]model.ToolCall, len(resp.ToolCalls))
	for i, c := range resp.ToolCalls {
		c.Arguments = scrub(c.Arguments)
		calls[i] = c
	}
	res.Draft = &Answer{Model: resp.Model, Content: scrub(resp.Content), ToolCalls: calls, FinishReason: resp.FinishReason, Usage: resp.Usage}
	return res, nil
}
