package githubapp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// retryTransport retries requests answered 429 Too Many Requests, waiting
// as Retry-After (or X-RateLimit-Reset) says, a bounded number of times.
// Every request to GitHub passes here, so it also keeps the metrics.
type retryTransport struct {
	next    http.RoundTripper
	max     int
	maxWait time.Duration
	wait    func(ctx context.Context, d time.Duration) error
	now     func() time.Time
	metrics *metrics
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	inst := installationLabel(req)
	for attempt := 0; ; attempt++ {
		resp, err := t.next.RoundTrip(req)
		resp = t.metrics.observe(inst, req, resp, err)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests || attempt >= t.max {
			return resp, err
		}
		d := retryAfter(resp.Header, t.now(), attempt)
		if d > t.maxWait {
			return resp, nil
		}
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return resp, nil // the body cannot be replayed
			}
			body, bodyErr := req.GetBody()
			if bodyErr != nil {
				return resp, nil //nolint:nilerr // the 429 answer stands when the body cannot be replayed
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		t.metrics.waited(inst, "retry_after", d)
		if err := t.wait(req.Context(), d); err != nil {
			return nil, fmt.Errorf("waiting to retry %s %s after 429: %w", req.Method, req.URL.Path, err)
		}
	}
}

// retryAfter reads how long GitHub asks to wait: Retry-After in seconds or
// as an HTTP date, else the rate-limit reset time, else a short backoff.
func retryAfter(h http.Header, now time.Time, attempt int) time.Duration {
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			return time.Duration(s) * time.Second
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0)
		}
	}
	if h.Get("X-RateLimit-Remaining") == "0" {
		if s, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return max(time.Unix(s, 0).Sub(now), 0)
		}
	}
	return time.Duration(1<<attempt) * time.Second
}
