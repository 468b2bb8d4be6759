package orchestrator_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/tickets"
)

// "@bot review" makes a review Ticket — replies and one review, no
// pushes — that follows the pull request it reviews, whether it was asked
// on the pull request or in Feishu with its link; a Feishu request routed
// to another repository than the link's is refused with the fix.
func TestReviewRequestsMakeReviewTickets(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		e.deps = func(deps *orchestrator.Deps) {
			deps.ChatRepos = func(context.Context, db.Querier, string) ([]string, error) { return []string{"octo/repo"}, nil }
		}
		e.o = e.orchestrator(t)
		follows := func(ticketID int64) []string {
			ths, err := e.store.TicketThreads(ctx, d, ticketID)
			require.NoError(t, err)
			var keys []string
			for _, th := range ths {
				keys = append(keys, th.Key)
			}
			return keys
		}

		onPull := e.admit(t, request(14, "review"))
		plain := e.admit(t, request(15, "please fix the flaky test"))
		e.model.Push(fakeopenai.Calls(route("gh",
			orchestrator.Decision{Candidate: onPull.ID, Action: "new", Title: "Review #14"},
			orchestrator.Decision{Candidate: plain.ID, Action: "new", Title: "Fix the flaky test"})), fakeopenai.Text("ok"))
		e.turn(t)
		review, err := e.store.TicketBySourceCard(ctx, d, onPull.ID)
		require.NoError(t, err)
		require.True(t, tickets.IsReview(review))
		require.Equal(t, []string{"reply", "review"}, review.Mandate.Actions, "no branch: it never pushes")
		require.Equal(t, []string{"github:octo/repo#14"}, follows(review.ID))
		other, err := e.store.TicketBySourceCard(ctx, d, plain.ID)
		require.NoError(t, err)
		require.False(t, tickets.IsReview(other))
		require.Contains(t, other.Mandate.Actions, "branch")

		body, err := os.ReadFile("../internal/feishu/testdata/im.message.receive_v1.group_mention.json")
		require.NoError(t, err)
		e.fs.AddMessage(fakefeishu.Message{ID: "om_review", ChatID: "oc_team", MsgType: "text", Content: `{"text":"review"}`})
		admit := func(name, text string) tickets.Card {
			var c tickets.Card
			delivery := seed.FeishuDelivery(t, d, name, body)
			require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
				c, err = e.store.Admit(ctx, tx, tickets.NewCard{DeliveryID: delivery, Source: tickets.SourceFeishu, Kind: "message",
					Thread: tickets.Thread{Source: tickets.SourceFeishu, Key: "feishu:oc_team/" + name, Repo: "oc_team"},
					Author: tickets.Author{ID: "ou_member", Type: tickets.AuthorUser}, Addressed: true, AddressedWhy: "mention", Text: text}, 0, e.o)
				return err
			}))
			return c
		}
		wrong := admit("om_wrong", "@_user_1 review https://github.com/octo/other/pull/3")
		right := admit("om_right", "@_user_1 review https://github.com/octo/repo/pull/9 please")
		e.model.Push(fakeopenai.Calls(route("fs",
			orchestrator.Decision{Candidate: wrong.ID, Action: "new", Title: "Review other#3", Repo: "octo/repo"},
			orchestrator.Decision{Candidate: right.ID, Action: "new", Title: "Review #9", Repo: "octo/repo"})), fakeopenai.Text("ok"))
		e.turn(t)
		require.Contains(t, e.toolResult(t, "fs"), "refused: the pull request to review, octo/other#3, is not in octo/repo: route it with repo octo/other")
		fromChat, err := e.store.TicketBySourceCard(ctx, d, right.ID)
		require.NoError(t, err)
		require.True(t, tickets.IsReview(fromChat))
		require.ElementsMatch(t, []string{"feishu:oc_team/om_right", "github:octo/repo#9"}, follows(fromChat.ID),
			"replies in the review's threads reach it")
	})
}
