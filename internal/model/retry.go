package model

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
)

// retryable reports whether err is worth another attempt and, if the server
// said when, how long to wait first.
func retryable(err error, now time.Time) (ok bool, after time.Duration) {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		code := apiErr.StatusCode
		if code != http.StatusTooManyRequests && code != http.StatusRequestTimeout &&
			code != http.StatusConflict && code < 500 {
			return false, 0
		}
		if apiErr.Response != nil {
			after, _ = parseRetryAfter(apiErr.Response.Header, now)
		}
		return true, after
	}
	// Transport failures (reset connections, an attempt's own timeout) are
	// transient; the caller checks its own context before retrying.
	return true, 0
}

// parseRetryAfter reads Retry-After as seconds or an HTTP date, and the
// millisecond variant some providers send.
func parseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if v, err := strconv.ParseFloat(ms, 64); err == nil && v >= 0 {
			return time.Duration(v * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

// backoff is the wait before retry number attempt (1-based): exponential from
// base, capped at max, with full jitter in its upper half so that many
// clients do not retry in step.
func backoff(attempt int, base, max time.Duration, random func() float64) time.Duration {
	d := float64(base) * math.Pow(2, float64(attempt-1))
	if d > float64(max) {
		d = float64(max)
	}
	return time.Duration(d/2 + random()*d/2)
}
