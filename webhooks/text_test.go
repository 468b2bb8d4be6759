package webhooks

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/tickets"
)

func TestMentions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text string
		want bool
	}{
		{"@superagent fix it", true},
		{"hey @SuperAgent, fix it", true},
		{"(@superagent)", true},
		{"@superagent[bot] fix it", true},
		{"cc @superagent\n", true},
		{"@superagent-fan fix it", false},
		{"@superagents", false},
		{"mail me@superagent.dev", false},
		{"see github.com/@superagent", false},
		{"`@superagent` is the handle", false},
		{"> @superagent said\nok", false},
		{"```\n@superagent\n```", false},
		{"```\ncode\n```\n@superagent after", true},
		{"", false},
	}
	for _, c := range cases {
		require.Equal(t, c.want, mentions(c.text, "superagent"), c.text)
	}
}

func TestReferences(t *testing.T) {
	t.Parallel()
	got := dedupeRefs(references("Fixes #12, see octo/other#9 and https://github.com/o/r/issues/7 and https://ghe.corp/o/r/pull/7 and #12 again; not a&#39; nor x#5 nor `#8`", "o/r"), "o/r", 1)
	require.Equal(t, []tickets.Reference{
		{Repo: "o/r", Number: 7},
		{Repo: "o/r", Number: 12},
		{Repo: "octo/other", Number: 9},
	}, got)
	require.Nil(t, dedupeRefs(references("#1", "o/r"), "o/r", 1), "a card's own Thread is no reference")
}
