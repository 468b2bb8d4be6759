package feishu

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Event types this package parses in detail; other types parse into an Event
// with only the header fields set.
const (
	EventMessageReceived = "im.message.receive_v1"
	EventCardAction      = "card.action.trigger"
	EventBotAdded        = "im.chat.member.bot.added_v1"
	EventBotDeleted      = "im.chat.member.bot.deleted_v1"
)

// Chat types of Message.ChatType.
const (
	ChatGroup = "group"
	ChatP2P   = "p2p"
)

// Event is a Feishu event (schema 2.0) in a source-neutral shape.
// Exactly one of Message, CardAction and Chat is set for the event types
// above; none for other types.
type Event struct {
	ID         string    // header.event_id
	Type       string    // header.event_type
	CreateTime time.Time // header.create_time; zero when absent
	TenantKey  string
	AppID      string

	Message    *Message
	CardAction *CardAction
	Chat       *ChatMembership
}

// DedupeKey is the key under which the event is stored once: "message:" and
// the message id for received messages (Feishu says not to rely on event_id
// for them), "event:" and the event id for everything else.
func (e *Event) DedupeKey() string {
	if e.Type == EventMessageReceived && e.Message != nil && e.Message.ID != "" {
		return "message:" + e.Message.ID
	}
	return "event:" + e.ID
}

// Message is a received message (im.message.receive_v1).
type Message struct {
	ID         string
	RootID     string // first message of the reply chain; empty for a new conversation
	ParentID   string // message replied to
	ThreadID   string // topic thread, when the message is in one
	ChatID     string
	ChatType   string // ChatGroup or ChatP2P
	Type       string // message_type: text, post, image, file, media, audio, sticker, interactive…
	CreateTime time.Time
	Sender     Sender
	Mentions   []Mention
	// MentionsBot reports that one of Mentions is the bot (see ParseOptions).
	MentionsBot bool
	// Text is the content as plain text: mentions resolved to "@Name", rich
	// text flattened, attachments shown as "[image]" etc.
	Text        string
	Attachments []Attachment
	// Content is the raw content JSON, as Feishu sent it.
	Content string
	// Deleted is set by Client.GetMessage for a withdrawn message.
	Deleted bool
}

// ThreadKey names the conversation the message belongs to within its chat:
// the root message of its reply chain, or the message itself when it starts
// one. It is stable across a conversation, unlike ThreadID: the first message
// of a topic has no thread_id until someone replies in a thread, while every
// reply carries the first message as root_id.
func (m *Message) ThreadKey() string {
	if m.RootID != "" {
		return m.RootID
	}
	return m.ID
}

// Sender identifies who sent a message. OpenID is per app and is the key to
// use; UnionID spans the developer's apps; UserID needs an extra scope.
type Sender struct {
	OpenID    string
	UnionID   string
	UserID    string
	AppID     string // set instead of OpenID when Client.GetMessage finds an app sent it
	Type      string // "user" or "app"
	TenantKey string
}

// Mention is an @mention in a message.
type Mention struct {
	Key     string // placeholder in the text, e.g. "@_user_1"
	OpenID  string
	UnionID string
	UserID  string
	Name    string
	IsBot   bool // the mention is this app's bot
}

// Attachment points to a file carried by a message. Download it with
// GET /open-apis/im/v1/messages/{MessageID}/resources/{FileKey}?type={ResourceType}.
type Attachment struct {
	Kind         string // image, file, media, audio, sticker
	MessageID    string
	FileKey      string
	ResourceType string // "image" or "file", the type parameter of the resources API
	Name         string // file name when known
}

// CardAction is a click on an interactive card (card.action.trigger). It is a
// callback: Feishu waits for the HTTP response (within 3 s), whose body may
// carry a toast or a new card (see CardActionResponse).
type CardAction struct {
	// Value is the action's value as configured on the card element,
	// usually a JSON object such as {"action":"pause","ticket":"T-1"}.
	Value          json.RawMessage
	Tag            string // element tag: button, select_static…
	Option         string // chosen option of a select
	FormValue      json.RawMessage
	OperatorOpenID string
	OperatorUserID string
	MessageID      string // the card's message
	ChatID         string
	// Token allows updating the card later (valid 30 minutes, twice).
	Token string
}

// ValueString returns Value[key] when Value is an object and the field is a
// string, else "".
func (a *CardAction) ValueString(key string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(a.Value, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[key], &s) != nil {
		return ""
	}
	return s
}

// ChatMembership is the bot being added to or removed from a chat.
type ChatMembership struct {
	ChatID         string
	Name           string
	Added          bool // false: removed
	External       bool
	OperatorOpenID string
}

// CardActionResponse is the body answering a card.action.trigger callback.
// The zero value ({}) acknowledges without changing anything.
type CardActionResponse struct {
	Toast *Toast `json:"toast,omitempty"`
}

// Toast is a short notice shown to the person who clicked.
type Toast struct {
	Type    string `json:"type"` // info, success, warning, error
	Content string `json:"content"`
}

// ParseOptions tunes Parse.
type ParseOptions struct {
	// BotOpenID is the bot's own open_id (Client.BotInfo). When empty no
	// mention is recognised as the bot's.
	BotOpenID string
}

type rawEvent struct {
	Schema string `json:"schema"`
	Header *struct {
		EventID    string `json:"event_id"`
		EventType  string `json:"event_type"`
		CreateTime string `json:"create_time"`
		TenantKey  string `json:"tenant_key"`
		AppID      string `json:"app_id"`
	} `json:"header"`
	Event json.RawMessage `json:"event"`
}

type rawUserID struct {
	OpenID  string `json:"open_id"`
	UnionID string `json:"union_id"`
	UserID  string `json:"user_id"`
}

type rawMessageEvent struct {
	Sender struct {
		SenderID   rawUserID `json:"sender_id"`
		SenderType string    `json:"sender_type"`
		TenantKey  string    `json:"tenant_key"`
	} `json:"sender"`
	Message struct {
		MessageID   string `json:"message_id"`
		RootID      string `json:"root_id"`
		ParentID    string `json:"parent_id"`
		ThreadID    string `json:"thread_id"`
		CreateTime  string `json:"create_time"`
		ChatID      string `json:"chat_id"`
		ChatType    string `json:"chat_type"`
		MessageType string `json:"message_type"`
		Content     string `json:"content"`
		Mentions    []struct {
			Key  string    `json:"key"`
			ID   rawUserID `json:"id"`
			Name string    `json:"name"`
		} `json:"mentions"`
	} `json:"message"`
}

type rawCardAction struct {
	Operator struct {
		OpenID string `json:"open_id"`
		UserID string `json:"user_id"`
	} `json:"operator"`
	Token  string `json:"token"`
	Action struct {
		Value     json.RawMessage `json:"value"`
		Tag       string          `json:"tag"`
		Option    string          `json:"option"`
		FormValue json.RawMessage `json:"form_value"`
	} `json:"action"`
	Context struct {
		OpenMessageID string `json:"open_message_id"`
		OpenChatID    string `json:"open_chat_id"`
	} `json:"context"`
}

type rawChatMember struct {
	ChatID     string    `json:"chat_id"`
	Name       string    `json:"name"`
	External   bool      `json:"external"`
	OperatorID rawUserID `json:"operator_id"`
}

// Parse reads a decrypted schema 2.0 event (Inbound.Plain, or what the long
// connection delivers). Errors wrap ErrMalformed. A message whose content
// cannot be read still parses: its Text is then the raw content.
func Parse(plain []byte, opts ParseOptions) (*Event, error) {
	var raw rawEvent
	if err := json.Unmarshal(plain, &raw); err != nil {
		return nil, fmt.Errorf("%w: event is not JSON: %w", ErrMalformed, err)
	}
	if raw.Schema != "2.0" || raw.Header == nil {
		return nil, fmt.Errorf("%w: not a schema 2.0 event", ErrMalformed)
	}
	if raw.Header.EventID == "" || raw.Header.EventType == "" {
		return nil, fmt.Errorf("%w: event without id or type", ErrMalformed)
	}
	ev := &Event{
		ID:         raw.Header.EventID,
		Type:       raw.Header.EventType,
		CreateTime: millis(raw.Header.CreateTime),
		TenantKey:  raw.Header.TenantKey,
		AppID:      raw.Header.AppID,
	}
	body := raw.Event
	if len(bytes.TrimSpace(body)) == 0 || bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		body = []byte("{}")
	}
	var err error
	switch ev.Type {
	case EventMessageReceived:
		ev.Message, err = parseMessage(body, opts)
	case EventCardAction:
		ev.CardAction, err = parseCardAction(body)
	case EventBotAdded, EventBotDeleted:
		ev.Chat, err = parseChatMember(body, ev.Type == EventBotAdded)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s event %s: %w", ErrMalformed, ev.Type, ev.ID, err)
	}
	return ev, nil
}

func parseMessage(body []byte, opts ParseOptions) (*Message, error) {
	var raw rawMessageEvent
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, err
	}
	rm := raw.Message
	if rm.MessageID == "" {
		return nil, fmt.Errorf("message without message_id")
	}
	m := &Message{
		ID:         rm.MessageID,
		RootID:     rm.RootID,
		ParentID:   rm.ParentID,
		ThreadID:   rm.ThreadID,
		ChatID:     rm.ChatID,
		ChatType:   rm.ChatType,
		Type:       rm.MessageType,
		CreateTime: millis(rm.CreateTime),
		Content:    rm.Content,
		Sender: Sender{
			OpenID:    raw.Sender.SenderID.OpenID,
			UnionID:   raw.Sender.SenderID.UnionID,
			UserID:    raw.Sender.SenderID.UserID,
			Type:      raw.Sender.SenderType,
			TenantKey: raw.Sender.TenantKey,
		},
	}
	for _, rmen := range rm.Mentions {
		men := Mention{
			Key:     rmen.Key,
			OpenID:  rmen.ID.OpenID,
			UnionID: rmen.ID.UnionID,
			UserID:  rmen.ID.UserID,
			Name:    rmen.Name,
			IsBot:   opts.BotOpenID != "" && rmen.ID.OpenID == opts.BotOpenID,
		}
		m.MentionsBot = m.MentionsBot || men.IsBot
		m.Mentions = append(m.Mentions, men)
	}
	m.Text, m.Attachments = flatten(m.Type, m.ID, m.Content, m.Mentions)
	return m, nil
}

func parseCardAction(body []byte) (*CardAction, error) {
	var raw rawCardAction
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, err
	}
	return &CardAction{
		Value:          raw.Action.Value,
		Tag:            raw.Action.Tag,
		Option:         raw.Action.Option,
		FormValue:      raw.Action.FormValue,
		OperatorOpenID: raw.Operator.OpenID,
		OperatorUserID: raw.Operator.UserID,
		MessageID:      raw.Context.OpenMessageID,
		ChatID:         raw.Context.OpenChatID,
		Token:          raw.Token,
	}, nil
}

func parseChatMember(body []byte, added bool) (*ChatMembership, error) {
	var raw rawChatMember
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, err
	}
	if raw.ChatID == "" {
		return nil, fmt.Errorf("without chat_id")
	}
	return &ChatMembership{
		ChatID:         raw.ChatID,
		Name:           raw.Name,
		Added:          added,
		External:       raw.External,
		OperatorOpenID: raw.OperatorID.OpenID,
	}, nil
}

// millis reads a millisecond timestamp string; zero time when unreadable.
func millis(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
