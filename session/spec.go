package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	schemagen "github.com/invopop/jsonschema"
	schemaval "github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Spec declares a tool whose arguments are the Go type A, once: the
// parameter schema the model reads is generated from A, the host validates
// every call against it, and Check and Handler receive the arguments
// decoded into A.
//
// A is a struct (a map[string]any takes any object). Its fields become
// the properties, named by their json tags; a property is required unless
// its json tag says omitempty (or omitzero), whatever the field's type;
// unknown properties are refused (additionalProperties false), in nested
// structs too. A field's jsonschema_description tag is its description,
// and its jsonschema tag holds the constraints, e.g.
// `jsonschema:"enum=new,enum=ignore"` or `jsonschema:"minimum=1,maximum=1800"`
// (the keywords of github.com/invopop/jsonschema).
type Spec[A any] struct {
	// Name is the function name the model uses (see docs/tools.md).
	Name        string
	Description string
	// Idempotent tools are run again when a crash interrupted them; others
	// are reported to the model as interrupted instead.
	Idempotent bool
	// Progress marks a tool whose successful call moves the work on: it
	// changes files, runs a command or sends a message. A new such call
	// resets the runtime's stall count (Config.StallSteps); reading does
	// not.
	Progress bool
	// Check, when set, runs after schema validation: a non-nil error refuses
	// the call and its text is what the model reads ("refused: <text>").
	// Host-enforced limits (word counts, wait limits, references) go here.
	Check func(ctx context.Context, call Call, args A) error
	// Handler does the work and returns the text the model reads. An error
	// is reported to the model as "error: <text>" (or "refused: <text>" for
	// a Refusal); a context error leaves the call interrupted.
	Handler func(ctx context.Context, call Call, args A) (string, error)
}

// Tool generates the parameter schema from A and returns the tool.
// NewRegistry reports a schema that is not an object or does not compile;
// an argument type the generator cannot describe at all (a channel, a
// function) panics here, as a declaration error.
func (s Spec[A]) Tool() Tool {
	p, err := generate(reflect.TypeFor[A]())
	if err != nil {
		p = &params{err: err}
	}
	t := Tool{Name: s.Name, Description: s.Description, Idempotent: s.Idempotent, Progress: s.Progress, params: p}
	if s.Check != nil {
		t.Check = func(ctx context.Context, call Call) error {
			a, err := decode[A](call)
			if err != nil {
				return err
			}
			return s.Check(ctx, call, a)
		}
	}
	if s.Handler != nil {
		t.Handler = func(ctx context.Context, call Call) (string, error) {
			a, err := decode[A](call)
			if err != nil {
				return "", err
			}
			return s.Handler(ctx, call, a)
		}
	}
	return t
}

func decode[A any](call Call) (A, error) {
	var a A
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return a, fmt.Errorf("decoding arguments of %s: %w", call.Name, err)
	}
	return a, nil
}

// params is a tool's parameter schema, the JSON the model reads, or why
// there is none.
type params struct {
	schema json.RawMessage
	err    error
}

// generate builds the parameter schema of the argument type t.
func generate(t reflect.Type) (*params, error) {
	r := schemagen.Reflector{Anonymous: true, DoNotReference: true, ExpandedStruct: true}
	s := r.ReflectFromType(t)
	// The model reads a plain object schema: no $schema keyword.
	s.Version = ""
	if s.Type != "object" {
		return nil, fmt.Errorf("the arguments %s are not an object", t)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding the parameter schema: %w", err)
	}
	return &params{schema: raw}, nil
}

// compiler compiles the parameter schemas of one registry. It checks each
// against the draft's meta-schema, which it loads once for all of them.
type compiler struct{ c *schemaval.Compiler }

func newCompiler() compiler {
	c := schemaval.NewCompiler()
	c.DefaultDraft(schemaval.Draft2020)
	// A schema from outside (an MCP server's) may name any URL in $ref or
	// $schema; nothing is ever loaded for it, from the network or a file.
	c.UseLoader(noLoader{})
	return compiler{c: c}
}

// noLoader refuses to load any schema.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: schemas outside the tool's own are not loaded", url)
}

// compile compiles the schema of the tool name (a unique name).
func (c compiler) compile(name string, schema json.RawMessage) (*schemaval.Schema, error) {
	doc, err := schemaval.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("reading the parameter schema: %w", err)
	}
	url := "tool:///" + name + ".json"
	if err := c.c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("compiling the parameter schema: %w", err)
	}
	compiled, err := c.c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("compiling the parameter schema: %w", err)
	}
	return compiled, nil
}

// argumentProblems lists every problem of the arguments v (decoded JSON)
// under schema s, one per failed keyword, each naming where it is
// ("arguments.decisions[0].action").
func argumentProblems(s *schemaval.Schema, v any) []string {
	err := s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *schemaval.ValidationError
	if !errors.As(err, &ve) {
		return []string{"arguments: " + err.Error()}
	}
	var problems []string
	printer := message.NewPrinter(language.English)
	var walk func(e *schemaval.ValidationError)
	walk = func(e *schemaval.ValidationError) {
		if len(e.Causes) == 0 {
			problems = append(problems, location(v, e.InstanceLocation)+": "+e.ErrorKind.LocalizedString(printer))
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(problems)
	return slices.Compact(problems)
}

// location writes an instance location as the model would name it:
// arguments.decisions[0].action.
func location(v any, tokens []string) string {
	var b strings.Builder
	b.WriteString("arguments")
	for _, tok := range tokens {
		switch x := v.(type) {
		case []any:
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(x) {
				v = x[i]
			}
		case map[string]any:
			b.WriteString("." + tok)
			v = x[tok]
		default:
			b.WriteString("." + tok)
		}
	}
	return b.String()
}
