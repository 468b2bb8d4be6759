package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/secret"
)

func noop[A any](context.Context, Call, A) (string, error) { return "", nil }

func TestNewRegistryListsEveryProblem(t *testing.T) {
	t.Parallel()
	type badPattern struct {
		Ref string `json:"ref" jsonschema:"pattern=("`
	}
	_, err := NewRegistry(
		Spec[struct{}]{Name: "bad name!", Handler: noop[struct{}]}.Tool(),
		Spec[struct{}]{Name: "dup", Handler: noop[struct{}]}.Tool(),
		Spec[struct{}]{Name: "dup", Handler: noop[struct{}]}.Tool(),
		Spec[struct{}]{Name: "no_handler"}.Tool(),
		Spec[string]{Name: "not_object", Handler: noop[string]}.Tool(),
		Spec[badPattern]{Name: "broken", Handler: noop[badPattern]}.Tool(),
		Tool{Name: "undeclared", Handler: func(context.Context, Call) (string, error) { return "", nil }},
	)
	require.Error(t, err)
	for _, want := range []string{`invalid name "bad name!"`, `"dup": registered twice`, `"no_handler": no handler`,
		`"not_object": the arguments string are not an object`, `"broken": compiling the parameter schema`,
		`"undeclared": no argument type (declare it with session.Spec)`} {
		require.ErrorContains(t, err, want)
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
