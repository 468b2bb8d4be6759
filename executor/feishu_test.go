package executor_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/tickets"
)

// A request from a Feishu group: the Executor confirms under the person's
// message, in the thread; a chat message over 100 words is refused and
// nothing of it is sent.
func TestFeishuRepliesGoUnderTheMessageAndStayShort(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		long := strings.TrimSpace(strings.Repeat("word ", 101))
		e := setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply {
			switch len(steps(req)) {
			case 0:
				return call("reply", `{"purpose":"answer","in_reply_to":`+firstCard(req)+`,"text":"`+long+`"}`)
			case 1:
				return call("reply", `{"purpose":"confirm","in_reply_to":`+firstCard(req)+`,"text":"I will fix the typo in README.md of octo/hello and open a pull request."}`)
			}
			return fakeopenai.Text("stopping here")
		})
		fs := fakefeishu.New(t)
		t.Cleanup(fs.Close)
		var err error
		e.fsc, err = feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: fs.URL, ChatInterval: -1}, nil, nil)
		require.NoError(t, err)
		e.x = e.executor(t)

		ctx := context.Background()
		body, err := os.ReadFile("../internal/feishu/testdata/im.message.receive_v1.group_mention.json")
		require.NoError(t, err)
		var ev struct {
			Event struct {
				Message struct {
					ID     string `json:"message_id"`
					ChatID string `json:"chat_id"`
				} `json:"message"`
			} `json:"event"`
		}
		require.NoError(t, json.Unmarshal(body, &ev))
		msg := ev.Event.Message
		fs.AddMessage(fakefeishu.Message{ID: msg.ID, ChatID: msg.ChatID, MsgType: "text", Content: `{"text":"please fix the typo"}`})
		delivery := seed.FeishuDelivery(t, d, "fs-exec", body)
		var c tickets.Card
		var tk tickets.Ticket
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			c, err = e.store.Admit(ctx, tx, tickets.NewCard{DeliveryID: delivery, Source: tickets.SourceFeishu, Kind: "message",
				Thread: tickets.Thread{Source: tickets.SourceFeishu, Key: "feishu:" + msg.ChatID + "/" + msg.ID, Repo: msg.ChatID},
				Author: tickets.Author{ID: "ou_member", Type: tickets.AuthorUser}, Addressed: true, AddressedWhy: "mention",
				Text: "@_user_1 please fix the typo in the README of octo/hello"}, 0)
			if err != nil {
				return err
			}
			author := c.Author
			tk, err = e.store.CreateTicket(ctx, tx, tickets.Ticket{Title: "Fix the README typo", Repo: repo, SourceCardID: c.ID,
				Mandate: tickets.Mandate{RequestedBy: &author, Source: "feishu", Repos: []string{repo}, Actions: []string{"reply", "branch", "pull_request"}}})
			if err != nil {
				return err
			}
			if err := e.store.Subscribe(ctx, tx, tk.ID, c.Thread.ID); err != nil {
				return err
			}
			return e.store.SetCardState(ctx, tx, c.ID, tickets.CardRouted, tk.ID)
		}))
		e.run(t, tk.ID)

		ss := steps(e.model.Last())
		require.Len(t, ss, 2)
		require.Contains(t, ss[0].result, "refused: a chat message is at most 100 words; this one is 101")
		require.True(t, strings.HasPrefix(ss[1].result, "sent: feishu:message/"), ss[1].result)

		var sent []fakefeishu.Message
		for _, m := range fs.Messages() {
			if m.SenderType == "app" {
				sent = append(sent, m)
			}
		}
		require.Len(t, sent, 1, "only the confirmation was sent")
		require.Equal(t, msg.ID, sent[0].ParentID, "under the person's message")
		require.Contains(t, sent[0].Content, "I will fix the typo in README.md")
		require.NotContains(t, sent[0].Content, "word word")

		x, err := e.store.Outgoings(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Len(t, x, 1)
		require.Equal(t, tickets.OutgoingSent, x[0].State)
	})
}
