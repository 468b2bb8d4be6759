package webhooks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

// A card button press is stored first and then answered with the
// answerer's toast, on the webhook and on the long connection alike; any
// other event is answered with {}.
func TestCardActionAnsweredOnBothPaths(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setupFeishu(t, d)
		var pressed []string
		e.svc.AnswerCards(func(_ context.Context, a *feishu.CardAction) feishu.CardActionResponse {
			// The press is answered only once it is stored.
			pressed = append(pressed, a.OperatorOpenID+" "+a.ValueString("action"))
			return feishu.CardActionResponse{Toast: &feishu.Toast{Type: "error", Content: "not yours"}}
		})
		press := func(id string) []byte {
			return patch(t, larkFixture(t, "card.action.trigger.json"), func(m map[string]any) {
				obj(m, "header")["event_id"] = id
			})
		}

		status, body := e.post(t, press("ev_press_webhook"))
		require.Equal(t, http.StatusOK, status, body)
		require.JSONEq(t, `{"toast":{"type":"error","content":"not yours"}}`, body)
		require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM deliveries WHERE dedupe_key = 'event:ev_press_webhook'"))

		status, body = e.post(t, larkFixture(t, "im.message.receive_v1.p2p.json"))
		require.Equal(t, http.StatusOK, status, body)
		require.JSONEq(t, `{}`, body, "a message is no callback")

		lc, err := feishu.NewLongConn(feishu.LongConnConfig{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: e.fake.URL,
			CardAnswer: e.svc.FeishuCardAnswer}, e.svc.FeishuEvent, nil, nil)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t.Cleanup(cancel)
		go func() { _ = lc.Run(ctx) }()
		require.NoError(t, e.fake.WaitConnects(ctx, 1))
		code, data, err := e.fake.PushCallback(ctx, press("ev_press_longconn"))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		var answer map[string]any
		require.NoError(t, json.Unmarshal(data, &answer), string(data))
		require.Equal(t, map[string]any{"type": "error", "content": "not yours"}, answer["toast"])
		require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM deliveries WHERE dedupe_key = 'event:ev_press_longconn'"))
		require.Equal(t, []string{"ou_84aad35d084aa403a838cf73ee18467 pause", "ou_84aad35d084aa403a838cf73ee18467 pause"}, pressed)
	})
}
