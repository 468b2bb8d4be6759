package feishu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
)

// LongConnConfig configures the long connection
// (SUPERAGENT_FEISHU_MODE=longconn).
type LongConnConfig struct {
	// AppID and AppSecret identify the app. Required.
	AppID     string
	AppSecret string
	// BaseURL is the Open API base. Default https://open.feishu.cn.
	BaseURL string
	// EventTypes are delivered to the handler; Feishu only sends the types
	// subscribed in the console, and the SDK answers any other type with an
	// error. Default: EventMessageReceived, EventCardAction, EventBotAdded,
	// EventBotDeleted.
	EventTypes []string
	// RestartDelay is the pause before starting a fresh SDK client after one
	// gave up reconnecting. Default 30 seconds.
	RestartDelay time.Duration
}

// EventHandler receives one event from the long connection: its JSON, the
// same shape as Inbound.Plain on the webhook path, ready for Parse. It is
// called concurrently (the SDK handles frames in parallel) and should only
// store and enqueue: Feishu expects an answer within about 3 seconds.
// Returning an error makes Feishu deliver the event again later.
type EventHandler func(ctx context.Context, plain []byte) error

// LongConn receives events over the SDK's long connection (larkws), which
// needs no public URL. Feishu sends each event to one of the app's
// connections (at most 50), so several processes may each run one.
type LongConn struct {
	cfg    LongConnConfig
	handle EventHandler
	clock  Clock
	logger *slog.Logger
}

// NewLongConn returns a LongConn feeding handle. clock and logger may be nil.
func NewLongConn(cfg LongConnConfig, handle EventHandler, clock Clock, logger *slog.Logger) (*LongConn, error) {
	var problems []string
	if cfg.AppID == "" {
		problems = append(problems, "app id is required")
	}
	if cfg.AppSecret == "" {
		problems = append(problems, "app secret is required")
	}
	if handle == nil {
		problems = append(problems, "an event handler is required")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("configuring feishu long connection: %s", strings.Join(problems, "; "))
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = lark.FeishuBaseUrl
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if len(cfg.EventTypes) == 0 {
		cfg.EventTypes = []string{EventMessageReceived, EventCardAction, EventBotAdded, EventBotDeleted}
	}
	if cfg.RestartDelay == 0 {
		cfg.RestartDelay = 30 * time.Second
	}
	if clock == nil {
		clock = SystemClock()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &LongConn{cfg: cfg, handle: handle, clock: clock, logger: logger}, nil
}

// Run connects and delivers events until ctx ends, then returns nil. It
// returns an error when Feishu refuses the app for good (bad credentials,
// app forbidden, too many connections): the SDK reports these as
// *larkws.ClientError and retrying would not help.
//
// What stopping can and cannot do: the SDK's Start blocks forever and takes
// no stop signal, so each SDK client runs in its own goroutine that outlives
// Run. Run hands the SDK its ctx, and once ctx ends (1) every event still
// arriving is refused, so Feishu redelivers it (to another connection or
// later) instead of it being lost, and (2) the SDK's reconnect attempts fail
// at once, so a dropped connection is not reopened. The socket itself stays
// open until the process exits. Call Run once per process.
func (l *LongConn) Run(ctx context.Context) error {
	for {
		if ctx.Err() != nil {
			return nil //nolint:nilerr // cancellation is the normal end: a client started now could never be stopped
		}
		client := larkws.NewClient(l.cfg.AppID, l.cfg.AppSecret,
			larkws.WithDomain(l.cfg.BaseURL),
			larkws.WithEventHandler(l.dispatcher()),
			larkws.WithLogger(sdkLogger{l.logger}),
			larkws.WithLogLevel(larkcore.LogLevelInfo),
		)
		done := make(chan error, 1)
		go func() { done <- client.Start(ctx) }()

		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			var refused *larkws.ClientError
			if errors.As(err, &refused) {
				return fmt.Errorf("feishu long connection refused: %w", err)
			}
			l.logger.Warn("feishu long connection gave up; starting a new one",
				"error", err, "delay", l.cfg.RestartDelay)
		}
		_ = l.clock.Sleep(ctx, l.cfg.RestartDelay) // ends early when ctx does
		select {
		case <-ctx.Done():
			return nil
		default:
		}
	}
}

// dispatcher routes every configured event type to the handler with its raw
// JSON. Card actions are callbacks and answered with an empty response ({}).
func (l *LongConn) dispatcher() *dispatcher.EventDispatcher {
	d := dispatcher.NewEventDispatcher("", "")
	d.InitConfig(larkevent.WithLogger(sdkLogger{l.logger}))
	for _, typ := range l.cfg.EventTypes {
		if typ == EventCardAction {
			d.OnP2CardActionTrigger(func(ctx context.Context, ev *callback.CardActionTriggerEvent) (*callback.CardActionTriggerResponse, error) {
				if ev.EventReq == nil {
					return nil, errors.New("card action without its raw request")
				}
				if err := l.deliver(ctx, ev.Body); err != nil {
					return nil, err
				}
				return &callback.CardActionTriggerResponse{}, nil
			})
			continue
		}
		d.OnCustomizedEvent(typ, func(ctx context.Context, req *larkevent.EventReq) error {
			return l.deliver(ctx, req.Body)
		})
	}
	return d
}

func (l *LongConn) deliver(ctx context.Context, plain []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("long connection stopped: %w", err)
	}
	// The SDK reuses nothing, but the handler may keep the bytes: copy.
	if err := l.handle(ctx, append([]byte(nil), plain...)); err != nil {
		l.logger.Error("handling feishu event from the long connection", "error", err)
		return err
	}
	return nil
}
