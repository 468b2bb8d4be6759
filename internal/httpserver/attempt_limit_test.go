package httpserver

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAttemptLimit(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	cfg := AttemptLimitConfig{Burst: 3, Every: time.Minute, MaxAddresses: 100}

	t.Run("a burst, then one an interval", func(t *testing.T) {
		l := NewAttemptLimit(cfg)
		for range 3 {
			ok, _ := l.Fail("192.0.2.1", now)
			require.True(t, ok)
		}
		ok, wait := l.Fail("192.0.2.1", now)
		require.False(t, ok)
		require.Equal(t, time.Minute, wait)
		ok, wait = l.Fail("192.0.2.1", now.Add(20*time.Second))
		require.False(t, ok, "a refused attempt takes nothing, and nothing is back yet")
		require.Equal(t, 40*time.Second, wait)
		ok, _ = l.Fail("192.0.2.1", now.Add(time.Minute))
		require.True(t, ok, "one attempt back after a minute")
		ok, _ = l.Fail("192.0.2.1", now.Add(time.Minute))
		require.False(t, ok)
		ok, _ = l.Fail("198.51.100.7", now)
		require.True(t, ok, "other addresses have their own bucket")
	})
	t.Run("IPv6 counts per /64, IPv4-mapped as IPv4", func(t *testing.T) {
		l := NewAttemptLimit(cfg)
		for i := range 3 {
			ok, _ := l.Fail(fmt.Sprintf("2001:db8:1:2::%x", i+1), now)
			require.True(t, ok)
		}
		ok, _ := l.Fail("2001:db8:1:2:ffff::1", now)
		require.False(t, ok, "the same /64")
		ok, _ = l.Fail("2001:db8:1:3::1", now)
		require.True(t, ok, "another /64")
		require.Equal(t, addressKey("192.0.2.1"), addressKey("::ffff:192.0.2.1"))
	})
	t.Run("memory stays bounded under a flood of addresses", func(t *testing.T) {
		l := NewAttemptLimit(cfg)
		refused := 0
		for i := range 100_000 {
			if ok, _ := l.Fail(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), now); !ok {
				refused++
			}
		}
		require.LessOrEqual(t, len(l.buckets), cfg.MaxAddresses)
		require.Greater(t, refused, 100_000-cfg.MaxAddresses*cfg.Burst-cfg.Burst,
			"addresses past the bound share one bucket, so a flood gains no guesses")
		// Once buckets are full again they are forgotten, and room is made.
		ok, _ := l.Fail("203.0.113.9", now.Add(time.Hour))
		require.True(t, ok)
		require.LessOrEqual(t, len(l.buckets), 1)
	})
	t.Run("the zero value uses the defaults", func(t *testing.T) {
		var l AttemptLimit
		for range DefaultAttemptBurst {
			ok, _ := l.Fail("192.0.2.1", now)
			require.True(t, ok)
		}
		ok, wait := l.Fail("192.0.2.1", now)
		require.False(t, ok)
		require.Equal(t, DefaultAttemptEvery, wait)
	})
}
