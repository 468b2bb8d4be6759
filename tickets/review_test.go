package tickets_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/tickets"
)

func TestReviewRequest(t *testing.T) {
	t.Parallel()
	pr := tickets.Thread{Source: tickets.SourceGitHub, Repo: "octo/widgets", Number: 12}
	chat := tickets.Thread{Source: tickets.SourceFeishu, Repo: "oc_chat"}
	for _, tc := range []struct {
		name   string
		card   tickets.Card
		repo   string
		number int
		ok     bool
	}{
		{"on a pull request", tickets.Card{Source: tickets.SourceGitHub, Addressed: true, Thread: pr, Text: "@superagent review"}, "octo/widgets", 12, true},
		{"with words after it", tickets.Card{Source: tickets.SourceGitHub, Addressed: true, Thread: pr, Text: "@superagent Review: mostly the parser"}, "octo/widgets", 12, true},
		{"another word first", tickets.Card{Source: tickets.SourceGitHub, Addressed: true, Thread: pr, Text: "@superagent please review"}, "", 0, false},
		{"not addressed", tickets.Card{Source: tickets.SourceGitHub, Thread: pr, Text: "review"}, "", 0, false},
		{"feishu with a link", tickets.Card{Source: tickets.SourceFeishu, Addressed: true, Thread: chat,
			Text: "@_user_1 review https://github.com/octo/widgets/pull/7 please"}, "octo/widgets", 7, true},
		{"feishu without a link", tickets.Card{Source: tickets.SourceFeishu, Addressed: true, Thread: chat, Text: "@_user_1 review the parser"}, "", 0, false},
		{"feishu with an issue link", tickets.Card{Source: tickets.SourceFeishu, Addressed: true, Thread: chat,
			Text: "review https://github.com/octo/widgets/issues/7"}, "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, n, ok := tickets.ReviewRequest(tc.card)
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, tc.repo, repo)
				require.Equal(t, tc.number, n)
			}
		})
	}
}
