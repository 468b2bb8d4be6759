package webhooks_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/tickets"
	"github.com/superagent-dev/superagent/webhooks"
)

// The same group message that does not address the bot is a candidate in
// a chat that opted in to proactive admission, and dropped in another.
func TestFeishuProactiveChats(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setupFeishu(t, d)
		const optedIn, other = "oc_proactive000000000000000000001", "oc_5ce6d572455d361153b7xx51da133945"
		put := func(chat, body string) (int, string) {
			t.Helper()
			req, err := http.NewRequest(http.MethodPut, e.srv.URL+"/api/feishu/chats/"+chat, bytes.NewBufferString(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			return e.do(t, req)
		}
		status, body := put(optedIn, `{"proactive": true}`)
		require.Equal(t, http.StatusOK, status, body)
		var chat webhooks.FeishuChat
		require.NoError(t, json.Unmarshal([]byte(body), &chat))
		require.True(t, chat.Proactive)
		require.False(t, chat.Active, "the bot-added event has not come yet")
		status, _ = put(other, `{}`)
		require.Equal(t, http.StatusBadRequest, status)
		status, _ = put("not-a-chat", `{"proactive": true}`)
		require.Equal(t, http.StatusBadRequest, status)

		message := func(chat, id string) webhooks.Delivery {
			t.Helper()
			// It mentions someone else, not the bot.
			plain := patch(t, larkFixture(t, "im.message.receive_v1.group_mention.json"), func(m map[string]any) {
				obj(m, "header")["event_id"] = "ev_" + id
				obj(m, "event", "message")["message_id"] = id
				obj(m, "event", "message")["chat_id"] = chat
			})
			return e.deliverLark(t, plain, "message:"+id)
		}
		got := message(optedIn, "om_proactive_1")
		require.Equal(t, webhooks.DeliveryProcessed, got.State, got.Error)
		c := e.card(t, got.ID)
		require.False(t, c.Addressed)
		require.Equal(t, tickets.CardCandidate, c.State)
		require.Contains(t, tickets.Render(c), "not addressed to the bot")

		got = message(other, "om_proactive_2")
		require.Equal(t, webhooks.DeliveryIgnored, got.State)
		require.Contains(t, got.Error, "not addressed")

		// Opting out restores the default.
		status, body = put(optedIn, `{"proactive": false}`)
		require.Equal(t, http.StatusOK, status, body)
		got = message(optedIn, "om_proactive_3")
		require.Equal(t, webhooks.DeliveryIgnored, got.State)

		// A bot-added event after the opt-in keeps it.
		const added = "oc_413871aeaf28e4ebd5a3a7e4a1b4e0c7"
		status, _ = put(added, `{"proactive": true}`)
		require.Equal(t, http.StatusOK, status)
		got = e.deliverLark(t, larkFixture(t, "extra.im.chat.member.bot.added_v1.json"), "event:d1c2d3e4f5a60718293a4b5c6d7e8f92")
		require.Equal(t, webhooks.DeliveryProcessed, got.State, got.Error)
		resp, err := http.Get(e.srv.URL + "/api/feishu/chats")
		require.NoError(t, err)
		defer resp.Body.Close()
		var chats []webhooks.FeishuChat
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&chats))
		require.Len(t, chats, 2)
		require.Equal(t, added, chats[0].ChatID)
		require.True(t, chats[0].Active)
		require.True(t, chats[0].Proactive)
	})
}
