// Package session runs model conversations for the main Session and the
// Executors: it stores every message, model request and tool call as it
// happens, assembles the system prompt afresh for every request, runs tool
// calls through a registry that checks their arguments, and continues a
// conversation where it stopped after a crash without repeating a side
// effect. It also enforces step, time and budget limits, rolls a long
// conversation over into a new Session through a handoff, and keeps every
// known secret out of what it stores and sends.
//
// A tool is declared once, as a Spec over a Go argument type: the JSON
// schema the model reads is generated from that type (a property is
// required unless its json tag says omitempty or omitzero; unknown
// properties are refused), every call is validated against it with
// github.com/santhosh-tekuri/jsonschema, and the handler receives the
// arguments decoded into the type.
package session

import (
	"context"
	"time"

	"github.com/superagent-dev/superagent/internal/model"
)

// Role is the kind of agent a Session belongs to.
type Role string

// Session roles.
const (
	RoleMain     Role = "main"
	RoleExecutor Role = "executor"
)

// State is where a Session is in its life.
type State string

// Session states.
const (
	// StateActive: the Session has work in progress or waiting.
	StateActive State = "active"
	// StateDone: the model ended its turn; an appended message reopens it.
	StateDone State = "done"
	// StateStopped: a limit, a person or a caller stopped it; Reopen resumes.
	StateStopped State = "stopped"
	// StateRolledOver: the conversation continues in a successor Session.
	StateRolledOver State = "rolled_over"
	// StateFailed: the caller gave up on it.
	StateFailed State = "failed"
)

// Reasons recorded with a state or reported in an Outcome.
const (
	ReasonEndTurn     = "end_turn"
	ReasonNoInput     = "no_input"
	ReasonMaxSteps    = "max_steps"
	ReasonWallTime    = "wall_time"
	ReasonTokenBudget = "token_budget"
	ReasonCostBudget  = "cost_budget"
	ReasonCancelled   = "cancelled"
	ReasonRollover    = "context_rollover"
	// ReasonRepeatedCall: the same call kept coming back with the same
	// result after the host's note (Config.RepeatLimit).
	ReasonRepeatedCall = "repeated_call"
	// ReasonNoProgress: no progress for twice Config.StallSteps requests.
	ReasonNoProgress = "no_progress"
	// ReasonUnfinished: the model ended its turn with work left undone
	// (RunOptions.Unfinished) again after the host's reminder.
	ReasonUnfinished = "unfinished_turn"
)

// Host notes: messages the runtime adds to a conversation on its own.
// Each begins with its prefix, by which the runtime and readers of the
// transcript recognise it.
const (
	// NudgePrefix begins the one reminder a turn gets when it ends with
	// work left undone.
	NudgePrefix = "host: reminder: "
	// RepeatPrefix begins the note on a call repeated with the same result.
	RepeatPrefix = "host: repeated call: "
	// StallPrefix begins the note on requests without progress.
	StallPrefix = "host: no progress: "
)

// Session is a stored conversation.
type Session struct {
	ID   int64
	Role Role
	// TicketID is the Ticket an Executor Session works; 0 for none.
	TicketID int64
	State    State
	// StateReason says why the Session reached its state (one of the
	// Reason constants, or a StopCheck's reason).
	StateReason string
	// PredecessorID is the Session this one continues after a rollover; 0
	// for none.
	PredecessorID int64
	// Requests is the number of model requests made.
	Requests int64
	// Usage is the sum of the Session's requests.
	Usage     model.Usage
	CreatedAt time.Time
	UpdatedAt time.Time

	lastSeq      int64
	wrapUpSeq    int64
	wrapUpReason string
}

// PromptSource gives the system prompt for a Session's next model request:
// the latest saved configuration, assembled for the Session's role, with
// the revision it came from. It is called before every request.
type PromptSource interface {
	SystemPrompt(ctx context.Context, s *Session) (prompt string, revision int64, err error)
}

// PromptFunc adapts a function to PromptSource.
type PromptFunc func(ctx context.Context, s *Session) (string, int64, error)

// SystemPrompt calls f.
func (f PromptFunc) SystemPrompt(ctx context.Context, s *Session) (string, int64, error) {
	return f(ctx, s)
}

// Model is what the runtime needs of a model client; *model.Client is one.
type Model interface {
	Complete(ctx context.Context, req model.Request) (*model.Response, error)
	Model() string
	ContextWindow() int64
}

var _ Model = (*model.Client)(nil)

// Message is a stored transcript message.
type Message struct {
	ID         int64
	SessionID  int64
	Seq        int64
	Role       string
	Content    string
	Reasoning  string
	ToolCalls  []model.ToolCall
	ToolCallID string
	// RequestID is the model request that produced an assistant message.
	RequestID int64
	CreatedAt time.Time

	// state is a tool message's call state (done, failed, refused,
	// interrupted), where the runtime knows it.
	state string
}

// Request is a stored model request.
type Request struct {
	ID             int64
	SessionID      int64
	PromptRevision int64
	PromptSHA256   string
	// Model is the configured model; ResponseModel the one the provider
	// reported.
	Model         string
	ResponseModel string
	// Purpose is "step", "wrap_up" or "handoff".
	Purpose      string
	FinishReason string
	Usage        model.Usage
	Latency      time.Duration
	CreatedAt    time.Time
	// AssembledSHA256 is the SHA-256 of the prompt as the PromptSource gave
	// it, before secrets were scrubbed from it (PromptSHA256 is of what was
	// sent; the two differ only when the prompt held a secret). It names
	// the prompt promptparts recorded. Empty for requests made before it
	// was recorded.
	AssembledSHA256 string
	// ToolsSHA256 names the tool definitions the request offered, stored
	// once per distinct set. Empty: not recorded.
	ToolsSHA256 string

	tools string
}

// Totals is the usage summed over some Sessions.
type Totals struct {
	Sessions int64
	Requests int64
	Usage    model.Usage
}
