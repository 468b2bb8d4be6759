package feishu_test

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/feishu"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

func ms(v int64) time.Time { return time.UnixMilli(v).UTC() }

func TestParseFixtures(t *testing.T) {
	const (
		tom    = "ou_84aad35d084aa403a838cf73ee18467"
		alice  = "ou_0f1e2d3c4b5a69788796a5b4c3d2e1f0"
		tenant = "2ca1d211f64f6438"
		app    = "cli_9f5343c580712544"
	)
	tests := []struct {
		fixture string
		bot     string
		want    *feishu.Event
		key     string
	}{
		{
			fixture: "im.message.receive_v1.group_mention.json",
			bot:     tom, // the fixture's only mention; treat it as the bot
			key:     "message:om_5ce6d572455d361153b7cb51da133945",
			want: &feishu.Event{
				ID: "5e3702a84e847582be8db7fb73283c02", Type: feishu.EventMessageReceived,
				CreateTime: ms(1608725989000), TenantKey: tenant, AppID: app,
				Message: &feishu.Message{
					ID:       "om_5ce6d572455d361153b7cb51da133945",
					RootID:   "om_5ce6d572455d361153b7cb5xxfsdfsdfdsf",
					ParentID: "om_5ce6d572455d361153b7cb5xxfsdfsdfdsf",
					ThreadID: "omt_d4be107c616", ChatID: "oc_5ce6d572455d361153b7xx51da133945",
					ChatType: feishu.ChatGroup, Type: "text", CreateTime: ms(1609073151345),
					Sender: feishu.Sender{OpenID: tom, UnionID: "on_8ed6aa67826108097d9ee143816345",
						UserID: "e33ggbyz", Type: "user", TenantKey: "736588c9260f175e"},
					Mentions: []feishu.Mention{{Key: "@_user_1", OpenID: tom,
						UnionID: "on_8ed6aa67826108097d9ee143816345", UserID: "e33ggbyz", Name: "Tom", IsBot: true}},
					MentionsBot: true,
					Text:        "@Tom hello",
					Content:     `{"text":"@_user_1 hello"}`,
				},
			},
		},
		{
			fixture: "im.message.receive_v1.p2p.json",
			bot:     fakefeishu.BotOpenID,
			key:     "message:om_a1b2c3d4e5f60718293a4b5c6d7e8f90",
			want: &feishu.Event{
				ID: "f7984f25108f8137722bb63cee927e66", Type: feishu.EventMessageReceived,
				CreateTime: ms(1700000000000), TenantKey: tenant, AppID: app,
				Message: &feishu.Message{
					ID: "om_a1b2c3d4e5f60718293a4b5c6d7e8f90", ChatID: "oc_a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5",
					ChatType: feishu.ChatP2P, Type: "text", CreateTime: ms(1700000000000),
					Sender: feishu.Sender{OpenID: alice, UnionID: "on_1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d",
						UserID: "a1b2c3d4", Type: "user", TenantKey: "736588c9260f175e"},
					Text:    "please fix the flaky login test in acme/web",
					Content: `{"text":"please fix the flaky login test in acme/web"}`,
				},
			},
		},
		{
			fixture: "card.action.trigger.json",
			key:     "event:0f3a6c5e2b8d4f1a9c7e6b5d4a3f2e1d",
			want: &feishu.Event{
				ID: "0f3a6c5e2b8d4f1a9c7e6b5d4a3f2e1d", Type: feishu.EventCardAction,
				CreateTime: ms(1700000100000), TenantKey: tenant, AppID: app,
				CardAction: &feishu.CardAction{
					Value:          json.RawMessage(`{"action": "pause", "ticket": "T-1"}`),
					Tag:            "button",
					OperatorOpenID: tom, OperatorUserID: "e33ggbyz",
					MessageID: "om_3b8e9c7d6a5f4e3d2c1b0a9f8e7d6c5b", ChatID: "oc_5ce6d572455d361153b7xx51da133945",
					Token: "c-295ee57f3a2b4a1c9f5e8d7c6b5a4f3e2d1c0b9a",
				},
			},
		},
		{
			fixture: "extra.im.message.receive_v1.post_thread.json",
			bot:     fakefeishu.BotOpenID,
			key:     "message:om_c0ffee0000000000000000000000post",
			want: &feishu.Event{
				ID: "b1c2d3e4f5a60718293a4b5c6d7e8f90", Type: feishu.EventMessageReceived,
				CreateTime: ms(1700000200000), TenantKey: tenant, AppID: app,
				Message: &feishu.Message{
					ID:       "om_c0ffee0000000000000000000000post",
					RootID:   "om_5ce6d572455d361153b7cb51da133945",
					ParentID: "om_5ce6d572455d361153b7cb51da133945",
					ThreadID: "omt_d4be107c616", ChatID: "oc_5ce6d572455d361153b7xx51da133945",
					ChatType: feishu.ChatGroup, Type: "post", CreateTime: ms(1700000200000),
					Sender: feishu.Sender{OpenID: alice, UnionID: "on_1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d",
						Type: "user", TenantKey: tenant},
					Mentions: []feishu.Mention{
						{Key: "@_user_1", OpenID: fakefeishu.BotOpenID, Name: "superagent", IsBot: true},
						{Key: "@_user_2", OpenID: tom, UnionID: "on_8ed6aa67826108097d9ee143816345", UserID: "e33ggbyz", Name: "Tom"},
					},
					MentionsBot: true,
					Text: "CI is red\n" +
						"@superagent please look at PR 7 (https://github.com/acme/web/pull/7) with @Tom\n" +
						"[image]\n" +
						"```go\nt.Fatal(err)\n```\n" +
						":SMILE:",
					Attachments: []feishu.Attachment{{Kind: "image", MessageID: "om_c0ffee0000000000000000000000post",
						FileKey: "img_v2_041b28e3-5680-48c2-9af2-497ace79333g", ResourceType: "image"}},
				},
			},
		},
		{
			fixture: "extra.im.message.receive_v1.file_p2p.json",
			bot:     fakefeishu.BotOpenID,
			key:     "message:om_c0ffee00000000000000000000000file",
			want: &feishu.Event{
				ID: "c1c2d3e4f5a60718293a4b5c6d7e8f91", Type: feishu.EventMessageReceived,
				CreateTime: ms(1700000300000), TenantKey: tenant, AppID: app,
				Message: &feishu.Message{
					ID: "om_c0ffee00000000000000000000000file", ChatID: "oc_a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5",
					ChatType: feishu.ChatP2P, Type: "file", CreateTime: ms(1700000300000),
					Sender: feishu.Sender{OpenID: alice, UnionID: "on_1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d",
						Type: "user", TenantKey: tenant},
					Text: "[file: build.log]",
					Attachments: []feishu.Attachment{{Kind: "file", MessageID: "om_c0ffee00000000000000000000000file",
						FileKey: "file_v2_d4be107c-6164-4d3c-8ed5-000000000000", ResourceType: "file", Name: "build.log"}},
				},
			},
		},
		{
			fixture: "extra.im.chat.member.bot.added_v1.json",
			key:     "event:d1c2d3e4f5a60718293a4b5c6d7e8f92",
			want: &feishu.Event{
				ID: "d1c2d3e4f5a60718293a4b5c6d7e8f92", Type: feishu.EventBotAdded,
				CreateTime: ms(1700000400000), TenantKey: tenant, AppID: app,
				Chat: &feishu.ChatMembership{ChatID: "oc_413871aeaf28e4ebd5a3a7e4a1b4e0c7", Name: "web team",
					Added: true, OperatorOpenID: tom},
			},
		},
		{
			fixture: "extra.im.chat.member.bot.deleted_v1.json",
			key:     "event:e1c2d3e4f5a60718293a4b5c6d7e8f93",
			want: &feishu.Event{
				ID: "e1c2d3e4f5a60718293a4b5c6d7e8f93", Type: feishu.EventBotDeleted,
				CreateTime: ms(1700000400000), TenantKey: tenant, AppID: app,
				Chat: &feishu.ChatMembership{ChatID: "oc_413871aeaf28e4ebd5a3a7e4a1b4e0c7", Name: "web team",
					OperatorOpenID: tom},
			},
		},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.fixture] = true
		t.Run(tt.fixture, func(t *testing.T) {
			// Through the whole inbound path: encrypted, signed, verified, parsed.
			body := fakefeishu.EncryptedBody(testEncryptKey, readFixture(t, tt.fixture))
			in, err := newVerifier(t).Open(signed(body, testNow), body)
			require.NoError(t, err)
			got, err := feishu.Parse(in.Plain, feishu.ParseOptions{BotOpenID: tt.bot})
			require.NoError(t, err)
			if tt.want.CardAction != nil {
				require.JSONEq(t, string(tt.want.CardAction.Value), string(got.CardAction.Value))
				tt.want.CardAction.Value = got.CardAction.Value
			}
			if tt.want.Message != nil && tt.want.Message.Content == "" {
				// Raw content is checked for the fixtures that spell it out.
				tt.want.Message.Content = got.Message.Content
			}
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.key, got.DedupeKey())
		})
	}
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	for _, f := range files {
		if name := filepath.Base(f); name != "url_verification.json" {
			require.True(t, seen[name], "fixture %s has no expected result", name)
		}
	}
}

func TestParseBotMentionNeedsBotOpenID(t *testing.T) {
	plain := readFixture(t, "im.message.receive_v1.group_mention.json")
	ev, err := feishu.Parse(plain, feishu.ParseOptions{})
	require.NoError(t, err)
	require.False(t, ev.Message.MentionsBot)
	ev, err = feishu.Parse(plain, feishu.ParseOptions{BotOpenID: fakefeishu.BotOpenID})
	require.NoError(t, err)
	require.False(t, ev.Message.MentionsBot)
	require.Equal(t, "om_5ce6d572455d361153b7cb5xxfsdfsdfdsf", ev.Message.ThreadKey())
	p2p, err := feishu.Parse(readFixture(t, "im.message.receive_v1.p2p.json"), feishu.ParseOptions{})
	require.NoError(t, err)
	require.Equal(t, "om_a1b2c3d4e5f60718293a4b5c6d7e8f90", p2p.Message.ThreadKey())
}

func TestCardActionValue(t *testing.T) {
	ev, err := feishu.Parse(readFixture(t, "card.action.trigger.json"), feishu.ParseOptions{})
	require.NoError(t, err)
	require.Equal(t, "pause", ev.CardAction.ValueString("action"))
	require.Equal(t, "T-1", ev.CardAction.ValueString("ticket"))
	require.Empty(t, ev.CardAction.ValueString("missing"))
	b, err := json.Marshal(feishu.CardActionResponse{Toast: &feishu.Toast{Type: "success", Content: "Paused"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"toast":{"type":"success","content":"Paused"}}`, string(b))
	b, err = json.Marshal(feishu.CardActionResponse{})
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(b))
}

func textEvent(content string, mentions string) []byte {
	c, _ := json.Marshal(content)
	return []byte(`{"schema":"2.0","header":{"event_id":"e1","event_type":"im.message.receive_v1"},
		"event":{"sender":{"sender_id":{"open_id":"ou_x"},"sender_type":"user"},
		"message":{"message_id":"om_1","chat_id":"oc_1","chat_type":"group","message_type":"text",
		"content":` + string(c) + `,"mentions":[` + mentions + `]}}}`)
}

func TestParseTextMentions(t *testing.T) {
	var ms []string
	for i := 1; i <= 11; i++ {
		ms = append(ms, `{"key":"@_user_`+itoa(i)+`","id":{"open_id":"ou_`+itoa(i)+`"},"name":"P`+itoa(i)+`"}`)
	}
	ev, err := feishu.Parse(textEvent(`{"text":"@_user_1 @_user_10 @_user_11 @_all hi"}`, strings.Join(ms, ",")), feishu.ParseOptions{})
	require.NoError(t, err)
	require.Equal(t, "@P1 @P10 @P11 @all hi", ev.Message.Text)
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestParseLenient(t *testing.T) {
	// Unreadable content still parses; the text is the raw content.
	ev, err := feishu.Parse(textEvent(`not json`, ""), feishu.ParseOptions{})
	require.NoError(t, err)
	require.Equal(t, "not json", ev.Message.Text)

	for name, in := range map[string]string{
		"not JSON":           `nope`,
		"schema 1.0":         `{"uuid":"u","event":{"type":"message"}}`,
		"no event id":        `{"schema":"2.0","header":{"event_type":"x"}}`,
		"message without id": `{"schema":"2.0","header":{"event_id":"1","event_type":"im.message.receive_v1"},"event":{"message":{}}}`,
		"message wrong type": `{"schema":"2.0","header":{"event_id":"1","event_type":"im.message.receive_v1"},"event":{"message":[]}}`,
		"bot added no chat":  `{"schema":"2.0","header":{"event_id":"1","event_type":"im.chat.member.bot.added_v1"},"event":{}}`,
	} {
		_, err := feishu.Parse([]byte(in), feishu.ParseOptions{})
		require.ErrorIs(t, err, feishu.ErrMalformed, name)
	}
	// Unknown event types parse with the header only.
	ev, err = feishu.Parse([]byte(`{"schema":"2.0","header":{"event_id":"9","event_type":"im.message.reaction.created_v1"},"event":{}}`), feishu.ParseOptions{})
	require.NoError(t, err)
	require.Nil(t, ev.Message)
	require.Equal(t, "event:9", ev.DedupeKey())
}
