package webhooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	"github.com/superagent-dev/superagent/tickets"
	"github.com/superagent-dev/superagent/webhooks"
)

const (
	larkToken      = "rvaYgkND1GOiu5MM0E1rncYC6PLtF7JV"
	larkEncryptKey = "superagent-test-key"
)

type larkEnv struct {
	*env
	url  string
	fake *fakefeishu.Server
}

// setupFeishu builds the service with the Feishu endpoint on and a fake
// Feishu API (from which the bot's open_id is learnt).
func setupFeishu(t *testing.T, d *db.DB, mods ...func(*webhooks.Config)) *larkEnv {
	t.Helper()
	fake := fakefeishu.New(t)
	fs, err := feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: fake.URL}, nil, nil)
	require.NoError(t, err)
	e := &env{d: d}
	e.q = queue.New(d, queue.Config{InsertOnly: true})
	cfg := webhooks.Config{Feishu: webhooks.FeishuConfig{Verifier: feishu.VerifierConfig{VerificationToken: larkToken, EncryptKey: larkEncryptKey}}}
	for _, m := range mods {
		m(&cfg)
	}
	e.svc, err = webhooks.New(cfg, d, e.q, nil, fs, nil)
	require.NoError(t, err)
	require.NoError(t, e.q.Init())
	e.store = e.svc.Store()
	r := chi.NewRouter()
	e.svc.Routes(r)
	r.Route("/api", e.svc.APIRoutes)
	e.srv = newServer(t, r)
	return &larkEnv{env: e, url: e.srv.URL + "/webhooks/feishu", fake: fake}
}

func larkFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := io.ReadAll(mustOpen(t, "testdata/feishu/"+name))
	require.NoError(t, err)
	return b
}

// post sends plain encrypted and signed as Feishu does.
func (e *larkEnv) post(t testing.TB, plain []byte) (int, string) {
	t.Helper()
	return e.do(t, fakefeishu.EventRequest(t, e.url, larkEncryptKey, plain, time.Now()))
}

func (e *larkEnv) do(t testing.TB, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// deliverLark posts plain, requires 200, and works the delivery stored
// under key.
func (e *larkEnv) deliverLark(t testing.TB, plain []byte, key string) webhooks.Delivery {
	t.Helper()
	status, body := e.post(t, plain)
	require.Equal(t, http.StatusOK, status, body)
	d, err := e.svc.DeliveryByKey(context.Background(), "feishu", key)
	require.NoError(t, err)
	e.work(t, d.ID)
	return e.delivery(t, d.ID)
}

func TestFeishuEvents(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setupFeishu(t, d)
		ctx := context.Background()

		t.Run("url verification, plain and encrypted", func(t *testing.T) {
			plain := larkFixture(t, "url_verification.json")
			req, err := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(plain))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			status, body := e.do(t, req)
			require.Equal(t, http.StatusOK, status)
			require.JSONEq(t, `{"challenge":"ajls384kdjx98XX"}`, body)
			status, body = e.post(t, plain)
			require.Equal(t, http.StatusOK, status)
			require.JSONEq(t, `{"challenge":"ajls384kdjx98XX"}`, body)
			require.Zero(t, count(t, d, "SELECT COUNT(*) FROM deliveries"))
		})
		t.Run("thread message mentioning the bot", func(t *testing.T) {
			got := e.deliverLark(t, larkFixture(t, "extra.im.message.receive_v1.post_thread.json"), "message:om_c0ffee0000000000000000000000post")
			require.Equal(t, webhooks.DeliveryProcessed, got.State, got.Error)
			c := e.card(t, got.ID)
			require.Equal(t, tickets.SourceFeishu, c.Source)
			require.Equal(t, "message", c.Kind)
			require.Equal(t, "feishu:oc_5ce6d572455d361153b7xx51da133945/om_5ce6d572455d361153b7cb51da133945", c.Thread.Key)
			require.True(t, c.Addressed)
			require.Equal(t, "mention", c.AddressedWhy)
			require.Equal(t, "ou_0f1e2d3c4b5a69788796a5b4c3d2e1f0", c.Author.ID)
			require.Less(t, len(tickets.Render(c)), 1024)
		})
		t.Run("group message mentioning someone else", func(t *testing.T) {
			got := e.deliverLark(t, larkFixture(t, "im.message.receive_v1.group_mention.json"), "message:om_5ce6d572455d361153b7cb51da133945")
			require.Equal(t, webhooks.DeliveryIgnored, got.State)
			require.Contains(t, got.Error, "not addressed")
		})
		t.Run("group message in a thread the bot spoke in", func(t *testing.T) {
			key := "feishu:oc_5ce6d572455d361153b7xx51da133945/om_5ce6d572455d361153b7cb51da133945"
			require.NoError(t, e.store.MarkBotSpoke(ctx, d, key))
			plain := patch(t, larkFixture(t, "im.message.receive_v1.group_mention.json"), func(m map[string]any) {
				obj(m, "header")["event_id"] = "other-event"
				obj(m, "event", "message")["message_id"] = "om_reply_1"
				obj(m, "event", "message")["root_id"] = "om_5ce6d572455d361153b7cb51da133945"
			})
			got := e.deliverLark(t, plain, "message:om_reply_1")
			require.Equal(t, webhooks.DeliveryProcessed, got.State, got.Error)
			c := e.card(t, got.ID)
			require.Equal(t, key, c.Thread.Key)
			require.Equal(t, "reply", c.AddressedWhy)
			require.Equal(t, "@Tom hello", c.Text)
		})
		t.Run("direct messages", func(t *testing.T) {
			got := e.deliverLark(t, larkFixture(t, "im.message.receive_v1.p2p.json"), "message:om_a1b2c3d4e5f60718293a4b5c6d7e8f90")
			c := e.card(t, got.ID)
			require.Equal(t, "direct_message", c.AddressedWhy)
			require.Equal(t, "feishu:oc_a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5/om_a1b2c3d4e5f60718293a4b5c6d7e8f90", c.Thread.Key)

			got = e.deliverLark(t, larkFixture(t, "extra.im.message.receive_v1.file_p2p.json"), "message:om_c0ffee00000000000000000000000file")
			c = e.card(t, got.ID)
			require.Equal(t, "direct_message", c.AddressedWhy)
			require.NotEmpty(t, c.References)
			require.True(t, strings.HasPrefix(c.References[0].Ref, "feishu:resource/om_c0ffee00000000000000000000000file/"), c.References[0].Ref)
		})
		t.Run("card action", func(t *testing.T) {
			got := e.deliverLark(t, larkFixture(t, "card.action.trigger.json"), "event:0f3a6c5e2b8d4f1a9c7e6b5d4a3f2e1d")
			c := e.card(t, got.ID)
			require.Equal(t, "card_action", c.Kind)
			require.True(t, c.Addressed)
			require.Equal(t, "ou_84aad35d084aa403a838cf73ee18467", c.Author.ID)
			require.JSONEq(t, `{"action":"pause","ticket":"T-1"}`, c.Text)
		})
		t.Run("bot added and removed", func(t *testing.T) {
			got := e.deliverLark(t, larkFixture(t, "extra.im.chat.member.bot.added_v1.json"), "event:d1c2d3e4f5a60718293a4b5c6d7e8f92")
			require.Equal(t, webhooks.DeliveryProcessed, got.State)
			require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM feishu_chats WHERE active"))
			var removed map[string]any
			require.NoError(t, json.Unmarshal(larkFixture(t, "extra.im.chat.member.bot.deleted_v1.json"), &removed))
			id := obj(removed, "header")["event_id"].(string)
			got = e.deliverLark(t, larkFixture(t, "extra.im.chat.member.bot.deleted_v1.json"), "event:"+id)
			require.Equal(t, webhooks.DeliveryProcessed, got.State)
			require.Equal(t, 0, count(t, d, "SELECT COUNT(*) FROM feishu_chats WHERE active"))
		})
		t.Run("a retried message is stored once", func(t *testing.T) {
			before := count(t, d, "SELECT COUNT(*) FROM deliveries")
			plain := patch(t, larkFixture(t, "im.message.receive_v1.p2p.json"), func(m map[string]any) {
				obj(m, "header")["event_id"] = "retry-with-a-new-event-id"
			})
			status, _ := e.post(t, plain)
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, before, count(t, d, "SELECT COUNT(*) FROM deliveries"))
		})
		t.Run("the long connection path", func(t *testing.T) {
			plain := patch(t, larkFixture(t, "im.message.receive_v1.p2p.json"), func(m map[string]any) {
				obj(m, "header")["event_id"] = "ws-1"
				obj(m, "event", "message")["message_id"] = "om_ws_1"
			})
			require.NoError(t, e.svc.FeishuEvent(ctx, plain))
			require.NoError(t, e.svc.FeishuEvent(ctx, plain))
			dl, err := e.svc.DeliveryByKey(ctx, "feishu", "message:om_ws_1")
			require.NoError(t, err)
			e.work(t, dl.ID)
			require.Equal(t, "direct_message", e.card(t, dl.ID).AddressedWhy)
		})
		t.Run("authenticated but unreadable", func(t *testing.T) {
			plain := patch(t, larkFixture(t, "im.message.receive_v1.p2p.json"), func(m map[string]any) {
				obj(m, "event", "message")["message_id"] = ""
			})
			status, _ := e.post(t, plain)
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM deliveries WHERE source = 'feishu' AND state = 'failed'"))
		})
	})
}

func TestFeishuRejections(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setupFeishu(t, d)
		plain := larkFixture(t, "im.message.receive_v1.p2p.json")
		cases := []struct {
			name   string
			req    func() *http.Request
			status int
		}{
			{"unsigned", func() *http.Request {
				r := fakefeishu.EventRequest(t, e.url, larkEncryptKey, plain, time.Now())
				r.Header.Del("X-Lark-Signature")
				return r
			}, http.StatusUnauthorized},
			{"wrong signature", func() *http.Request {
				r := fakefeishu.EventRequest(t, e.url, larkEncryptKey, plain, time.Now())
				r.Header.Set("X-Lark-Signature", strings.Repeat("0", 64))
				return r
			}, http.StatusUnauthorized},
			{"signed with another key", func() *http.Request {
				return fakefeishu.EventRequest(t, e.url, "another-key", plain, time.Now())
			}, http.StatusUnauthorized},
			{"stale timestamp", func() *http.Request {
				return fakefeishu.EventRequest(t, e.url, larkEncryptKey, plain, time.Now().Add(-time.Hour))
			}, http.StatusUnauthorized},
			{"wrong verification token", func() *http.Request {
				forged := bytes.Replace(plain, []byte(larkToken), []byte("forged-token-000000000000000000"), 1)
				return fakefeishu.EventRequest(t, e.url, larkEncryptKey, forged, time.Now())
			}, http.StatusForbidden},
			{"not encrypted", func() *http.Request {
				r, _ := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(plain))
				r.Header.Set("Content-Type", "application/json")
				return r
			}, http.StatusBadRequest},
			{"wrong content type", func() *http.Request {
				r := fakefeishu.EventRequest(t, e.url, larkEncryptKey, plain, time.Now())
				r.Header.Set("Content-Type", "text/plain")
				return r
			}, http.StatusUnsupportedMediaType},
			{"oversized", func() *http.Request {
				big := patch(t, plain, func(m map[string]any) { obj(m, "event", "message")["content"] = strings.Repeat("x", 2<<20) })
				return fakefeishu.EventRequest(t, e.url, larkEncryptKey, big, time.Now())
			}, http.StatusRequestEntityTooLarge},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				status, _ := e.do(t, c.req())
				require.Equal(t, c.status, status)
			})
		}
		require.Zero(t, count(t, d, "SELECT COUNT(*) FROM deliveries"))
	})
}

func TestFeishuDisabledWithoutEncryptKey(t *testing.T) {
	t.Parallel()
	e := setupFeishu(t, dbtest.SQLite(t), func(c *webhooks.Config) { c.Feishu.Verifier.EncryptKey = "" })
	status, _ := e.post(t, larkFixture(t, "im.message.receive_v1.p2p.json"))
	require.Equal(t, http.StatusNotFound, status)
}
