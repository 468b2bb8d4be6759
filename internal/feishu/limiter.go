package feishu

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// chatLimiter spaces requests to one chat by a fixed interval. Feishu allows
// about 5 QPS per chat, shared by every bot in it, so staying under it
// locally avoids most 429s. Each chat has a limiter with a burst of one,
// read at the Client's clock so that tests control the time.
type chatLimiter struct {
	every rate.Limit
	clock Clock

	mu    sync.Mutex
	chats map[string]*chatPace
}

// chatPace is one chat's pacing.
type chatPace struct {
	lim *rate.Limiter
	// until holds the chat's requests back after a 429: a rate.Limiter
	// cannot be told to stay empty until a given time, so reservations are
	// taken at until instead of now while it lies ahead.
	until time.Time
}

func newChatLimiter(interval time.Duration, clock Clock) *chatLimiter {
	if interval <= 0 {
		return &chatLimiter{clock: clock}
	}
	return &chatLimiter{every: rate.Every(interval), clock: clock, chats: map[string]*chatPace{}}
}

// wait blocks until a request to key may go, reserving its slot, and
// returns how long it waited.
func (l *chatLimiter) wait(ctx context.Context, key string) (time.Duration, error) {
	if key == "" || l.chats == nil {
		return 0, nil
	}
	l.mu.Lock()
	now := l.clock.Now()
	c := l.chat(key)
	d := c.lim.ReserveN(later(now, c.until), 1).DelayFrom(now)
	if len(l.chats) > 4096 {
		for k, c := range l.chats {
			if c.lim.TokensAt(now) >= 1 && !c.until.After(now) {
				delete(l.chats, k) // idle: a new limiter would be the same
			}
		}
	}
	l.mu.Unlock()
	return d, l.clock.Sleep(ctx, d)
}

// delay holds key's next slot back until at least until, after a 429.
func (l *chatLimiter) delay(key string, until time.Time) {
	if key == "" || l.chats == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.chat(key)
	c.until = later(c.until, until)
}

// chat returns key's pacing, creating it; l.mu is held.
func (l *chatLimiter) chat(key string) *chatPace {
	c, ok := l.chats[key]
	if !ok {
		c = &chatPace{lim: rate.NewLimiter(l.every, 1)}
		l.chats[key] = c
	}
	return c
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
