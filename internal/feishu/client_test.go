package feishu_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/feishu"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

// fakeClock advances only when slept on.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.slept = append(c.slept, d)
		c.now = c.now.Add(d)
	}
	return ctx.Err()
}

func (c *fakeClock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

func setup(t *testing.T) (*feishu.Client, *fakefeishu.Server, *fakeClock) {
	t.Helper()
	srv := fakefeishu.New(t)
	clock := &fakeClock{now: testNow}
	c, err := feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: srv.URL}, clock, nil)
	require.NoError(t, err)
	return c, srv, clock
}

func contentText(t *testing.T, content string) string {
	t.Helper()
	var c struct {
		Text string `json:"text"`
	}
	require.NoError(t, json.Unmarshal([]byte(content), &c))
	return c.Text
}

func TestNewRequiresCredentials(t *testing.T) {
	_, err := feishu.New(feishu.Config{}, nil, nil)
	require.ErrorContains(t, err, "app id is required")
	require.ErrorContains(t, err, "app secret is required")
}

func TestClientReplyInThread(t *testing.T) {
	ctx := context.Background()
	c, srv, _ := setup(t)
	parent := srv.AddMessage(fakefeishu.Message{ChatID: "oc_1", Content: `{"text":"hi"}`})

	text, err := feishu.Text(`done "quoted" <at id=all></at> & <b>`, "ou_84aad35d084aa403a838cf73ee18467")
	require.NoError(t, err)
	sent, err := c.Reply(ctx, parent.ID, feishu.OutgoingMessage{UUID: "intent-1", ChatID: "oc_1", Content: text})
	require.NoError(t, err)
	require.Equal(t, parent.ID, sent.ParentID)
	require.Equal(t, parent.ID, sent.RootID)
	require.NotEmpty(t, sent.ThreadID)
	require.Equal(t, "oc_1", sent.ChatID)

	reqs := srv.RequestsTo(http.MethodPost, "/open-apis/im/v1/messages/"+parent.ID+"/reply")
	require.Len(t, reqs, 1)
	body := reqs[0].Body
	require.Equal(t, "intent-1", body["uuid"])
	require.Equal(t, true, body["reply_in_thread"])
	require.Equal(t, "text", body["msg_type"])
	require.Equal(t, `<at user_id="ou_84aad35d084aa403a838cf73ee18467"></at> done "quoted" &lt;at id=all&gt;&lt;/at&gt; &amp; &lt;b&gt;`,
		contentText(t, body["content"].(string)))
	require.Equal(t, "Bearer "+fakefeishu.Token, reqs[0].Header.Get("Authorization"))

	// A retry with the same uuid does not send twice.
	again, err := c.Reply(ctx, parent.ID, feishu.OutgoingMessage{UUID: "intent-1", ChatID: "oc_1", Content: text})
	require.NoError(t, err)
	require.Equal(t, sent.MessageID, again.MessageID)
	require.Len(t, srv.Messages(), 1)
}

func TestClientSend(t *testing.T) {
	c, srv, _ := setup(t)
	post, err := feishu.Post("Report", "line <one>", "line two")
	require.NoError(t, err)
	sent, err := c.Send(context.Background(), feishu.OutgoingMessage{UUID: "intent-2", ChatID: "oc_9", Content: post})
	require.NoError(t, err)
	msgs := srv.Messages()
	require.Len(t, msgs, 1)
	require.Equal(t, sent.MessageID, msgs[0].ID)
	require.Equal(t, "oc_9", msgs[0].ChatID)
	require.Equal(t, "post", msgs[0].MsgType)
	require.Equal(t, "intent-2", msgs[0].UUID)
	require.JSONEq(t, `{"zh_cn":{"title":"Report","content":[[{"tag":"text","text":"line <one>"}],[{"tag":"text","text":"line two"}]]}}`, msgs[0].Content)
	reqs := srv.RequestsTo(http.MethodPost, "/open-apis/im/v1/messages")
	require.Equal(t, "chat_id", reqs[len(reqs)-1].Query.Get("receive_id_type"))
}

func TestClientRefusesBadMessages(t *testing.T) {
	c, srv, _ := setup(t)
	ctx := context.Background()
	text, err := feishu.Text("hi")
	require.NoError(t, err)

	_, err = c.Send(ctx, feishu.OutgoingMessage{ChatID: "oc_1", Content: text})
	require.ErrorContains(t, err, "uuid is required")
	_, err = c.Send(ctx, feishu.OutgoingMessage{UUID: strings.Repeat("u", 51), ChatID: "oc_1", Content: text})
	require.ErrorContains(t, err, "longer than 50")
	_, err = c.Send(ctx, feishu.OutgoingMessage{UUID: "u"})
	require.ErrorContains(t, err, "msg_type")

	_, err = feishu.Text(strings.Repeat("a", feishu.MaxTextBytes))
	require.ErrorIs(t, err, feishu.ErrTooLarge)
	_, err = feishu.Text(strings.Repeat("<", feishu.MaxTextBytes/4)) // grows when escaped
	require.ErrorIs(t, err, feishu.ErrTooLarge)
	_, err = feishu.Card(map[string]string{"x": strings.Repeat("a", feishu.MaxCardBytes)})
	require.ErrorIs(t, err, feishu.ErrTooLarge)
	_, err = feishu.Post("t", strings.Repeat("a", feishu.MaxCardBytes))
	require.ErrorIs(t, err, feishu.ErrTooLarge)
	_, err = c.Send(ctx, feishu.OutgoingMessage{UUID: "u", ChatID: "oc_1",
		Content: feishu.Content{MsgType: "interactive", JSON: `{"x":"` + strings.Repeat("a", feishu.MaxCardBytes) + `"}`}})
	require.ErrorIs(t, err, feishu.ErrTooLarge)
	_, err = feishu.Text("hi", `ou_x"></at><at user_id="all`)
	require.ErrorContains(t, err, "not an open_id")

	require.Empty(t, srv.RequestsTo(http.MethodPost, "/open-apis/im/v1/messages"))
}

func TestClientReactAndBotInfo(t *testing.T) {
	c, srv, _ := setup(t)
	ctx := context.Background()
	m := srv.AddMessage(fakefeishu.Message{ChatID: "oc_1", Content: `{"text":"hi"}`})

	id, err := c.React(ctx, m.ID, "oc_1", feishu.EmojiOnIt)
	require.NoError(t, err)
	require.NotEmpty(t, id)
	require.Equal(t, []fakefeishu.Reaction{{ID: id, MessageID: m.ID, EmojiType: "OnIt"}}, srv.Reactions())

	bot, err := c.BotInfo(ctx)
	require.NoError(t, err)
	require.Equal(t, &feishu.BotInfo{OpenID: fakefeishu.BotOpenID, Name: fakefeishu.BotName}, bot)
}

func TestClientGetMessage(t *testing.T) {
	c, srv, _ := setup(t)
	ctx := context.Background()
	parent := srv.AddMessage(fakefeishu.Message{ChatID: "oc_1", SenderID: "ou_0f1e2d3c4b5a69788796a5b4c3d2e1f0", Content: `{"text":"hello"}`})
	text, err := feishu.Text("on it")
	require.NoError(t, err)
	sent, err := c.Reply(ctx, parent.ID, feishu.OutgoingMessage{UUID: "intent-3", Content: text})
	require.NoError(t, err)

	got, err := c.GetMessage(ctx, sent.MessageID)
	require.NoError(t, err)
	require.Equal(t, sent.MessageID, got.ID)
	require.Equal(t, parent.ID, got.ParentID)
	require.Equal(t, "app", got.Sender.Type)
	require.Equal(t, fakefeishu.AppID, got.Sender.AppID)
	require.Equal(t, "on it", got.Text)

	got, err = c.GetMessage(ctx, parent.ID)
	require.NoError(t, err)
	require.Equal(t, "ou_0f1e2d3c4b5a69788796a5b4c3d2e1f0", got.Sender.OpenID)
	require.Equal(t, "hello", got.Text)

	_, err = c.GetMessage(ctx, "om_missing")
	var apiErr *feishu.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 230011, apiErr.Code)
}

func TestClientRateLimit(t *testing.T) {
	c, srv, clock := setup(t)
	ctx := context.Background()
	m := srv.AddMessage(fakefeishu.Message{ChatID: "oc_1", Content: `{"text":"hi"}`})
	srv.RateLimit(http.MethodPost, "/open-apis/im/v1/messages/"+m.ID+"/reactions", 2, 3)

	_, err := c.React(ctx, m.ID, "oc_1", feishu.EmojiOnIt)
	require.NoError(t, err)
	require.Len(t, srv.RequestsTo(http.MethodPost, "/open-apis/im/v1/messages/"+m.ID+"/reactions"), 3)
	require.Equal(t, []time.Duration{3 * time.Second, 3 * time.Second}, clock.Slept())
	require.Len(t, srv.Reactions(), 1)

	// Bounded: after MaxRetries the 429 is the error.
	srv.RateLimit(http.MethodPost, "/open-apis/im/v1/messages/"+m.ID+"/reactions", 10, 1)
	_, err = c.React(ctx, m.ID, "oc_1", feishu.EmojiOnIt)
	var apiErr *feishu.APIError
	require.ErrorAs(t, err, &apiErr)
	require.True(t, apiErr.RateLimited())
	require.Equal(t, feishu.RateLimitCode, apiErr.Code)
	require.Equal(t, time.Second, apiErr.RetryAfter)

	// A reset longer than MaxWait is not waited out.
	srv.RateLimit(http.MethodGet, "/open-apis/bot/v3/info", 1, 3600)
	before := len(clock.Slept())
	_, err = c.BotInfo(ctx)
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, time.Hour, apiErr.RetryAfter)
	require.Len(t, clock.Slept(), before)
}

func TestClientAPIError(t *testing.T) {
	c, srv, clock := setup(t)
	srv.Fail(http.MethodPost, "/open-apis/im/v1/messages", 1, fakefeishu.Failure{Code: 230002, Msg: "The bot can not be outside the group."})
	text, err := feishu.Text("hi")
	require.NoError(t, err)
	_, err = c.Send(context.Background(), feishu.OutgoingMessage{UUID: "u", ChatID: "oc_1", Content: text})
	var apiErr *feishu.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 230002, apiErr.Code)
	require.Equal(t, http.StatusBadRequest, apiErr.HTTPStatus)
	require.False(t, apiErr.RateLimited())
	require.Contains(t, err.Error(), "sending to oc_1")
	require.Contains(t, err.Error(), "The bot can not be outside the group.")
	require.Empty(t, clock.Slept())
}

func TestClientPacesPerChat(t *testing.T) {
	c, srv, clock := setup(t)
	ctx := context.Background()
	text, err := feishu.Text("hi")
	require.NoError(t, err)
	for i, chat := range []string{"oc_a", "oc_a", "oc_b", "oc_a"} {
		_, err := c.Send(ctx, feishu.OutgoingMessage{UUID: "p" + itoa(i), ChatID: chat, Content: text})
		require.NoError(t, err)
	}
	// Second message to oc_a waits 200ms; oc_b goes at once; the third to
	// oc_a waits for its slot (the clock only moved by the first wait).
	require.Equal(t, []time.Duration{200 * time.Millisecond, 200 * time.Millisecond}, clock.Slept())
	require.Len(t, srv.Messages(), 4)
}

func TestClientContextCancelled(t *testing.T) {
	c, srv, _ := setup(t)
	m := srv.AddMessage(fakefeishu.Message{ChatID: "oc_1", Content: `{"text":"hi"}`})
	srv.RateLimit(http.MethodPost, "/open-apis/im/v1/messages/"+m.ID+"/reactions", 1, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.React(ctx, m.ID, "", feishu.EmojiOnIt)
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
}

func TestClientBotOpenIDCached(t *testing.T) {
	c, srv, _ := setup(t)
	ctx := context.Background()
	srv.Fail(http.MethodGet, "/open-apis/bot/v3/info", 1, fakefeishu.Failure{HTTPStatus: http.StatusInternalServerError, Code: 1, Msg: "busy"})
	_, err := c.BotOpenID(ctx)
	require.Error(t, err)
	for range 2 {
		id, err := c.BotOpenID(ctx)
		require.NoError(t, err)
		require.Equal(t, fakefeishu.BotOpenID, id)
	}
	require.Len(t, srv.RequestsTo(http.MethodGet, "/open-apis/bot/v3/info"), 2)
	require.Equal(t, fakefeishu.AppID, c.AppID())
}

func TestClientRateLimitWaitCancelled(t *testing.T) {
	srv := fakefeishu.New(t)
	clock := &cancellingClock{fakeClock: fakeClock{now: testNow}}
	c, err := feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: srv.URL}, clock, nil)
	require.NoError(t, err)
	m := srv.AddMessage(fakefeishu.Message{ChatID: "oc_1", Content: `{"text":"hi"}`})
	srv.RateLimit(http.MethodPost, "/open-apis/im/v1/messages/"+m.ID+"/reactions", 1, 3)
	_, err = c.React(context.Background(), m.ID, "oc_1", feishu.EmojiOnIt)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "waiting 3s to retry after reacting OnIt to "+m.ID)
	require.Len(t, srv.RequestsTo(http.MethodPost, "/open-apis/im/v1/messages/"+m.ID+"/reactions"), 1)
}

// cancellingClock fails every wait longer than zero, as a context that
// ends during it would.
type cancellingClock struct{ fakeClock }

func (c *cancellingClock) Sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		return context.Canceled
	}
	return ctx.Err()
}

// PatchCard replaces a shared card's content in place; Feishu refuses a
// card that is not shared (config.update_multi) and anything but a card,
// and the client refuses what is no card before asking.
func TestClientPatchCard(t *testing.T) {
	ctx := context.Background()
	c, srv, _ := setup(t)
	parent := srv.AddMessage(fakefeishu.Message{ChatID: "oc_1", Content: `{"text":"hi"}`})
	card := func(state string, shared bool) feishu.Content {
		content, err := feishu.Card(map[string]any{"config": map[string]any{"update_multi": shared},
			"elements": []any{map[string]any{"tag": "div", "text": map[string]any{"tag": "plain_text", "content": state}}}})
		require.NoError(t, err)
		return content
	}
	sent, err := c.Reply(ctx, parent.ID, feishu.OutgoingMessage{UUID: "card-1", ChatID: "oc_1", Content: card("working", true)})
	require.NoError(t, err)
	require.NoError(t, c.PatchCard(ctx, sent.MessageID, "oc_1", card("done", true)))
	m, ok := srv.Message(sent.MessageID)
	require.True(t, ok)
	require.Equal(t, 1, m.Patches)
	require.Contains(t, m.Content, `"content":"done"`)
	reqs := srv.RequestsTo(http.MethodPatch, "/open-apis/im/v1/messages/"+sent.MessageID)
	require.Len(t, reqs, 1)
	require.Equal(t, map[string]any{"content": card("done", true).JSON}, reqs[0].Body, "only the card's content is sent")

	var apiErr *feishu.APIError
	require.ErrorAs(t, c.PatchCard(ctx, sent.MessageID, "oc_1", card("unshared", false)), &apiErr)
	require.Equal(t, 230001, apiErr.Code)
	require.ErrorAs(t, c.PatchCard(ctx, parent.ID, "oc_1", card("not the bot's", true)), &apiErr)
	text, err := feishu.Text("plain")
	require.NoError(t, err)
	require.ErrorContains(t, c.PatchCard(ctx, sent.MessageID, "oc_1", text), "only interactive cards")
	m, _ = srv.Message(sent.MessageID)
	require.Equal(t, 1, m.Patches, "a refused update changes nothing")
	require.Len(t, srv.RequestsTo(http.MethodPatch, "/open-apis/im/v1/messages/"), 3, "the text was refused before any request")
}
