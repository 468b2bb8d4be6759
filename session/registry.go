package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	schemaval "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/superagent-dev/superagent/internal/model"
)

// Tool is a function the model may call, as the Registry runs it: a Spec
// with its arguments left undecoded. Declare tools with Spec; code that
// wraps every tool of a registry (metrics, guards) may wrap Check and
// Handler, which read the arguments from Call.Arguments.
type Tool struct {
	// Name, Description, Idempotent and Progress are the Spec's.
	Name        string
	Description string
	Idempotent  bool
	Progress    bool
	// Check and Handler are the Spec's, decoding the arguments first.
	Check   func(ctx context.Context, call Call) error
	Handler func(ctx context.Context, call Call) (string, error)

	// params is the schema Spec generated; nil for a Tool not declared
	// with one, which NewRegistry refuses.
	params *params
}

// Call is one tool call as the handler sees it.
type Call struct {
	SessionID int64
	TicketID  int64
	Role      Role
	// ID is the model's id for the call.
	ID   string
	Name string
	// Arguments is the validated JSON object; a Spec's Check and Handler
	// receive it decoded as well.
	Arguments json.RawMessage
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
	schema *schemaval.Schema
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// NewRegistry checks the tools and returns a registry of them. The error
// lists every problem found.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{tools: map[string]*registered{}}
	c := newCompiler()
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
		switch {
		case t.params == nil:
			problems = append(problems, fmt.Sprintf("tool %q: no argument type (declare it with session.Spec)", t.Name))
			continue
		case t.params.err != nil:
			problems = append(problems, fmt.Sprintf("tool %q: %v", t.Name, t.params.err))
			continue
		}
		s, err := c.compile(t.Name, t.params.schema)
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
		out[i] = model.Tool{Name: t.Name, Description: t.Description, Parameters: t.params.schema}
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
		return nil, refusedJSON + err.Error()
	}
	if problems := argumentProblems(t.schema, v); len(problems) > 0 {
		return nil, refusedArguments + strings.Join(problems, "; ")
	}
	call.Arguments = json.RawMessage(raw)
	if t.Check != nil {
		if err := t.Check(ctx, call); err != nil {
			return nil, "refused: " + err.Error()
		}
	}
	return call.Arguments, ""
}

// Kinds of refusal of a tool call, as the metrics and the Ticket page
// count them: a tool that does not exist, arguments that are not JSON,
// arguments the schema refuses (wrong names or types), and a host rule (a
// Check or a Handler's Refusal: a word limit, a claim that does not hold).
const (
	RefusalUnknownTool  = "unknown_tool"
	RefusalBadJSON      = "bad_json"
	RefusalBadArguments = "bad_arguments"
	RefusalHostRule     = "host_rule"
)

// The beginnings of the refusals the registry writes itself.
const (
	refusedUnknown   = "refused: there is no tool named "
	refusedJSON      = "refused: the arguments are not valid JSON: "
	refusedArguments = "refused: invalid arguments: "
)

// RefusalKind classifies the result text of a refused call.
func RefusalKind(result string) string {
	switch {
	case strings.HasPrefix(result, refusedUnknown):
		return RefusalUnknownTool
	case strings.HasPrefix(result, refusedJSON):
		return RefusalBadJSON
	case strings.HasPrefix(result, refusedArguments):
		return RefusalBadArguments
	}
	return RefusalHostRule
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
