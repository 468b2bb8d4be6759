package session_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/session"
)

// A schema from outside is checked before it is offered: one that is not
// an object schema, is too large, does not compile, or reaches for a
// schema elsewhere (a file, the network) is refused.
func TestCheckSchema(t *testing.T) {
	for _, tc := range []struct {
		name, schema, problem string
	}{
		{"good", `{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"]}`, ""},
		{"not an object", `[]`, "not a JSON object"},
		{"not of type object", `{"type":"string"}`, `type is not "object"`},
		{"bad type", `{"type":"object","properties":{"x":{"type":"no-such-type"}}}`, "compiling"},
		{"file reference", `{"type":"object","properties":{"x":{"$ref":"file:///etc/passwd"}}}`, "not loaded"},
		{"remote meta-schema", `{"$schema":"http://127.0.0.1:1/s.json","type":"object"}`, "not loaded"},
		{"too large", `{"type":"object","description":"` + strings.Repeat("x", session.MaxRawSchema) + `"}`, "over the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := session.CheckSchema(json.RawMessage(tc.schema))
			if tc.problem == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.problem)
		})
	}
}

// A Raw tool joins a registry with its schema as given.
func TestRawToolRegisters(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"],"additionalProperties":false}`)
	r, err := session.NewRegistry(session.Raw("mcp__facts__lookup", "Look up.", schema, func(context.Context, session.Call) (string, error) {
		return "ok", nil
	}))
	require.NoError(t, err)
	require.Equal(t, []string{"mcp__facts__lookup"}, r.Names())
}
