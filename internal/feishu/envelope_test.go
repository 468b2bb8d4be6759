package feishu_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	larkcallback "github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/feishu"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

// Envelopes of both schemas, encrypted and not, built from the SDK's own
// types, through the whole inbound path.
func TestEnvelopesFromTheSDKsTypes(t *testing.T) {
	str := func(s string) *string { return &s }
	message := &larkim.P2MessageReceiveV1Data{
		Sender: &larkim.EventSender{SenderId: &larkim.UserId{OpenId: str("ou_alice")}, SenderType: str("user"), TenantKey: str("t1")},
		Message: &larkim.EventMessage{
			MessageId: str("om_sdk1"), ChatId: str("oc_sdk"), ChatType: str("group"), MessageType: str("text"),
			CreateTime: str(strconv.FormatInt(testNow.UnixMilli(), 10)),
			Content:    str(`{"text":"@_user_1 fix the build"}`),
			Mentions: []*larkim.MentionEvent{{Key: str("@_user_1"), Name: str("superagent"),
				Id: &larkim.UserId{OpenId: str(fakefeishu.BotOpenID)}, TenantKey: str("t1")}},
		},
	}
	v2 := fakefeishu.EventV2(larkevent.EventHeader{EventID: "ev_sdk1", EventType: feishu.EventMessageReceived,
		AppID: "cli_9f5343c580712544", TenantKey: "t1", CreateTime: strconv.FormatInt(testNow.UnixMilli(), 10), Token: testToken}, message)
	v1 := fakefeishu.EventV1(larkevent.EventBase{Ts: "1700000000.000000", UUID: "u-sdk1", Token: testToken},
		&larkim.P1MessageReceiveV1Data{Type: "message", AppID: "cli_9f5343c580712544", TenantKey: "t1", OpenChatID: "oc_sdk",
			OpenID: "ou_alice", MsgType: "text", Text: "fix the build", OpenMessageID: "om_sdk1"})

	t.Run("v2 encrypted", func(t *testing.T) {
		body := fakefeishu.EncryptedBody(testEncryptKey, v2)
		in, err := newVerifier(t).Open(signed(body, testNow), body)
		require.NoError(t, err)
		require.Equal(t, "ev_sdk1", in.EventID)
		ev, err := feishu.Parse(in.Plain, feishu.ParseOptions{BotOpenID: fakefeishu.BotOpenID})
		require.NoError(t, err)
		require.Equal(t, "om_sdk1", ev.Message.ID)
		require.Equal(t, "ou_alice", ev.Message.Sender.OpenID)
		require.True(t, ev.Message.MentionsBot)
		require.Equal(t, "@superagent fix the build", ev.Message.Text)
	})
	t.Run("v2 plain is refused", func(t *testing.T) {
		_, err := newVerifier(t).Open(signed(v2, testNow), v2)
		require.ErrorIs(t, err, feishu.ErrNotEncrypted)
	})
	t.Run("v1 encrypted passes the token check and is refused as schema 1.0", func(t *testing.T) {
		body := fakefeishu.EncryptedBody(testEncryptKey, v1)
		in, err := newVerifier(t).Open(signed(body, testNow), body)
		require.NoError(t, err)
		_, err = feishu.Parse(in.Plain, feishu.ParseOptions{})
		require.ErrorIs(t, err, feishu.ErrMalformed)
		require.ErrorContains(t, err, "not a schema 2.0 event")

		forged := fakefeishu.EncryptedBody(testEncryptKey, fakefeishu.EventV1(larkevent.EventBase{UUID: "u2", Token: "wrong"}, nil))
		_, err = newVerifier(t).Open(signed(forged, testNow), forged)
		require.ErrorIs(t, err, feishu.ErrBadToken)
	})
	t.Run("v1 plain is refused", func(t *testing.T) {
		_, err := newVerifier(t).Open(signed(v1, testNow), v1)
		require.ErrorIs(t, err, feishu.ErrNotEncrypted)
	})
}

// Every Feishu event fixture (this package's and the webhooks package's
// copies) decodes into the SDK's type for its event
// with no field the SDK does not know.
func TestFixturesDecodeStrictlyIntoTheSDKsTypes(t *testing.T) {
	types := map[string]func() any{
		feishu.EventMessageReceived: func() any { return &larkim.P2MessageReceiveV1{} },
		feishu.EventBotAdded:        func() any { return &larkim.P2ChatMemberBotAddedV1{} },
		feishu.EventBotDeleted:      func() any { return &larkim.P2ChatMemberBotDeletedV1{} },
		"card.action.trigger":       func() any { return &larkcallback.CardActionTriggerEvent{} },
		"url_verification":          func() any { return &larkevent.EventFuzzy{} }, // what the SDK reads a challenge into
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	copies, err := filepath.Glob(filepath.Join("..", "..", "webhooks", "testdata", "feishu", "*.json"))
	require.NoError(t, err)
	files = append(files, copies...)
	require.NotEmpty(t, files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var head struct {
			Type   string `json:"type"`
			Header struct {
				EventType string `json:"event_type"`
			} `json:"header"`
		}
		require.NoError(t, json.Unmarshal(raw, &head))
		kind := head.Header.EventType
		if kind == "" {
			kind = head.Type
		}
		newType, ok := types[kind]
		require.True(t, ok, "%s: no SDK type for %q", f, kind)
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		require.NoError(t, d.Decode(newType()), f)
	}
}
