package feishu_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

func TestPlantedWrongRequests(t *testing.T) {
	srv := fakefeishu.New(t)
	parent := srv.AddMessage(fakefeishu.Message{ChatID: "oc_1", Content: `{"text":"hi"}`})
	for _, tc := range []struct {
		name, method, path string
		body               any
		want               string
	}{
		{"misspelt field", http.MethodPost, "/open-apis/im/v1/messages/" + parent.ID + "/reply",
			map[string]any{"msg_type": "text", "content": `{"text":"x"}`, "reply_in_thead": true},
			"POST /open-apis/im/v1/messages/" + parent.ID + "/reply (im.v1.message.reply): request body: additional properties 'reply_in_thead' not allowed"},
		{"missing field", http.MethodPost, "/open-apis/im/v1/messages?receive_id_type=chat_id",
			map[string]any{"msg_type": "text", "content": `{"text":"x"}`},
			"(im.v1.message.create): request body: missing property 'receive_id'"},
		{"wrong type", http.MethodPost, "/open-apis/im/v1/messages/" + parent.ID + "/reply",
			map[string]any{"msg_type": "text", "content": map[string]string{"text": "x"}},
			"request body at /content: got object, want string"},
		{"query enum", http.MethodPost, "/open-apis/im/v1/messages?receive_id_type=group",
			map[string]any{"receive_id": "oc_1", "msg_type": "text", "content": `{"text":"x"}`},
			"query at /receive_id_type: value must be one of 'open_id', 'union_id', 'user_id', 'email', 'chat_id'"},
		{"missing query", http.MethodPost, "/open-apis/im/v1/messages",
			map[string]any{"receive_id": "oc_1", "msg_type": "text", "content": `{"text":"x"}`},
			"query: missing property 'receive_id_type'"},
		{"nested", http.MethodPost, "/open-apis/im/v1/messages/" + parent.ID + "/reactions",
			map[string]any{"reaction_type": map[string]any{"emoji": "OK"}},
			"request body at /reaction_type: missing property 'emoji_type'"},
		{"undocumented path", http.MethodPost, "/open-apis/im/v1/messages/" + parent.ID + "/pin", map[string]any{},
			"POST /open-apis/im/v1/messages/" + parent.ID + "/pin (undocumented): route"},
		{"body where none is taken", http.MethodGet, "/open-apis/bot/v3/info", map[string]any{"x": 1},
			"(bot.v3.info): request body: this call takes no body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := srv.Expect(func() { call(t, srv, tc.method, tc.path, fakefeishu.Token, tc.body) })
			require.NotEmpty(t, v)
			require.Contains(t, v[0].String(), tc.want)
		})
	}
	require.Empty(t, srv.Expect(func() {
		call(t, srv, http.MethodPost, "/open-apis/im/v1/messages/"+parent.ID+"/reply", fakefeishu.Token,
			map[string]any{"msg_type": "text", "content": `{"text":"ok"}`, "reply_in_thread": true, "uuid": "u-1"})
	}), "a well-formed reply, and the fake's answer, pass")
}

func TestCallsListed(t *testing.T) {
	cs, err := fakefeishu.Calls()
	require.NoError(t, err)
	require.Contains(t, cs, "im.v1.message.create POST /open-apis/im/v1/messages")
	require.Contains(t, cs, "bot.v3.info GET /open-apis/bot/v3/info")
}
