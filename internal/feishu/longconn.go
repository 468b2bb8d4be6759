package feishu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/superagent-dev/superagent/internal/metric"
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
	// gave up reconnecting (the SDK reconnects on its own first, at the
	// intervals Feishu gives it); it doubles with each restart that did not
	// connect, up to MaxRestartDelay, and each pause is drawn from its upper
	// half so that many processes do not come back in step. Default 5
	// seconds.
	RestartDelay time.Duration
	// MaxRestartDelay caps RestartDelay's doubling. Default 5 minutes.
	MaxRestartDelay time.Duration
	// Rand returns a number in [0, 1) for the restart jitter. Default
	// math/rand/v2.Float64.
	Rand func() float64
	// CardAnswer, when set, answers a card action once the handler stored
	// it: a toast for the person who pressed (the same body the webhook
	// answers with). Default: {}.
	CardAnswer func(ctx context.Context, plain []byte) CardActionResponse
	// Registerer receives superagent_feishu_longconn_connects_total and
	// superagent_feishu_longconn_restarts_total. Default: none.
	Registerer prometheus.Registerer
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
	cfg      LongConnConfig
	handle   EventHandler
	clock    Clock
	logger   *slog.Logger
	connects prometheus.Counter
	restarts prometheus.Counter
	// connected counts the connections made, read by Run to tell a restart
	// that connected (the backoff starts over) from one that did not.
	connected atomic.Int64
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
	if cfg.RestartDelay <= 0 {
		cfg.RestartDelay = 5 * time.Second
	}
	if cfg.MaxRestartDelay <= 0 {
		cfg.MaxRestartDelay = 5 * time.Minute
	}
	cfg.MaxRestartDelay = max(cfg.MaxRestartDelay, cfg.RestartDelay)
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if clock == nil {
		clock = SystemClock()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &LongConn{cfg: cfg, handle: handle, clock: clock, logger: logger,
		connects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "superagent_feishu_longconn_connects_total",
			Help: "Feishu long connections opened: the first and every reconnect, the SDK's own and ours.",
		}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "superagent_feishu_longconn_restarts_total",
			Help: "Fresh SDK clients started after one gave up reconnecting.",
		}),
	}
	if cfg.Registerer != nil {
		for _, c := range []*prometheus.Counter{&l.connects, &l.restarts} {
			shared, err := metric.Register(cfg.Registerer, *c)
			if err != nil {
				return nil, fmt.Errorf("registering feishu long connection metrics: %w", err)
			}
			*c = shared
		}
	}
	return l, nil
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
	failed := 0 // restarts in a row that did not connect
	for {
		if ctx.Err() != nil {
			return nil //nolint:nilerr // cancellation is the normal end: a client started now could never be stopped
		}
		before := l.connected.Load()
		// Start returns when its first connect gives up; a client that
		// connected and later gives up reconnecting only logs it, which
		// connWatch turns into the same signal.
		done := make(chan error, 2)
		client := larkws.NewClient(l.cfg.AppID, l.cfg.AppSecret,
			larkws.WithDomain(l.cfg.BaseURL),
			larkws.WithEventHandler(l.dispatcher()),
			larkws.WithLogger(connWatch{sdkLogger{l.logger}, l.onConnect, done}),
			larkws.WithLogLevel(larkcore.LogLevelInfo),
		)
		go func() { done <- client.Start(ctx) }()

		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			var refused *larkws.ClientError
			if errors.As(err, &refused) {
				return fmt.Errorf("feishu long connection refused: %w", err)
			}
			if l.connected.Load() > before {
				failed = 0
			}
			delay := l.restartDelay(failed)
			failed++
			l.logger.Warn("feishu long connection gave up; starting a new one",
				"error", err, "delay", delay, "attempt", failed)
			l.restarts.Inc()
			_ = l.clock.Sleep(ctx, delay) // ends early when ctx does
		}
		select {
		case <-ctx.Done():
			return nil
		default:
		}
	}
}

// restartDelay is the pause before the restart that follows failed ones
// that did not connect: RestartDelay doubled that many times, capped, drawn
// from its upper half.
func (l *LongConn) restartDelay(failed int) time.Duration {
	d := l.cfg.RestartDelay
	for range min(failed, 30) {
		if d >= l.cfg.MaxRestartDelay {
			break
		}
		d *= 2
	}
	d = min(d, l.cfg.MaxRestartDelay)
	return d/2 + time.Duration(l.cfg.Rand()*float64(d/2))
}

// onConnect counts and logs a connection the SDK opened.
func (l *LongConn) onConnect(ctx context.Context, detail string) {
	n := l.connected.Add(1)
	l.connects.Inc()
	what := "feishu long connection connected"
	if n > 1 {
		what = "feishu long connection reconnected"
	}
	l.logger.InfoContext(ctx, what, "connects", n, "detail", detail)
}

// connWatch passes the SDK's log lines on and calls onConnect for the line
// the SDK writes once its websocket is up ("connected to <url>", from
// larkws.Client.connect, the one place every connect and reconnect goes
// through). The SDK offers no hook and dials with its own dialer, so its
// log line is the least fragile signal; TestLongConnReconnectsWithoutLoss
// fails if an SDK upgrade changes it.
type connWatch struct {
	sdkLogger
	onConnect func(ctx context.Context, detail string)
	// gaveUp receives the error a connected client logs when its own
	// reconnecting ends ("unable to connect to server after N retries"):
	// it then stays silent forever, so Run starts a fresh one.
	gaveUp chan<- error
}

func (w connWatch) Error(ctx context.Context, args ...any) {
	if len(args) == 1 {
		if err, ok := args[0].(error); ok && strings.HasPrefix(err.Error(), "unable to connect to server") {
			select {
			case w.gaveUp <- err:
			default:
			}
		}
	}
	w.sdkLogger.Error(ctx, args...)
}

func (w connWatch) Info(ctx context.Context, args ...any) {
	if len(args) > 0 {
		if first, ok := args[0].(string); ok && strings.HasPrefix(first, "connected to ") {
			// The URL carries the connection's ticket: log its id, not it.
			detail := ""
			if len(args) > 1 {
				detail = fmt.Sprint(args[1:]...)
			}
			w.onConnect(ctx, detail)
			return
		}
	}
	w.sdkLogger.Info(ctx, args...)
}

// dispatcher routes every configured event type to the handler with its raw
// JSON. Card actions are callbacks, answered by CardAnswer (default {}).
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
				out := &callback.CardActionTriggerResponse{}
				if l.cfg.CardAnswer != nil {
					if t := l.cfg.CardAnswer(ctx, ev.Body).Toast; t != nil {
						out.Toast = &callback.Toast{Type: t.Type, Content: t.Content}
					}
				}
				return out, nil
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
