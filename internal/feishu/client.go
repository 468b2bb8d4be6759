package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/superagent-dev/superagent/internal/retry"
)

// Config configures a Client.
type Config struct {
	// AppID and AppSecret identify the app (SUPERAGENT_FEISHU_APP_ID,
	// SUPERAGENT_FEISHU_APP_SECRET). Required.
	AppID     string
	AppSecret string
	// BaseURL is the Open API base (SUPERAGENT_FEISHU_BASE_URL).
	// Default https://open.feishu.cn; Lark is https://open.larksuite.com.
	BaseURL string
	// MaxRetries is how many times a rate-limited call is retried after
	// waiting. Default 3; negative means never.
	MaxRetries int
	// MaxWait caps one wait for a rate-limit reset; a longer reset ends the
	// call with the rate-limit *APIError (wrapped: use errors.As). Default
	// 1 minute.
	MaxWait time.Duration
	// ChatInterval spaces messages and reactions to one chat.
	// Default 200ms (5 QPS, Feishu's per-chat limit); negative disables.
	ChatInterval time.Duration
	// Timeout bounds one HTTP request. Default 15 seconds.
	Timeout time.Duration
	// Registerer receives the superagent_feishu_* metrics. Default: none.
	// Clients sharing a Registerer share the metrics.
	Registerer prometheus.Registerer
}

// Client calls the Feishu Open API through the official SDK. Safe for
// concurrent use.
type Client struct {
	cfg     Config
	lark    *lark.Client
	clock   Clock
	limiter *chatLimiter
	retry   retry.Policy
	metrics *metrics

	botMu sync.Mutex
	bot   *BotInfo
}

// New returns a Client. clock may be nil (the system clock); logger may be
// nil (discard).
func New(cfg Config, clock Clock, logger *slog.Logger) (*Client, error) {
	var problems []string
	if cfg.AppID == "" {
		problems = append(problems, "app id is required")
	}
	if cfg.AppSecret == "" {
		problems = append(problems, "app secret is required")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("configuring feishu client: %s", strings.Join(problems, "; "))
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = lark.FeishuBaseUrl
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 3
	}
	if cfg.MaxWait == 0 {
		cfg.MaxWait = time.Minute
	}
	if cfg.ChatInterval == 0 {
		cfg.ChatInterval = 200 * time.Millisecond
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 15 * time.Second
	}
	if clock == nil {
		clock = SystemClock()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("configuring feishu client: %w", err)
	}
	cli := lark.NewClient(cfg.AppID, cfg.AppSecret,
		lark.WithOpenBaseUrl(strings.TrimRight(cfg.BaseURL, "/")),
		lark.WithHttpClient(&http.Client{Timeout: cfg.Timeout}),
		lark.WithLogger(sdkLogger{logger}),
		lark.WithLogLevel(larkcore.LogLevelWarn),
	)
	return &Client{cfg: cfg, lark: cli, clock: clock, limiter: newChatLimiter(cfg.ChatInterval, clock), metrics: m,
		retry: retry.Policy{
			Retries: cfg.MaxRetries,
			MaxWait: cfg.MaxWait,
			// Without a reset header, wait out a full one-second window.
			Backoff: func(int) time.Duration { return time.Second },
			Sleep:   clock.Sleep,
		}}, nil
}

// RateLimitCode is Feishu's error code for "request trigger frequency limit".
const RateLimitCode = 99991400

// APIError is a failure Feishu reported (the SDK returns these as data, not
// as Go errors).
type APIError struct {
	Op         string // what was attempted, e.g. "replying to om_…"
	HTTPStatus int
	Code       int
	Msg        string
	LogID      string // Feishu's request id, for their support
	// RetryAfter is the x-ogw-ratelimit-reset wait of a rate-limit answer.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%s: feishu error %d: %s (http %d", e.Op, e.Code, e.Msg, e.HTTPStatus)
	if e.LogID != "" {
		s += ", log id " + e.LogID
	}
	return s + ")"
}

// RateLimited reports a 429 / code 99991400 answer.
func (e *APIError) RateLimited() bool {
	return e.HTTPStatus == http.StatusTooManyRequests || e.Code == RateLimitCode
}

// OutgoingMessage is a message to send.
type OutgoingMessage struct {
	// UUID is required: Feishu sends at most one message per uuid within an
	// hour, so a retried send cannot duplicate. Use the outgoing-message
	// intent id. At most 50 characters.
	UUID string
	// ChatID is the chat to send to (Send), or the chat of the message
	// answered (Reply, optional: it keys the per-chat pacing).
	ChatID  string
	Content Content
}

func (m OutgoingMessage) check() error {
	var problems []string
	if m.UUID == "" {
		problems = append(problems, "uuid is required")
	} else if len(m.UUID) > 50 {
		problems = append(problems, fmt.Sprintf("uuid %q longer than 50 characters", m.UUID))
	}
	if err := m.Content.check(); err != nil {
		if errors.Is(err, ErrTooLarge) {
			return err
		}
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// SentMessage is what Feishu answered for a sent message.
type SentMessage struct {
	MessageID string
	RootID    string
	ParentID  string
	ThreadID  string
	ChatID    string
}

func sentFrom(id, root, parent, thread, chat *string) *SentMessage {
	return &SentMessage{MessageID: deref(id), RootID: deref(root), ParentID: deref(parent),
		ThreadID: deref(thread), ChatID: deref(chat)}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Reply answers messageID in its thread (reply_in_thread), so the
// conversation stays in one topic.
func (c *Client) Reply(ctx context.Context, messageID string, m OutgoingMessage) (*SentMessage, error) {
	op := "replying to " + messageID
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	key := m.ChatID
	if key == "" {
		key = "message:" + messageID
	}
	req := larkim.NewReplyMessageReqBuilder().MessageId(messageID).
		Body(larkim.NewReplyMessageReqBodyBuilder().
			MsgType(m.Content.MsgType).Content(m.Content.JSON).ReplyInThread(true).Uuid(m.UUID).Build()).
		Build()
	var out *SentMessage
	err := c.call(ctx, "reply", op, key, func(ctx context.Context) (*larkcore.ApiResp, larkcore.CodeError, error) {
		resp, err := c.lark.Im.Message.Reply(ctx, req)
		if err != nil {
			return nil, larkcore.CodeError{}, err
		}
		if resp.Success() && resp.Data != nil {
			d := resp.Data
			out = sentFrom(d.MessageId, d.RootId, d.ParentId, d.ThreadId, d.ChatId)
		}
		return resp.ApiResp, resp.CodeError, nil
	})
	return out, err
}

// Send posts a new message to m.ChatID.
func (c *Client) Send(ctx context.Context, m OutgoingMessage) (*SentMessage, error) {
	op := "sending to " + m.ChatID
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if m.ChatID == "" {
		return nil, fmt.Errorf("%s: chat id is required", op)
	}
	return c.create(ctx, op, larkim.ReceiveIdTypeChatId, m.ChatID, m.ChatID, m)
}

// create posts m as a new message to the receiver id of idType, paced
// under key.
func (c *Client) create(ctx context.Context, op, idType, id, key string, m OutgoingMessage) (*SentMessage, error) {
	req := larkim.NewCreateMessageReqBuilder().ReceiveIdType(idType).
		Body(larkim.NewCreateMessageReqBodyBuilder().
			ReceiveId(id).MsgType(m.Content.MsgType).Content(m.Content.JSON).Uuid(m.UUID).Build()).
		Build()
	var out *SentMessage
	err := c.call(ctx, "send", op, key, func(ctx context.Context) (*larkcore.ApiResp, larkcore.CodeError, error) {
		resp, err := c.lark.Im.Message.Create(ctx, req)
		if err != nil {
			return nil, larkcore.CodeError{}, err
		}
		if resp.Success() && resp.Data != nil {
			d := resp.Data
			out = sentFrom(d.MessageId, d.RootId, d.ParentId, d.ThreadId, d.ChatId)
		}
		return resp.ApiResp, resp.CodeError, nil
	})
	return out, err
}

// PatchCard replaces the content of an interactive card the bot sent
// (PATCH /open-apis/im/v1/messages/:message_id). Feishu updates only cards
// sent with config.update_multi true (shared cards), within 14 days of
// sending, and at most 5 times a second per message; the card is shown to
// everyone in the chat. Sending the same content again is harmless. chatID
// is optional and keys the per-chat pacing.
func (c *Client) PatchCard(ctx context.Context, messageID, chatID string, card Content) error {
	op := "updating card " + messageID
	if messageID == "" {
		return fmt.Errorf("%s: message id is required", op)
	}
	if card.MsgType != "interactive" {
		return fmt.Errorf("%s: only interactive cards can be updated, not %q", op, card.MsgType)
	}
	if err := card.check(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	key := chatID
	if key == "" {
		key = "message:" + messageID
	}
	req := larkim.NewPatchMessageReqBuilder().MessageId(messageID).
		Body(larkim.NewPatchMessageReqBodyBuilder().Content(card.JSON).Build()).Build()
	return c.call(ctx, "patch_card", op, key, func(ctx context.Context) (*larkcore.ApiResp, larkcore.CodeError, error) {
		resp, err := c.lark.Im.Message.Patch(ctx, req)
		if err != nil {
			return nil, larkcore.CodeError{}, err
		}
		return resp.ApiResp, resp.CodeError, nil
	})
}

// EmojiOnIt is the reaction for "picked up, working on it".
const EmojiOnIt = "OnIt"

// React adds an emoji reaction (e.g. EmojiOnIt) to a message and returns the
// reaction id. chatID is optional and keys the per-chat pacing.
func (c *Client) React(ctx context.Context, messageID, chatID, emojiType string) (string, error) {
	op := fmt.Sprintf("reacting %s to %s", emojiType, messageID)
	if messageID == "" || emojiType == "" {
		return "", fmt.Errorf("%s: message id and emoji type are required", op)
	}
	key := chatID
	if key == "" {
		key = "message:" + messageID
	}
	req := larkim.NewCreateMessageReactionReqBuilder().MessageId(messageID).
		Body(larkim.NewCreateMessageReactionReqBodyBuilder().
			ReactionType(larkim.NewEmojiBuilder().EmojiType(emojiType).Build()).Build()).
		Build()
	var id string
	err := c.call(ctx, "react", op, key, func(ctx context.Context) (*larkcore.ApiResp, larkcore.CodeError, error) {
		resp, err := c.lark.Im.MessageReaction.Create(ctx, req)
		if err != nil {
			return nil, larkcore.CodeError{}, err
		}
		if resp.Success() && resp.Data != nil {
			id = deref(resp.Data.ReactionId)
		}
		return resp.ApiResp, resp.CodeError, nil
	})
	return id, err
}

// BotInfo is the app's bot as Feishu describes it.
type BotInfo struct {
	OpenID string // the bot's own open_id: mentions of it address the bot
	Name   string
}

// BotInfo fetches the bot's identity (GET /open-apis/bot/v3/info, which the
// SDK has no typed call for).
func (c *Client) BotInfo(ctx context.Context) (*BotInfo, error) {
	var out *BotInfo
	err := c.call(ctx, "bot_info", "getting bot info", "", func(ctx context.Context) (*larkcore.ApiResp, larkcore.CodeError, error) {
		resp, err := c.lark.Get(ctx, "/open-apis/bot/v3/info", nil, larkcore.AccessTokenTypeTenant)
		if err != nil {
			return nil, larkcore.CodeError{}, err
		}
		var body struct {
			larkcore.CodeError
			Bot struct {
				OpenID  string `json:"open_id"`
				AppName string `json:"app_name"`
			} `json:"bot"`
		}
		if err := json.Unmarshal(resp.RawBody, &body); err != nil {
			return resp, larkcore.CodeError{Code: -1, Msg: "unreadable body: " + err.Error()}, nil
		}
		if body.Code == 0 {
			if body.Bot.OpenID == "" {
				return resp, larkcore.CodeError{Code: -1, Msg: "bot info without open_id"}, nil
			}
			out = &BotInfo{OpenID: body.Bot.OpenID, Name: body.Bot.AppName}
		}
		return resp, body.CodeError, nil
	})
	return out, err
}

// BotOpenID returns the bot's open_id for ParseOptions.BotOpenID, fetching
// it on first use and keeping it; a failed fetch is retried on the next call.
func (c *Client) BotOpenID(ctx context.Context) (string, error) {
	c.botMu.Lock()
	defer c.botMu.Unlock()
	if c.bot == nil {
		bot, err := c.BotInfo(ctx)
		if err != nil {
			return "", err
		}
		c.bot = bot
	}
	return c.bot.OpenID, nil
}

// AppID is the app id the client was configured with: compare it with
// Message.Sender.AppID from GetMessage to tell the bot's own messages.
func (c *Client) AppID() string { return c.cfg.AppID }

// GetMessage fetches a message, e.g. the parent of a reply, to tell whether
// the bot wrote it. The result has no ChatType and no MentionsBot; Sender.AppID
// is set when an app sent it.
func (c *Client) GetMessage(ctx context.Context, messageID string) (*Message, error) {
	op := "getting message " + messageID
	req := larkim.NewGetMessageReqBuilder().MessageId(messageID).Build()
	var out *Message
	err := c.call(ctx, "get_message", op, "", func(ctx context.Context) (*larkcore.ApiResp, larkcore.CodeError, error) {
		resp, err := c.lark.Im.Message.Get(ctx, req)
		if err != nil {
			return nil, larkcore.CodeError{}, err
		}
		if resp.Success() {
			if resp.Data == nil || len(resp.Data.Items) == 0 || resp.Data.Items[0] == nil {
				return resp.ApiResp, larkcore.CodeError{Code: -1, Msg: "no message in the answer"}, nil
			}
			out = messageFromAPI(resp.Data.Items[0])
		}
		return resp.ApiResp, resp.CodeError, nil
	})
	return out, err
}

func messageFromAPI(it *larkim.Message) *Message {
	m := &Message{
		ID:         deref(it.MessageId),
		RootID:     deref(it.RootId),
		ParentID:   deref(it.ParentId),
		ThreadID:   deref(it.ThreadId),
		ChatID:     deref(it.ChatId),
		Type:       deref(it.MsgType),
		CreateTime: millis(deref(it.CreateTime)),
		Deleted:    it.Deleted != nil && *it.Deleted,
	}
	if it.Body != nil {
		m.Content = deref(it.Body.Content)
	}
	if s := it.Sender; s != nil {
		m.Sender.Type = deref(s.SenderType)
		m.Sender.TenantKey = deref(s.TenantKey)
		if deref(s.IdType) == "app_id" {
			m.Sender.AppID = deref(s.Id)
		} else {
			m.Sender.OpenID = deref(s.Id)
		}
	}
	for _, men := range it.Mentions {
		if men != nil {
			m.Mentions = append(m.Mentions, Mention{Key: deref(men.Key), OpenID: deref(men.Id), Name: deref(men.Name)})
		}
	}
	m.Text, m.Attachments = flatten(m.Type, m.ID, m.Content, m.Mentions)
	return m
}

// call runs one API call with per-chat pacing and bounded waits on rate
// limits, and counts it under name (a fixed operation name: the metrics
// label). Other failures are returned at once: the caller's job retries,
// and the message uuid keeps a retried send from duplicating.
func (c *Client) call(ctx context.Context, name, op, chatKey string,
	do func(context.Context) (*larkcore.ApiResp, larkcore.CodeError, error)) error {
	outcome := "error"
	defer func() { c.metrics.calls.WithLabelValues(name, outcome).Inc() }()
	return c.retry.Do(ctx, func(int) error {
		paced, err := c.limiter.wait(ctx, chatKey)
		c.metrics.pacing(name, paced)
		if err != nil {
			return fmt.Errorf("%s: waiting for the chat rate limit: %w", op, err)
		}
		raw, ce, err := do(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		status := 0
		if raw != nil {
			status = raw.StatusCode
		}
		if ce.Code == 0 && status < 300 {
			outcome = "ok"
			return nil
		}
		apiErr := &APIError{Op: op, HTTPStatus: status, Code: ce.Code, Msg: ce.Msg}
		if raw != nil {
			apiErr.LogID = raw.RequestId()
			// Feishu's reset header counts seconds, as Retry-After does.
			apiErr.RetryAfter, _ = retry.ParseRetryAfter(raw.Header.Get("x-ogw-ratelimit-reset"), c.clock.Now())
		}
		if !apiErr.RateLimited() {
			outcome = "api_error"
			return apiErr
		}
		outcome = "rate_limited"
		c.metrics.rateLimited.WithLabelValues(name).Inc()
		return retry.Again(apiErr, apiErr.RetryAfter)
	}, func(wait time.Duration) {
		c.limiter.delay(chatKey, c.clock.Now().Add(wait))
		c.metrics.waited(name, wait)
		outcome = "error"
	})
}

// UploadImage uploads a PNG, JPEG, GIF, BMP or WebP image of at most
// 10 MB for messages and cards (POST /open-apis/im/v1/images,
// image_type=message) and returns its image_key. Each upload makes a new
// key: keep it rather than upload the same image again.
func (c *Client) UploadImage(ctx context.Context, image []byte) (string, error) {
	const op = "uploading an image"
	if len(image) == 0 || len(image) > 10<<20 {
		return "", fmt.Errorf("%s: %d bytes is outside 1 byte to 10 MB", op, len(image))
	}
	var key string
	err := c.call(ctx, "upload_image", op, "images", func(ctx context.Context) (*larkcore.ApiResp, larkcore.CodeError, error) {
		req := larkim.NewCreateImageReqBuilder().Body(larkim.NewCreateImageReqBodyBuilder().
			ImageType(larkim.ImageTypeMessage).Image(bytes.NewReader(image)).Build()).Build()
		resp, err := c.lark.Im.Image.Create(ctx, req)
		if err != nil {
			return nil, larkcore.CodeError{}, err
		}
		if resp.Success() && resp.Data != nil {
			key = deref(resp.Data.ImageKey)
		}
		return resp.ApiResp, resp.CodeError, nil
	})
	if err == nil && key == "" {
		err = fmt.Errorf("%s: the answer has no image_key", op)
	}
	return key, err
}
