package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/superagent-dev/superagent/internal/model"
)

// Tool is a function the model may call.
type Tool struct {
	// Name is the function name the model uses (see docs/tools.md).
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments (an object schema).
	// The host validates every call against it before Check and Handler.
	Parameters json.RawMessage
	// Idempotent tools are run again when a crash interrupted them; others
	// are reported to the model as interrupted instead.
	Idempotent bool
	// Check, when set, runs after schema validation: a non-nil error refuses
	// the call and its text is what the model reads ("refused: <text>").
	// Host-enforced limits (word counts, wait limits, references) go here.
	Check func(ctx context.Context, call Call) error
	// Handler does the work and returns the text the model reads. An error
	// is reported to the model as "error: <text>" (or "refused: <text>" for
	// a Refusal); a context error leaves the call interrupted.
	Handler func(ctx context.Context, call Call) (string, error)
}

// Call is one tool call as the handler sees it.
type Call struct {
	SessionID int64
	TicketID  int64
	Role      Role
	// ID is the model's id for the call.
	ID   string
	Name string
	// Arguments is the validated JSON object.
	Arguments json.RawMessage
}

// Bind decodes the arguments into v.
func (c Call) Bind(v any) error {
	if err := json.Unmarshal(c.Arguments, v); err != nil {
		return fmt.Errorf("decoding arguments of %s: %w", c.Name, err)
	}
	return nil
}

// Refusal is an error a Check or Handler returns to refuse a call; the
// model reads "refused: <reason>".
type Refusal struct{ Reason string }

// Error returns the reason.
func (r *Refusal) Error() string { return r.Reason }

// Refuse returns a Refusal.
func Refuse(format string, args ...any) error {
	return &Refusal{Reason: fmt.Sprintf(format, args...)}
}

// Registry is the set of tools one Session may call.
type Registry struct {
	tools   map[string]*registered
	ordered []*registered
}

type registered struct {
	Tool
	schema *schema
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// NewRegistry checks the tools and returns a registry of them. The error
// lists every problem found.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{tools: map[string]*registered{}}
	var problems []string
	for i, t := range tools {
		if !toolName.MatchString(t.Name) {
			problems = append(problems, fmt.Sprintf("tool %d: invalid name %q", i, t.Name))
			continue
		}
		if _, dup := r.tools[t.Name]; dup {
			problems = append(problems, fmt.Sprintf("tool %q: registered twice", t.Name))
			continue
		}
		if t.Handler == nil {
			problems = append(problems, fmt.Sprintf("tool %q: no handler", t.Name))
		}
		s, err := compileSchema(t.Parameters)
		if err != nil {
			problems = append(problems, fmt.Sprintf("tool %q: %v", t.Name, err))
			continue
		}
		reg := &registered{Tool: t, schema: s}
		r.tools[t.Name] = reg
		r.ordered = append(r.ordered, reg)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("invalid tool registry: %s", strings.Join(problems, "; "))
	}
	return r, nil
}

// Names lists the tools in registration order.
func (r *Registry) Names() []string {
	names := make([]string, len(r.ordered))
	for i, t := range r.ordered {
		names[i] = t.Name
	}
	return names
}

// definitions are the tools as the model sees them.
func (r *Registry) definitions() []model.Tool {
	if r == nil {
		return nil
	}
	out := make([]model.Tool, len(r.ordered))
	for i, t := range r.ordered {
		out[i] = model.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	return out
}

func (r *Registry) lookup(name string) *registered {
	if r == nil {
		return nil
	}
	return r.tools[name]
}

// admit validates a call's arguments and runs the tool's Check. It returns
// the normalised arguments, or the refusal text the model should read.
func (t *registered) admit(ctx context.Context, call Call) (json.RawMessage, string) {
	raw := strings.TrimSpace(string(call.Arguments))
	if raw == "" {
		raw = "{}"
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, "refused: the arguments are not valid JSON: " + err.Error()
	}
	var problems []string
	t.schema.validate("arguments", v, &problems)
	if len(problems) > 0 {
		return nil, "refused: invalid arguments: " + strings.Join(problems, "; ")
	}
	call.Arguments = json.RawMessage(raw)
	if t.Check != nil {
		if err := t.Check(ctx, call); err != nil {
			return nil, "refused: " + err.Error()
		}
	}
	return call.Arguments, ""
}

// resultOf turns a handler's outcome into the text the model reads.
func resultOf(result string, err error) (text, state string) {
	if err == nil {
		return result, toolDone
	}
	var refusal *Refusal
	if errors.As(err, &refusal) {
		return "refused: " + refusal.Reason, toolRefused
	}
	if result != "" {
		return result + "\nerror: " + err.Error(), toolFailed
	}
	return "error: " + err.Error(), toolFailed
}
