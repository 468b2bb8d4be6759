package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/secret"
)

func noop(context.Context, Call) (string, error) { return "", nil }

func TestNewRegistryListsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := NewRegistry(
		Tool{Name: "bad name!", Handler: noop},
		Tool{Name: "dup", Handler: noop},
		Tool{Name: "dup", Handler: noop},
		Tool{Name: "no_handler"},
		Tool{Name: "not_object", Parameters: json.RawMessage(`{"type":"string"}`), Handler: noop},
		Tool{Name: "broken", Parameters: json.RawMessage(`{"type":`), Handler: noop},
	)
	require.Error(t, err)
	for _, want := range []string{`invalid name "bad name!"`, `"dup": registered twice`, `"no_handler": no handler`,
		`"not_object": parameter schema must have type object`, `"broken": parsing parameter schema`} {
		require.ErrorContains(t, err, want)
	}
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	schemaText := `{"type":"object","additionalProperties":false,"required":["decisions"],"properties":{
		"decisions":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"object","required":["candidate","action"],
			"properties":{"candidate":{"type":"integer","minimum":1},"action":{"enum":["new","attach","ignore"]},
			"note":{"type":["string","null"],"maxLength":12},"rules":{"type":"array","items":{"type":"string"}}}}},
		"mode":{"anyOf":[{"const":"dry"},{"type":"boolean"}]}}}`
	r, err := NewRegistry(Tool{Name: "route", Parameters: json.RawMessage(schemaText), Handler: noop,
		Check: func(_ context.Context, c Call) error {
			if strings.Contains(string(c.Arguments), "forbidden") {
				return errors.New("that reference does not belong to the ticket")
			}
			return nil
		}})
	require.NoError(t, err)
	tool := r.lookup("route")
	tests := []struct {
		name, args, refusal string
	}{
		{"valid", `{"decisions":[{"candidate":3,"action":"new","note":null,"rules":["r1"]}],"mode":"dry"}`, ""},
		{"empty means {}", ``, `refused: invalid arguments: arguments: missing required property "decisions"`},
		{"not json", `{"decisions":`, "refused: the arguments are not valid JSON"},
		{"every problem listed", `{"decisions":[{"candidate":1.5,"action":"merge","note":"far too long a note","x":1}],"extra":true,"mode":3}`,
			"refused: invalid arguments: arguments.decisions[0].action: must be one of \"new\", \"attach\", \"ignore\"; " +
				"arguments.decisions[0].candidate: must be integer, not number; " +
				"arguments.decisions[0].note: must be at most 12 characters, is 19; " +
				"arguments.extra: unknown property; arguments.mode: matches none of the allowed forms"},
		{"array bounds", `{"decisions":[]}`, "refused: invalid arguments: arguments.decisions: must have at least 1 items"},
		{"wrong type", `{"decisions":{}}`, "refused: invalid arguments: arguments.decisions: must be array, not object"},
		{"check", `{"decisions":[{"candidate":2,"action":"attach","rules":["forbidden"]}]}`,
			"refused: that reference does not belong to the ticket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, refusal := tool.admit(t.Context(), Call{Name: "route", Arguments: json.RawMessage(tt.args)})
			if tt.refusal == "" {
				require.Empty(t, refusal)
				return
			}
			require.True(t, strings.HasPrefix(refusal, tt.refusal), "got %q", refusal)
		})
	}
}

func TestResultOf(t *testing.T) {
	t.Parallel()
	text, state := resultOf("out", nil)
	require.Equal(t, [2]string{"out", toolDone}, [2]string{text, state})
	text, state = resultOf("", Refuse("push only after the confirmation"))
	require.Equal(t, [2]string{"refused: push only after the confirmation", toolRefused}, [2]string{text, state})
	text, state = resultOf("partial", errors.New("exit status 1"))
	require.Equal(t, [2]string{"partial\nerror: exit status 1", toolFailed}, [2]string{text, state})
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	require.Equal(t, "short", truncate("short", 10, 5))
	out := truncate("ééééé", 5, 10)
	require.True(t, strings.HasPrefix(out, "éé\n[output truncated: 4 of 10 bytes shown]"), out)
}

func TestCleanResultNeverLeavesPartOfASecret(t *testing.T) {
	t.Parallel()
	tok := "ghs_" + strings.Repeat("k", 36)
	s := secret.New(tok)
	max := 1000
	// Secrets straddling the final cut, the clip, and far beyond both.
	for _, at := range []int{max - 10, max + scrubMargin - 10, max + scrubMargin + 500} {
		text := strings.Repeat("x", at) + tok + strings.Repeat("y", 3*scrubMargin)
		out := cleanResult(s, text, max)
		require.NotContains(t, out, tok[:12])
		require.Contains(t, out, fmt.Sprintf("of %d bytes shown", len(text)))
	}
}
