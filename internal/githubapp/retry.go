package githubapp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/superagent-dev/superagent/internal/retry"
)

// retryTransport retries requests answered 429 Too Many Requests, waiting
// as Retry-After (or X-RateLimit-Reset) says, a bounded number of times.
// Every request to GitHub passes here, so it also keeps the metrics.
type retryTransport struct {
	next    http.RoundTripper
	policy  retry.Policy
	now     func() time.Time
	metrics *metrics
}

// errTooManyRequests marks a 429 inside the retry loop. When the loop ends
// on one, the caller gets the 429 answer itself, as go-github expects.
var errTooManyRequests = errors.New("answered 429 Too Many Requests")

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	inst := installationLabel(req)
	var resp *http.Response
	err := t.policy.Do(req.Context(), func(attempt int) error {
		var err error
		resp, err = t.next.RoundTrip(req)              //nolint:bodyclose // closed by onWait or the caller
		resp = t.metrics.observe(inst, req, resp, err) //nolint:bodyclose // closed by onWait or the caller
		if err != nil || resp.StatusCode != http.StatusTooManyRequests {
			return err
		}
		limited := fmt.Errorf("%s %s %w", req.Method, req.URL.Path, errTooManyRequests)
		next, ok := rewind(req)
		if !ok {
			return limited // the body cannot be sent again
		}
		req = next
		return retry.Again(limited, retryAfter(resp.Header, t.now(), attempt))
	}, func(d time.Duration) {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		t.metrics.waited(inst, "retry_after", d)
	})
	if err != nil && !errors.Is(err, errTooManyRequests) {
		return nil, err // a transport error, or the context ended during a wait
	}
	return resp, nil
}

// rewind returns req ready to be sent again, with a fresh copy of its body.
func rewind(req *http.Request) (*http.Request, bool) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, true
	}
	if req.GetBody == nil {
		return nil, false
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	req = req.Clone(req.Context())
	req.Body = body
	return req, true
}

// retryAfter reads how long GitHub asks to wait: Retry-After, else the
// rate-limit reset time, else a short backoff (1 s, 2 s, 4 s…).
func retryAfter(h http.Header, now time.Time, attempt int) time.Duration {
	if d, ok := retry.ParseRetryAfter(h.Get("Retry-After"), now); ok {
		return d
	}
	if h.Get("X-RateLimit-Remaining") == "0" {
		if s, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return max(time.Unix(s, 0).Sub(now), 0)
		}
	}
	return time.Second << attempt
}
