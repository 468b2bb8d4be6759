package executor

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/tickets"
)

func TestPullClaim(t *testing.T) {
	none := tickets.Ticket{Repo: "o/r"}
	has := tickets.Ticket{Repo: "o/r", PullNumber: 12}
	for _, c := range []struct {
		summary string
		t       tickets.Ticket
		wrong   bool
	}{
		{"Opened a pull request with the fix; tests pass.", none, true},
		{"Fixed it in PR #3, verified with make test.", none, true},
		{"See https://github.com/o/r/pull/3 for the change.", none, true},
		{"Answered the question; no pull request was needed.", none, false},
		{"Explained the cause without opening a pull request.", none, false},
		{"Did not open a PR: the change belongs upstream.", none, false},
		{"Fixed in pull request #12; tests pass.", has, false},
		{"Fixed in a draft pull request; tests pass.", has, false},
		{"Fixed in pull request #13; tests pass.", has, true},
		{"Used pr_open after git_push; all verified.", none, false},
	} {
		got := pullClaim(c.summary, c.t)
		require.Equal(t, c.wrong, got != "", "%q: %s", c.summary, got)
	}
}
