package feishu

import (
	"context"
	"sync"
	"time"
)

// chatLimiter spaces requests to one chat by a fixed interval. Feishu allows
// about 5 QPS per chat, shared by every bot in it, so staying under it
// locally avoids most 429s.
type chatLimiter struct {
	interval time.Duration
	clock    Clock

	mu   sync.Mutex
	next map[string]time.Time
}

func newChatLimiter(interval time.Duration, clock Clock) *chatLimiter {
	return &chatLimiter{interval: interval, clock: clock, next: map[string]time.Time{}}
}

// wait blocks until a request to key may go, reserving its slot, and
// returns how long it waited.
func (l *chatLimiter) wait(ctx context.Context, key string) (time.Duration, error) {
	if key == "" || l.interval <= 0 {
		return 0, nil
	}
	l.mu.Lock()
	now := l.clock.Now()
	at := l.next[key]
	if at.Before(now) {
		at = now
	}
	l.next[key] = at.Add(l.interval)
	if len(l.next) > 4096 {
		for k, t := range l.next {
			if t.Before(now) {
				delete(l.next, k)
			}
		}
	}
	l.mu.Unlock()
	d := at.Sub(now)
	return d, l.clock.Sleep(ctx, d)
}

// delay pushes the next slot of key to at least until, after a 429.
func (l *chatLimiter) delay(key string, until time.Time) {
	if key == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.next[key].Before(until) {
		l.next[key] = until
	}
}
