package feishu

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stillClock stands still: waits are recorded, never taken.
type stillClock struct{ now time.Time }

func (c *stillClock) Now() time.Time                                 { return c.now }
func (*stillClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func TestChatLimiter(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	setup := func(t *testing.T) *chatLimiter {
		t.Helper()
		return newChatLimiter(200*time.Millisecond, &stillClock{now: now})
	}
	waits := func(t *testing.T, l *chatLimiter, keys ...string) []time.Duration {
		t.Helper()
		var out []time.Duration
		for _, k := range keys {
			d, err := l.wait(ctx, k)
			require.NoError(t, err)
			out = append(out, d)
		}
		return out
	}
	t.Run("requests to one chat queue by the interval", func(t *testing.T) {
		l := setup(t)
		require.Equal(t, []time.Duration{0, 200 * time.Millisecond, 0, 400 * time.Millisecond}, waits(t, l, "a", "a", "b", "a"))
	})
	t.Run("a 429 holds the chat back until its reset, then paces again", func(t *testing.T) {
		l := setup(t)
		require.Equal(t, []time.Duration{0}, waits(t, l, "a"))
		l.delay("a", now.Add(3*time.Second))
		l.delay("a", now.Add(time.Second)) // an earlier reset does not shorten it
		require.Equal(t, []time.Duration{3 * time.Second, 3200 * time.Millisecond, 0}, waits(t, l, "a", "a", "b"))
	})
	t.Run("no key or no interval: no pacing", func(t *testing.T) {
		require.Equal(t, []time.Duration{0, 0}, waits(t, setup(t), "", ""))
		off := newChatLimiter(-1, &stillClock{now: now})
		off.delay("a", now.Add(time.Hour))
		require.Equal(t, []time.Duration{0, 0}, waits(t, off, "a", "a"))
	})
	t.Run("idle chats are forgotten past 4096", func(t *testing.T) {
		clock := &stillClock{now: now}
		l := newChatLimiter(200*time.Millisecond, clock)
		for i := range 4096 {
			waits(t, l, strconv.Itoa(i))
		}
		clock.now = now.Add(time.Second)
		waits(t, l, "busy")
		require.Len(t, l.chats, 1, "only the chat just paced is kept")
	})
}
