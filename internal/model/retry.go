package model

import (
	"errors"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/superagent-dev/superagent/internal/retry"
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
			after = retryAfter(apiErr.Response.Header, now)
		}
		return true, after
	}
	// Transport failures (reset connections, an attempt's own timeout) are
	// transient; the caller checks its own context before retrying.
	return true, 0
}

// retryAfter is the wait the provider asks for: OpenAI's Retry-After-Ms
// when sent, else the standard Retry-After.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if d, ok := retry.ParseMillis(h.Get("Retry-After-Ms")); ok {
		return d
	}
	d, _ := retry.ParseRetryAfter(h.Get("Retry-After"), now)
	return d
}
