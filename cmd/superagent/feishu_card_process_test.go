package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

const (
	cardChat      = "oc_statuscardchat00000000000000"
	cardRequester = "ou_requester0000000000000000000"
	cardStranger  = "ou_stranger00000000000000000000"
	cardToken     = "card-verification-token"
	cardKey       = "card-encrypt-key"
)

// TestFeishuStatusCardFollowsTheTicket drives the binary with the fake
// Feishu on both databases: a chat request becomes a Ticket, whose status
// card is posted once as a reply in the request's thread and patched at
// each change (working, waiting, stopped; and working, done for a second
// request); a stranger's press of its Stop button is answered with an
// error toast and changes nothing, and the requester's press stops the
// Ticket, after which the card offers Continue.
func TestFeishuStatusCardFollowsTheTicket(t *testing.T) {
	t.Parallel()
	databases(t, func(t *testing.T, dbURL string) {
		fs := fakefeishu.New(t)
		fs.AddUser(fakefeishu.User{OpenID: cardRequester, Name: "Rita"})
		fs.AddUser(fakefeishu.User{OpenID: cardStranger, Name: "Sam"})

		// cardOf is the status card replying to a request, as the fake
		// holds it now.
		cardOf := func(request string) (fakefeishu.Message, int) {
			var card fakefeishu.Message
			n := 0
			for _, m := range fs.Messages() {
				if m.MsgType == "interactive" && m.ParentID == request {
					card, n = m, n+1
				}
			}
			return card, n
		}
		model := fakeopenai.New(t)
		model.Fallback(fakeopenai.Respond(func(req fakeopenai.Request) fakeopenai.Reply {
			if req.Model == "router-model" {
				return cardRouter(req)
			}
			return cardExecutor(req, func(request string) bool {
				// The Executor reports only once the card shows it
				// working, so that each state is seen on the card.
				deadline := time.Now().Add(30 * time.Second)
				for time.Now().Before(deadline) {
					if c, n := cardOf(request); n == 1 && strings.Contains(c.Content, "working") {
						return true
					}
					time.Sleep(25 * time.Millisecond)
				}
				return false
			})
		}))

		const adminToken = "card-admin-token-0123456789"
		p := start(t, "serve", map[string]string{
			"SUPERAGENT_ADDR":                      freeAddr(t),
			"SUPERAGENT_DATA_DIR":                  t.TempDir(),
			"SUPERAGENT_DATABASE_URL":              dbURL,
			"SUPERAGENT_ADMIN_TOKEN":               adminToken,
			"SUPERAGENT_PUBLIC_URL":                "https://superagent.example.com",
			"SUPERAGENT_FEISHU_APP_ID":             fakefeishu.AppID,
			"SUPERAGENT_FEISHU_APP_SECRET":         "card-app-secret",
			"SUPERAGENT_FEISHU_VERIFICATION_TOKEN": cardToken,
			"SUPERAGENT_FEISHU_ENCRYPT_KEY":        cardKey,
			"SUPERAGENT_FEISHU_BASE_URL":           fs.URL,
			"SUPERAGENT_FEISHU_ALLOWED_MEMBERS":    cardRequester,
			"SUPERAGENT_MODEL_BASE_URL":            model.URL(),
			"SUPERAGENT_MODEL_API_KEY":             "sk-test-card-key-0001",
			"SUPERAGENT_MODEL":                     "executor-model",
			"SUPERAGENT_ROUTER_MODEL":              "router-model",
			"SUPERAGENT_ROUTING_DEBOUNCE":          "100ms",
		}, "serve")
		p.waitHTTP("/readyz", 30*time.Second)
		t.Cleanup(func() {
			if t.Failed() {
				for _, m := range fs.Messages() {
					t.Logf("feishu message %s (parent %s, %s, %d patches): %s", m.ID, m.ParentID, m.MsgType, m.Patches, m.Content)
				}
			}
		})

		ticketState := func(title string) (int64, string) {
			var list struct {
				Tickets []struct {
					ID    int64  `json:"id"`
					Title string `json:"title"`
					State string `json:"state"`
				} `json:"tickets"`
			}
			getJSON(t, "http://"+p.addr+"/api/tickets", adminToken, &list)
			for _, tk := range list.Tickets {
				if tk.Title == title {
					return tk.ID, tk.State
				}
			}
			return 0, ""
		}
		waitCard := func(request, what string, cond func(string) bool) fakefeishu.Message {
			t.Helper()
			var c fakefeishu.Message
			waitFor(t, 2*time.Minute, what, func() bool {
				var n int
				c, n = cardOf(request)
				return n == 1 && cond(c.Content)
			})
			return c
		}
		has := func(parts ...string) func(string) bool {
			return func(s string) bool {
				for _, p := range parts {
					if !strings.Contains(s, p) {
						return false
					}
				}
				return true
			}
		}

		// The request: posted in the chat, addressed to the bot.
		ask(t, p, fs, "om_cardrequest_a", "@_user_1 fix the login page typo", 1)
		card := waitCard("om_cardrequest_a", "the card to show the Ticket waiting", has("waiting for an answer", `"action":"stop"`, `"action":"pause"`,
			"Latest report (waiting)", "https://superagent.example.com/admin/tickets/"))
		id, state := ticketState("Fix the login page typo")
		require.Equal(t, "waiting", state)
		require.Equal(t, "omt_cardrequest_a", card.ThreadID, "the card is a reply in the request's thread")
		require.True(t, card.ReplyInThread)
		require.GreaterOrEqual(t, card.Patches, 1, "posted working, patched to waiting")
		var shown map[string]any
		require.NoError(t, json.Unmarshal([]byte(card.Content), &shown))
		require.Equal(t, true, shown["config"].(map[string]any)["update_multi"], "a card Feishu lets the bot patch")
		patches := card.Patches

		// A stranger's press: a toast, and nothing changes.
		toast := press(t, p, fs, "stranger-stop", card.ID, cardStranger, id, "stop", 2)
		require.Equal(t, "error", toast.Type)
		require.Contains(t, toast.Content, fmt.Sprintf("may not stop ticket %d", id))
		waitFor(t, time.Minute, "the stranger's press to be handled", func() bool {
			var n int
			require.NoError(t, openDB(t, dbURL).QueryRow(context.Background(),
				`SELECT count(*) FROM cards WHERE kind = 'card_action' AND state = 'ignored' AND routing_note LIKE '%changed nothing%'`).Scan(&n))
			return n == 1
		})
		_, state = ticketState("Fix the login page typo")
		require.Equal(t, "waiting", state)

		// The requester's press stops it; the card then offers Continue.
		toast = press(t, p, fs, "requester-stop", card.ID, cardRequester, id, "stop", 3)
		require.Equal(t, "info", toast.Type)
		// The card and the acknowledgement name the requester as Feishu's
		// contact API does; the record keeps the open_id.
		card = waitCard("om_cardrequest_a", "the card to show the stop", has(`"content":"State\nstopped by Rita"`, `"action":"continue"`))
		require.NotContains(t, card.Content, `"action":"stop"`)
		require.NotContains(t, card.Content, cardRequester)
		waitFor(t, time.Minute, "the stop to be acknowledged", func() bool {
			for _, m := range fs.Messages() {
				if strings.Contains(m.Content, fmt.Sprintf("Stopped ticket %d (Fix the login page typo) at Rita's word", id)) {
					require.NotContains(t, m.Content, cardRequester)
					return true
				}
			}
			return false
		})
		require.Greater(t, card.Patches, patches)
		_, state = ticketState("Fix the login page typo")
		require.Equal(t, "cancelled", state)

		// A second request goes working → done on its own card.
		ask(t, p, fs, "om_cardrequest_b", "@_user_1 add a CSV export", 4)
		card = waitCard("om_cardrequest_b", "the second card to show done", has(`"content":"State\ndone"`, "Latest report (done)"))
		require.NotContains(t, card.Content, `"action":`, "a done Ticket has no command to give")
		require.GreaterOrEqual(t, card.Patches, 1)

		posts := 0
		for _, r := range fs.RequestsTo(http.MethodPost, "/open-apis/im/v1/messages/") {
			if str, _ := r.Body["msg_type"].(string); str == "interactive" {
				posts++
			}
		}
		require.Equal(t, 2, posts, "one card per Ticket, never posted again")
		require.NotEmpty(t, fs.RequestsTo(http.MethodPatch, "/open-apis/im/v1/messages/"))
		require.Contains(t, p.stderr.String(), `"msg":"status card updated"`)
		code, _ := p.stop(shutdownWithin)
		require.Equal(t, 0, code)
	})
}

// ask posts a group message addressed to the bot from the requester, as
// Feishu delivers it, after the fake learned of it.
func ask(t *testing.T, p *proc, fs *fakefeishu.Server, id, text string, seq int) {
	t.Helper()
	content, _ := json.Marshal(map[string]string{"text": text})
	fs.AddMessage(fakefeishu.Message{ID: id, ChatID: cardChat, SenderID: cardRequester, Content: string(content)})
	event := map[string]any{
		"schema": "2.0",
		"header": cardHeader("im.message.receive_v1", seq),
		"event": map[string]any{
			"sender": map[string]any{"sender_id": map[string]any{"open_id": cardRequester}, "sender_type": "user", "tenant_key": "fake_tenant"},
			"message": map[string]any{
				"message_id": id, "create_time": "1700000000000", "chat_id": cardChat, "chat_type": "group",
				"message_type": "text", "content": string(content),
				"mentions": []any{map[string]any{"key": "@_user_1", "id": map[string]any{"open_id": fakefeishu.BotOpenID},
					"name": fakefeishu.BotName, "tenant_key": "fake_tenant"}},
			},
		},
	}
	status, _ := postLark(t, p, event)
	require.Equal(t, http.StatusOK, status)
}

// press posts a card.action.trigger callback for a button of the card
// message, as Feishu does when operator presses it, and returns the toast
// it was answered with.
func press(t *testing.T, p *proc, fs *fakefeishu.Server, name, message, operator string, ticket int64, action string, seq int) toastBody {
	t.Helper()
	event := map[string]any{
		"schema": "2.0",
		"header": cardHeader("card.action.trigger", seq),
		"event": map[string]any{
			"operator": map[string]any{"tenant_key": "fake_tenant", "open_id": operator},
			"token":    "c-" + name,
			"action":   map[string]any{"value": map[string]any{"action": action, "ticket": ticket}, "tag": "button"},
			"host":     "im_message",
			"context":  map[string]any{"open_message_id": message, "open_chat_id": cardChat},
		},
	}
	status, body := postLark(t, p, event)
	require.Equal(t, http.StatusOK, status, body)
	var answer struct {
		Toast *toastBody `json:"toast"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &answer), body)
	require.NotNil(t, answer.Toast, "a button press is answered with a toast: %s", body)
	return *answer.Toast
}

type toastBody struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

func cardHeader(eventType string, seq int) map[string]any {
	return map[string]any{"event_id": fmt.Sprintf("card-event-%04d", seq), "event_type": eventType, "create_time": "1700000000000",
		"token": cardToken, "app_id": fakefeishu.AppID, "tenant_key": "fake_tenant"}
}

func postLark(t *testing.T, p *proc, event map[string]any) (int, string) {
	t.Helper()
	plain, err := json.Marshal(event)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(fakefeishu.EventRequest(t, "http://"+p.addr+"/webhooks/feishu", cardKey, plain, time.Now()))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// cardRouter plays the main Session: each candidate message becomes a
// Ticket without a repository, titled after what it asks.
func cardRouter(req fakeopenai.Request) fakeopenai.Reply {
	last := req.LastMessage()
	if last.Role != "user" {
		return fakeopenai.Text("Nothing else to route.")
	}
	var decisions []map[string]any
	for _, c := range candidates(last.Content) {
		if strings.Contains(c.text, "card_action") {
			continue
		}
		title := "Fix the login page typo"
		if strings.Contains(c.text, "CSV export") {
			title = "Add a CSV export"
		}
		decisions = append(decisions, map[string]any{"candidate": c.id, "action": "new", "title": title, "note": "explicit request from an allowed member"})
	}
	if len(decisions) == 0 {
		return fakeopenai.Text("Noted.")
	}
	args, _ := json.Marshal(map[string]any{"decisions": decisions})
	return fakeopenai.Calls(fakeopenai.Call("", "orchestrator_route", string(args)))
}

// cardExecutor plays the Executor: the login page Ticket waits for an
// answer, the export Ticket is done; each reports once its card shows it
// working (shown, given the request's message id, says so).
func cardExecutor(req fakeopenai.Request, shown func(request string) bool) fakeopenai.Reply {
	all := ""
	reported := false
	for _, m := range req.Messages {
		all += m.Content
		for _, c := range m.ToolCalls {
			if c.Name == "report" {
				reported = true
			}
		}
	}
	if reported {
		return fakeopenai.Text("Reported.")
	}
	if !strings.Contains(all, "CSV export") {
		if !shown("om_cardrequest_a") {
			return fakeopenai.Text("The card never showed the work.")
		}
		return fakeopenai.Calls(fakeopenai.Call("", "report", `{"state":"waiting","summary":"There are two login pages; asked which one is meant.",`+
			`"human_action":"Which login page has the typo, the admin one or the public one?"}`))
	}
	if !shown("om_cardrequest_b") {
		return fakeopenai.Text("The card never showed the work.")
	}
	return fakeopenai.Calls(fakeopenai.Call("", "report", `{"state":"done","summary":"Added a CSV export of the list and checked it by reading the generated file back."}`))
}
