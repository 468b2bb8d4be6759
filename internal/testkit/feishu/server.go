package feishu

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superagent-dev/superagent/internal/testkit/contract"
)

// Token is the tenant access token the fake hands out and requires.
const Token = "t-fake"

// Default identities of the fake app's bot.
const (
	BotOpenID = "ou_fakebot0000000000000000000000"
	BotName   = "superagent"
	AppID     = "cli_fake0000000000"
)

// Request is one request the fake received, parsed.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Raw    []byte
	Body   map[string]any // the JSON body; nil when there is none
}

// Message is a message held by the fake: sent through it or added with
// AddMessage.
type Message struct {
	ID            string
	ChatID        string
	RootID        string
	ParentID      string
	ThreadID      string
	MsgType       string
	Content       string // the content JSON string, as sent
	UUID          string
	ReplyInThread bool
	// ToOpenID is the person a private message was sent to
	// (receive_id_type=open_id); its ChatID is their chat with the bot.
	ToOpenID   string
	SenderID   string // open_id of a person, or the app id for the bot
	SenderType string // "user" or "app"
	CreateTime time.Time
	// Patches counts the updates of a card (PATCH
	// /open-apis/im/v1/messages/:message_id); Content is the latest.
	Patches int
}

// Reaction is a reaction added through the fake.
type Reaction struct {
	ID        string
	MessageID string
	EmojiType string
}

// Failure scripts an error answer.
type Failure struct {
	HTTPStatus int    // default 400
	Code       int    // Feishu error code, e.g. 230002
	Msg        string // default "fake failure"
	// ResetSeconds, when > 0, is sent as x-ogw-ratelimit-reset.
	ResetSeconds int
}

type script struct {
	method, prefix string
	left           int
	f              Failure
}

// Server is the fake. Its zero value is not usable; call New.
type Server struct {
	// URL is the base URL to give lark.WithOpenBaseUrl.
	URL string

	// Reporter holds the contract violations (Expect, Violations).
	*contract.Reporter

	t   testing.TB
	srv *httptest.Server

	mu        sync.Mutex
	requests  []Request
	scripts   []*script
	messages  map[string]*Message
	order     []string
	uuids     map[string]string
	reactions []Reaction
	images    []Image
	seq       int
	ws        *wsState
	users     map[string]User
	authen    authen
}

// New starts a fake closed when t ends.
func New(t testing.TB) *Server {
	s := &Server{Reporter: contract.NewReporter(t, "fake Feishu"), t: t, messages: map[string]*Message{}, uuids: map[string]string{}, ws: newWSState()}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close stops the server and drops long connections.
func (s *Server) Close() {
	s.ws.closeAll()
	s.srv.Close()
}

// Requests returns every request received so far, token requests included.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestsTo returns the requests with this method whose path starts with prefix.
func (s *Server) RequestsTo(method, prefix string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Method == method && strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// Fail makes the next times requests matching method and path prefix fail with f.
func (s *Server) Fail(method, prefix string, times int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts = append(s.scripts, &script{method: method, prefix: prefix, left: times, f: f})
}

// RateLimit makes the next times matching requests answer HTTP 429, code
// 99991400, with x-ogw-ratelimit-reset: resetSeconds.
func (s *Server) RateLimit(method, prefix string, times, resetSeconds int) {
	s.Fail(method, prefix, times, Failure{HTTPStatus: http.StatusTooManyRequests, Code: 99991400,
		Msg: "request trigger frequency limit", ResetSeconds: resetSeconds})
}

// AddMessage stores a message (for GET /open-apis/im/v1/messages/:id and as
// a parent of replies) and returns it with defaults filled in.
func (s *Server) AddMessage(m Message) Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.store(m)
}

// Messages returns the messages sent through the fake, oldest first
// (messages added with AddMessage excluded).
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, id := range s.order {
		if m := s.messages[id]; m.SenderType == "app" {
			out = append(out, *m)
		}
	}
	return out
}

// Reactions returns the reactions added so far.
func (s *Server) Reactions() []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reaction(nil), s.reactions...)
}

func (s *Server) store(m Message) *Message {
	s.seq++
	if m.ID == "" {
		m.ID = fmt.Sprintf("om_fake%026d", s.seq)
	}
	if m.MsgType == "" {
		m.MsgType = "text"
	}
	if m.SenderType == "" {
		m.SenderType = "user"
	}
	if m.CreateTime.IsZero() {
		m.CreateTime = time.Unix(1700000000, 0).Add(time.Duration(s.seq) * time.Second)
	}
	s.messages[m.ID] = &m
	s.order = append(s.order, m.ID)
	return &m
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Raw: raw}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &req.Body)
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	f := s.scripted(r.Method, r.URL.Path)
	s.mu.Unlock()

	if r.URL.Path == wsPath {
		s.serveWS(w, r)
		return
	}
	c := s.checkRequest(r, raw)
	if f == nil && c != nil {
		// A scripted failure is the test's own answer; the fake's are
		// held to the SDK's response types.
		tw := &tee{ResponseWriter: w}
		defer func() { s.checkAnswer(r, c, tw.body.Bytes()) }()
		w = tw
	}
	if f != nil {
		status := f.HTTPStatus
		if status == 0 {
			status = http.StatusBadRequest
		}
		if f.ResetSeconds > 0 {
			w.Header().Set("x-ogw-ratelimit-limit", "5")
			w.Header().Set("x-ogw-ratelimit-reset", strconv.Itoa(f.ResetSeconds))
		}
		msg := f.Msg
		if msg == "" {
			msg = "fake failure"
		}
		writeJSON(w, status, map[string]any{"code": f.Code, "msg": msg})
		return
	}
	if s.serveAuthen(w, r, req) {
		return
	}
	switch {
	case r.URL.Path == "/open-apis/auth/v3/tenant_access_token/internal" && r.Method == http.MethodPost:
		writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "ok", "tenant_access_token": Token, "expire": 7200})
		return
	case r.URL.Path == wsEndpointPath && r.Method == http.MethodPost:
		s.serveWSEndpoint(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+Token {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"code": 99991663, "msg": "Invalid access token for authorization."})
		return
	}
	s.route(w, r, req)
}

func (s *Server) scripted(method, path string) *Failure {
	for _, sc := range s.scripts {
		if sc.left > 0 && sc.method == method && strings.HasPrefix(path, sc.prefix) {
			sc.left--
			f := sc.f
			return &f
		}
	}
	return nil
}

func (s *Server) route(w http.ResponseWriter, r *http.Request, req Request) {
	const msgs = "/open-apis/im/v1/messages"
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, msgs), "/")
	switch {
	case r.URL.Path == "/open-apis/bot/v3/info" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "ok", "bot": map[string]any{
			"activate_status": 2, "app_name": BotName, "avatar_url": "https://example.invalid/avatar.png",
			"ip_white_list": []string{}, "open_id": BotOpenID,
		}})
	case strings.HasPrefix(r.URL.Path, contactUsers) && r.Method == http.MethodGet:
		s.user(w, r)
	case r.URL.Path == msgs && r.Method == http.MethodPost:
		s.create(w, r, req)
	case strings.HasPrefix(r.URL.Path, msgs+"/") && len(parts) == 3 && parts[2] == "reply" && r.Method == http.MethodPost:
		s.reply(w, parts[1], req)
	case strings.HasPrefix(r.URL.Path, msgs+"/") && len(parts) == 3 && parts[2] == "reactions" && r.Method == http.MethodPost:
		s.react(w, parts[1], req)
	case strings.HasPrefix(r.URL.Path, msgs+"/") && len(parts) == 2 && r.Method == http.MethodGet:
		s.get(w, parts[1])
	case strings.HasPrefix(r.URL.Path, msgs+"/") && len(parts) == 2 && r.Method == http.MethodPatch:
		s.patch(w, parts[1], req)
	case r.URL.Path == "/open-apis/im/v1/images" && r.Method == http.MethodPost:
		s.uploadImage(w, req)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"code": 404, "msg": "fake: no such API " + r.Method + " " + r.URL.Path})
	}
}

func str(body map[string]any, key string) string {
	s, _ := body[key].(string)
	return s
}

// create sends a new message: to a chat (receive_id_type=chat_id), or
// privately to a person (open_id), in their chat with the bot.
func (s *Server) create(w http.ResponseWriter, r *http.Request, req Request) {
	to := str(req.Body, "receive_id")
	switch r.URL.Query().Get("receive_id_type") {
	case "chat_id":
		s.send(w, req, Message{ChatID: to})
	case "open_id":
		if !strings.HasPrefix(to, "ou_") {
			writeJSON(w, http.StatusBadRequest, map[string]any{"code": 99992361, "msg": "open_id cross app or not exist: " + to})
			return
		}
		s.send(w, req, Message{ChatID: P2PChat(to), ToOpenID: to})
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 99992402, "msg": "field validation failed: receive_id_type (the fake knows chat_id and open_id)"})
	}
}

// P2PChat is the id the fake gives the private chat between the bot and
// the person openID.
func P2PChat(openID string) string { return "oc_p2p_" + strings.TrimPrefix(openID, "ou_") }

func (s *Server) reply(w http.ResponseWriter, parentID string, req Request) {
	s.mu.Lock()
	parent, ok := s.messages[parentID]
	var p Message
	if ok {
		p = *parent
	}
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230011, "msg": "The message was withdrawn or not found."})
		return
	}
	m := Message{ChatID: p.ChatID, ParentID: p.ID, RootID: p.RootID, ThreadID: p.ThreadID}
	if m.RootID == "" {
		m.RootID = p.ID
	}
	m.ReplyInThread, _ = req.Body["reply_in_thread"].(bool)
	if m.ReplyInThread && m.ThreadID == "" {
		m.ThreadID = "omt_" + strings.TrimPrefix(p.ID, "om_")
		s.mu.Lock()
		parent.ThreadID = m.ThreadID
		s.mu.Unlock()
	}
	s.send(w, req, m)
}

// send stores a message from the bot. Like Feishu, a repeated uuid returns
// the first message instead of sending another.
func (s *Server) send(w http.ResponseWriter, req Request, m Message) {
	m.MsgType, m.Content, m.UUID = str(req.Body, "msg_type"), str(req.Body, "content"), str(req.Body, "uuid")
	m.SenderID, m.SenderType = AppID, "app"
	if m.MsgType == "" || m.Content == "" || !json.Valid([]byte(m.Content)) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "param is invalid: content or msg_type"})
		return
	}
	s.mu.Lock()
	var stored *Message
	if id, ok := s.uuids[m.UUID]; ok && m.UUID != "" {
		stored = s.messages[id]
	} else {
		stored = s.store(m)
		if m.UUID != "" {
			s.uuids[m.UUID] = stored.ID
		}
	}
	out := wireMessage(stored)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": out})
}

func (s *Server) react(w http.ResponseWriter, messageID string, req Request) {
	rt, _ := req.Body["reaction_type"].(map[string]any)
	emoji, _ := rt["emoji_type"].(string)
	s.mu.Lock()
	_, ok := s.messages[messageID]
	var rc Reaction
	if ok && emoji != "" {
		s.seq++
		rc = Reaction{ID: fmt.Sprintf("reaction_%d", s.seq), MessageID: messageID, EmojiType: emoji}
		s.reactions = append(s.reactions, rc)
	}
	s.mu.Unlock()
	switch {
	case !ok:
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 231003, "msg": "The message is not found"})
	case emoji == "":
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 231001, "msg": "reaction type is invalid."})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": map[string]any{
			"reaction_id":   rc.ID,
			"operator":      map[string]any{"operator_id": AppID, "operator_type": "app"},
			"action_time":   "1700000000000",
			"reaction_type": map[string]any{"emoji_type": emoji},
		}})
	}
}

// Message returns the message with id as the fake holds it now (a patched
// card with its latest content), and whether there is one.
func (s *Server) Message(id string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[id]
	if !ok {
		return Message{}, false
	}
	return *m, true
}

// patch updates a card the app sent, as Feishu does: only an interactive
// message of this app whose card, before and after, declares
// config.update_multi true (a shared card); the answer carries no data.
func (s *Server) patch(w http.ResponseWriter, id string, req Request) {
	content := str(req.Body, "content")
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[id]
	switch {
	case !ok:
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230011, "msg": "The message was withdrawn or not found."})
	case m.SenderType != "app" || m.SenderID != AppID:
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230027, "msg": "Lack of necessary permissions: the message was not sent by this app."})
	case m.MsgType != "interactive":
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "param is invalid: only interactive messages can be updated"})
	case !sharedCard(m.Content) || !sharedCard(content):
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "param is invalid: the card must set config.update_multi to true before and after the update"})
	default:
		m.Content = content
		m.Patches++
		writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success"})
	}
}

// sharedCard reports whether card JSON declares config.update_multi true.
func sharedCard(content string) bool {
	var c struct {
		Config struct {
			UpdateMulti bool `json:"update_multi"`
		} `json:"config"`
	}
	return json.Unmarshal([]byte(content), &c) == nil && c.Config.UpdateMulti
}

func (s *Server) get(w http.ResponseWriter, id string) {
	s.mu.Lock()
	m, ok := s.messages[id]
	var out map[string]any
	if ok {
		out = wireMessage(m)
	}
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230011, "msg": "The message was withdrawn or not found."})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": map[string]any{"items": []any{out}}})
}

// wireMessage renders a message as the im/v1 API does.
func wireMessage(m *Message) map[string]any {
	idType := "open_id"
	if m.SenderType == "app" {
		idType = "app_id"
	}
	ms := strconv.FormatInt(m.CreateTime.UnixMilli(), 10)
	out := map[string]any{
		"message_id":  m.ID,
		"msg_type":    m.MsgType,
		"create_time": ms,
		"update_time": ms,
		"deleted":     false,
		"updated":     m.Patches > 0,
		"chat_id":     m.ChatID,
		"sender":      map[string]any{"id": m.SenderID, "id_type": idType, "sender_type": m.SenderType, "tenant_key": "fake_tenant"},
		"body":        map[string]any{"content": m.Content},
	}
	for k, v := range map[string]string{"root_id": m.RootID, "parent_id": m.ParentID, "thread_id": m.ThreadID} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// tee passes an answer through while keeping a copy to check.
type tee struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (w *tee) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}
