package orchestrator_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/tickets"
)

// A Feishu request opens work in a repository through the chat's list of
// repositories or the person's linked GitHub login; a linked reader and
// an unlinked member are refused with the reason, which the model reads
// and the card keeps.
func TestFeishuRequesterMayOpen(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		folks := people.New(d, nil)
		open := map[string][]string{"oc_team": {"octo/repo"}}
		e := setup(t, d, nil)
		e.deps = func(deps *orchestrator.Deps) {
			deps.People = folks
			deps.ChatRepos = func(_ context.Context, _ db.Querier, chat string) ([]string, error) { return open[chat], nil }
		}
		e.o = e.orchestrator(t)
		seed.Installation(t, d, installation+1, "octo/other")
		e.gh.SetPermission("octo/other", "wendy", "write")
		e.gh.SetPermission("octo/other", "rick", "read")
		_, err := folks.Create(ctx, people.Person{Name: "Wendy", GitHub: []string{"wendy"}, FeishuOpenIDs: []string{"ou_wendy"}})
		require.NoError(t, err)
		_, err = folks.Create(ctx, people.Person{Name: "Rick", GitHub: []string{"rick"}, FeishuOpenIDs: []string{"ou_rick"}})
		require.NoError(t, err)

		admit := func(who string, n int) tickets.Card {
			t.Helper()
			var c tickets.Card
			thread := tickets.Thread{Source: tickets.SourceFeishu, Key: fmt.Sprintf("feishu:oc_team/om_%d", n), Repo: "oc_team"}
			require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
				nc := tickets.NewCard{Source: tickets.SourceFeishu, Kind: "message", Thread: thread, Addressed: true, AddressedWhy: "mention",
					Author: tickets.Author{ID: who, Type: tickets.AuthorUser}, Text: "@_user_1 fix the flaky test"}
				nc.DeliveryID = seed.Delivery(t, tx, "p"+itoa(e.seq.Add(1)))
				c, err = e.store.Admit(ctx, tx, nc, 0, e.o)
				return err
			}))
			return c
		}
		stranger := admit("ou_stranger", 1) // the chat opens octo/repo to anyone in it
		unlinked := admit("ou_stranger", 2)
		wendy := admit("ou_wendy", 3)
		rick := admit("ou_rick", 4)
		e.model.Push(fakeopenai.Calls(route("feishu",
			orchestrator.Decision{Candidate: stranger.ID, Action: "new", Title: "Flaky test", Repo: "octo/repo"},
			orchestrator.Decision{Candidate: unlinked.ID, Action: "new", Title: "Flaky test", Repo: "octo/other"},
			orchestrator.Decision{Candidate: wendy.ID, Action: "new", Title: "Flaky test", Repo: "octo/other"},
			orchestrator.Decision{Candidate: rick.ID, Action: "new", Title: "Flaky test", Repo: "octo/other"})), fakeopenai.Text("ok"))
		e.turn(t)
		result := e.toolResult(t, "feishu")
		require.Contains(t, result, fmt.Sprintf("1. candidate %d: ok (ticket", stranger.ID))
		require.Contains(t, result, fmt.Sprintf("2. candidate %d: refused: The requester has no linked GitHub login and this chat does not open octo/other, so I cannot open work there", unlinked.ID))
		require.Contains(t, result, fmt.Sprintf("3. candidate %d: ok (ticket", wendy.ID))
		require.Contains(t, result, fmt.Sprintf("4. candidate %d: refused: Rick's GitHub permission on octo/other is read (as rick) and write or higher is needed to open work there", rick.ID))
		require.Equal(t, 2, e.ticketCount(t))
		var refusal string
		require.NoError(t, d.QueryRow(ctx, `SELECT route_refusal FROM cards WHERE id = $1`, rick.ID).Scan(&refusal))
		require.Contains(t, refusal, "Rick's GitHub permission on octo/other is read", "the card keeps the reason")
	})
}

// A Feishu requester refused for want of a linked GitHub login is sent
// the link to prove theirs privately, in their own chat with the bot;
// the thread and the model read only that it was sent, never the link,
// which the whole group (and the model) would otherwise hold.
func TestLinkOfferGoesOnlyToTheRequester(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		const link = "https://superagent.example/oauth/github/link?t=offer-for-"
		e := setup(t, d, func(c *orchestrator.Config) {
			c.LinkURL = func(openID string) string { return link + openID }
		})
		e.deps = func(deps *orchestrator.Deps) { deps.People = people.New(d, nil) }
		e.o = e.orchestrator(t)
		seed.Installation(t, d, installation+1, "octo/other")
		// The request is a real group message, so the refusal has a
		// message to answer in the thread.
		body, err := os.ReadFile("../internal/feishu/testdata/im.message.receive_v1.group_mention.json")
		require.NoError(t, err)
		const asked = "om_5ce6d572455d361153b7cb51da133945"
		require.Contains(t, string(body), asked)
		e.fs.AddMessage(fakefeishu.Message{ID: asked, ChatID: "oc_team", MsgType: "text", Content: `{"text":"@_user_1 fix the flaky test"}`})
		var c tickets.Card
		thread := tickets.Thread{Source: tickets.SourceFeishu, Key: "feishu:oc_team/om_ask", Repo: "oc_team"}
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			nc := tickets.NewCard{Source: tickets.SourceFeishu, Kind: "message", Thread: thread, Addressed: true, AddressedWhy: "mention",
				Author: tickets.Author{ID: "ou_rita", Name: "Rita", Type: tickets.AuthorUser}, Text: "@_user_1 fix the flaky test"}
			nc.DeliveryID = seed.FeishuDelivery(t, tx, "offer-1", body)
			c, err = e.store.Admit(ctx, tx, nc, 0, e.o)
			return err
		}))
		e.model.Push(fakeopenai.Calls(route("feishu",
			orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Flaky test", Repo: "octo/other"})), fakeopenai.Text("ok"))
		e.turn(t)
		result := e.toolResult(t, "feishu")
		require.Contains(t, result, "refused: Rita has no linked GitHub login and this chat does not open octo/other, so I cannot open work there; I have sent them a private message with a link to connect their GitHub account")
		require.NotContains(t, result, link, "the model never holds the link")

		rows, err := d.Query(ctx, `SELECT target, body FROM outgoing_messages WHERE card_id = $1 ORDER BY id`, c.ID)
		require.NoError(t, err)
		bodies := map[string]string{}
		for rows.Next() {
			var target, body string
			require.NoError(t, rows.Scan(&target, &body))
			bodies[target] = body
		}
		rows.Close()
		require.Len(t, bodies, 2, "the refusal in the thread and the private offer: %v", bodies)
		require.Contains(t, bodies["feishu:user/ou_rita"], link+"ou_rita")
		for target, body := range bodies {
			if target != "feishu:user/ou_rita" {
				require.NotContains(t, body, link, "the thread's message holds no link")
				require.Contains(t, body, "I have sent them a private message")
			}
		}
		var private []string
		require.Len(t, e.fs.Messages(), 2, "both were delivered")
		for _, m := range e.fs.Messages() {
			if m.ToOpenID != "" {
				require.Equal(t, "ou_rita", m.ToOpenID)
				private = append(private, m.Content)
			} else {
				require.NotContains(t, m.Content, link, "nothing sent to the group holds the link")
			}
		}
		require.Len(t, private, 1, "sent privately, once")
		require.Contains(t, private[0], link+"ou_rita")
		require.Empty(t, e.fs.Violations())
	})
}
