package webhooks

import (
	"encoding/json"
	"os"
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

// BenchmarkActionOf reads the action of a real 15 KB issue_comment payload
// (the bench's) as the parser does, against the baseline of decoding the
// payload's head with encoding/json as it did before, in the same run.
func BenchmarkActionOf(b *testing.B) {
	body, err := os.ReadFile("../internal/bench/testdata/issue_comment.created.json")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("baseline: json.Unmarshal of the head", func(b *testing.B) {
		for b.Loop() {
			var head struct {
				Action string `json:"action"`
			}
			if err := json.Unmarshal(body, &head); err != nil || head.Action != "created" {
				b.Fatal(head.Action, err)
			}
		}
	})
	b.Run("actionOf", func(b *testing.B) {
		for b.Loop() {
			if a, err := actionOf(body); err != nil || a != "created" {
				b.Fatal(a, err)
			}
		}
	})
}
