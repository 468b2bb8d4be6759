package webhooks

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestActionOf reads the top-level action wherever it stands, never one
// nested in an object the payload carries.
func TestActionOf(t *testing.T) {
	for _, c := range []struct {
		body, want string
		fails      bool
	}{
		{body: `{"action":"opened","issue":{"number":1}}`, want: "opened"},
		{body: `{"issue":{"action":"closed","labels":[{"action":"x"}]},"action":"opened"}`, want: "opened"},
		{body: `{"ref":"refs/heads/main"}`, want: ""},
		{body: `{"action":null}`, want: ""},
		{body: `{"action":5}`, fails: true},
		{body: `["action","opened"]`, fails: true},
		{body: `{"issue":{"action":`, fails: true},
		{body: ``, fails: true},
	} {
		got, err := actionOf([]byte(c.body))
		if c.fails {
			require.Error(t, err, c.body)
			continue
		}
		require.NoError(t, err, c.body)
		require.Equal(t, c.want, got, c.body)
	}
}
