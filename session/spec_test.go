package session

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// routeArgs exercise what the tools' argument types use: nested structs,
// arrays with bounds, enums, descriptions, pointers and optional fields.
type routeArgs struct {
	Decisions []routeDecision `json:"decisions" jsonschema:"minItems=1,maxItems=2"`
	Mode      string          `json:"mode,omitempty" jsonschema:"enum=dry,enum=wet" jsonschema_description:"how to apply them, default dry"`
}

type routeDecision struct {
	Candidate int64    `json:"candidate" jsonschema:"minimum=1" jsonschema_description:"the candidate card's id"`
	Action    string   `json:"action" jsonschema:"enum=new,enum=attach,enum=ignore"`
	Note      *string  `json:"note,omitempty" jsonschema:"maxLength=12"`
	Rules     []string `json:"rules,omitempty"`
}

func routeRegistry(t *testing.T, check func(context.Context, Call, routeArgs) error, handler func(context.Context, Call, routeArgs) (string, error)) *Registry {
	t.Helper()
	r, err := NewRegistry(Spec[routeArgs]{Name: "route", Description: "Route candidates.", Check: check, Handler: handler}.Tool())
	require.NoError(t, err)
	return r
}

func TestSpecSchemaIsWhatTheModelReads(t *testing.T) {
	r := routeRegistry(t, nil, noop[routeArgs])
	defs := r.definitions()
	require.Len(t, defs, 1)
	require.Equal(t, "route", defs[0].Name)
	require.Equal(t, "Route candidates.", defs[0].Description)
	require.JSONEq(t, `{
		"type": "object",
		"properties": {
			"decisions": {
				"type": "array", "minItems": 1, "maxItems": 2,
				"items": {
					"type": "object",
					"properties": {
						"candidate": {"type": "integer", "minimum": 1, "description": "the candidate card's id"},
						"action": {"type": "string", "enum": ["new", "attach", "ignore"]},
						"note": {"type": "string", "maxLength": 12},
						"rules": {"type": "array", "items": {"type": "string"}}
					},
					"required": ["candidate", "action"],
					"additionalProperties": false
				}
			},
			"mode": {"type": "string", "enum": ["dry", "wet"], "description": "how to apply them, default dry"}
		},
		"required": ["decisions"],
		"additionalProperties": false
	}`, string(defs[0].Parameters))
}

func TestSpecWithoutArguments(t *testing.T) {
	r, err := NewRegistry(Spec[struct{}]{Name: "status", Handler: noop[struct{}]}.Tool())
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"object","properties":{},"additionalProperties":false}`, string(r.definitions()[0].Parameters))
	_, refusal := r.lookup("status").admit(t.Context(), Call{Name: "status"})
	require.Empty(t, refusal)
	_, refusal = r.lookup("status").admit(t.Context(), Call{Name: "status", Arguments: json.RawMessage(`{"verbose":true}`)})
	require.Equal(t, "refused: invalid arguments: arguments: additional properties 'verbose' not allowed", refusal)
}

func TestAdmit(t *testing.T) {
	r := routeRegistry(t, func(_ context.Context, _ Call, a routeArgs) error {
		if a.Decisions[0].Action == "attach" && len(a.Decisions[0].Rules) > 0 {
			return errors.New("an attach names no rules")
		}
		return nil
	}, noop[routeArgs])
	tool := r.lookup("route")
	tests := []struct {
		name, args, refusal string
	}{
		{"valid", `{"decisions":[{"candidate":3,"action":"new","note":"ok","rules":["r1"]}],"mode":"dry"}`, ""},
		{"empty means {}", ``, `refused: invalid arguments: arguments: missing property 'decisions'`},
		{"not json", `{"decisions":`, "refused: the arguments are not valid JSON: unexpected end of JSON input"},
		{"not an object", `[1]`, "refused: invalid arguments: arguments: got array, want object"},
		{"every problem listed", `{"decisions":[{"candidate":"3","action":"merge","x":1},{"candidate":1.5}],"extra":true,"mode":"fast"}`,
			"refused: invalid arguments: " +
				"arguments.decisions[0].action: value must be one of 'new', 'attach', 'ignore'; " +
				"arguments.decisions[0].candidate: got string, want integer; " +
				"arguments.decisions[0]: additional properties 'x' not allowed; " +
				"arguments.decisions[1].candidate: got number, want integer; " +
				"arguments.decisions[1]: missing property 'action'; " +
				"arguments.mode: value must be one of 'dry', 'wet'; " +
				"arguments: additional properties 'extra' not allowed"},
		{"bounds", `{"decisions":[{"candidate":0,"action":"new","note":"far too long a note"}]}`,
			"refused: invalid arguments: arguments.decisions[0].candidate: minimum: got 0, want 1; " +
				"arguments.decisions[0].note: maxLength: got 19, want 12"},
		{"array bounds", `{"decisions":[]}`, "refused: invalid arguments: arguments.decisions: minItems: got 0, want 1"},
		{"null is no string", `{"decisions":[{"candidate":1,"action":"new","note":null}]}`,
			"refused: invalid arguments: arguments.decisions[0].note: got null, want string"},
		{"check", `{"decisions":[{"candidate":2,"action":"attach","rules":["r1"]}]}`, "refused: an attach names no rules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, refusal := tool.admit(t.Context(), Call{Name: "route", Arguments: json.RawMessage(tt.args)})
			require.Equal(t, tt.refusal, refusal)
		})
	}
}

func TestSpecDecodesForCheckAndHandler(t *testing.T) {
	var checked, handled routeArgs
	r := routeRegistry(t, func(_ context.Context, _ Call, a routeArgs) error {
		checked = a
		return nil
	}, func(_ context.Context, _ Call, a routeArgs) (string, error) {
		handled = a
		return "ok", nil
	})
	tool := r.lookup("route")
	call := Call{Name: "route", Arguments: json.RawMessage(` {"decisions":[{"candidate":7,"action":"new","note":"n"}]} `)}
	args, refusal := tool.admit(t.Context(), call)
	require.Empty(t, refusal)
	call.Arguments = args
	out, err := tool.Handler(t.Context(), call)
	require.NoError(t, err)
	require.Equal(t, "ok", out)
	note := "n"
	want := routeArgs{Decisions: []routeDecision{{Candidate: 7, Action: "new", Note: &note}}}
	require.Equal(t, want, checked)
	require.Equal(t, want, handled)
}
