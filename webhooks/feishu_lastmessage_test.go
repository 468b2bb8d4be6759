package webhooks_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

// A known chat remembers when its last message arrived, addressed to the
// bot or not, for the panel's list of chats; a message from an unknown
// chat adds no chat.
func TestFeishuChatLastMessage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setupFeishu(t, d)
		ctx := context.Background()
		const chat = "oc_413871aeaf28e4ebd5a3a7e4a1b4e0c7"
		e.deliverLark(t, larkFixture(t, "extra.im.chat.member.bot.added_v1.json"), "event:d1c2d3e4f5a60718293a4b5c6d7e8f92")
		chats, err := e.svc.FeishuChats(ctx)
		require.NoError(t, err)
		require.Len(t, chats, 1)
		require.Nil(t, chats[0].LastMessageAt)

		before := time.Now()
		e.deliverLark(t, patch(t, larkFixture(t, "im.message.receive_v1.p2p.json"), func(m map[string]any) {
			obj(m, "event", "message")["chat_id"] = chat
		}), "message:om_a1b2c3d4e5f60718293a4b5c6d7e8f90")
		e.deliverLark(t, patch(t, larkFixture(t, "im.message.receive_v1.p2p.json"), func(m map[string]any) {
			obj(m, "header")["event_id"] = "ev_elsewhere"
			obj(m, "event", "message")["message_id"] = "om_elsewhere0000000000000000000000"
		}), "message:om_elsewhere0000000000000000000000")
		chats, err = e.svc.FeishuChats(ctx)
		require.NoError(t, err)
		require.Len(t, chats, 1, "a message adds no chat")
		require.NotNil(t, chats[0].LastMessageAt)
		require.WithinRange(t, *chats[0].LastMessageAt, before.Add(-time.Second), time.Now().Add(time.Second))
	})
}
