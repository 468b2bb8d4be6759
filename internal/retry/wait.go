package retry

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Exponential returns a Policy.Backoff: base doubled for each retry after
// the first, capped at limit (zero: no cap), and spread over its upper half
// by random (a number in [0, 1)) so that many clients do not retry in step.
// A nil random gives the full wait.
func Exponential(base, limit time.Duration, random func() float64) func(n int) time.Duration {
	return func(n int) time.Duration {
		d := float64(base) * math.Pow(2, float64(n-1))
		if limit > 0 && d > float64(limit) {
			d = float64(limit)
		}
		if random == nil {
			return time.Duration(d)
		}
		return time.Duration(d/2 + random()*d/2)
	}
}

// ParseRetryAfter reads a Retry-After value: a number of seconds (a
// fraction allowed, as some providers send) or an HTTP date, which counts
// from now and is zero once past. It reports false for an empty or
// unreadable value, and for a negative number.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		return units(secs, time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// ParseMillis reads a wait given in milliseconds, such as OpenAI's
// Retry-After-Ms.
func ParseMillis(v string) (time.Duration, bool) {
	ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, false
	}
	return units(ms, time.Millisecond)
}

// units turns n units into a duration, refusing negative numbers, NaN and
// waits too long to represent.
func units(n float64, unit time.Duration) (time.Duration, bool) {
	d := n * float64(unit)
	if !(n >= 0) || d >= math.MaxInt64 {
		return 0, false
	}
	return time.Duration(d), true
}
