package githubapp

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// instKey carries the metrics label of the installation a request is made
// for down to the retrying transport, below ghinstallation.
type instKey struct{}

// installationLabel is the installation id a request was made for, or
// "app" for requests authenticated as the App (JWT), token mints included.
func installationLabel(req *http.Request) string {
	if strings.HasPrefix(req.Header.Get("Authorization"), "Bearer ") {
		return "app"
	}
	if v, ok := req.Context().Value(instKey{}).(string); ok {
		return v
	}
	return "app"
}

// installationTransport sits above one installation's ghinstallation
// transport: it labels the installation's requests for the metrics and
// paces its content-creating requests. Token mints go below it, unpaced.
type installationTransport struct {
	label   string
	next    http.RoundTripper
	writes  *writeLimiter // nil: writes are not paced
	wait    func(ctx context.Context, d time.Duration) error
	metrics *metrics
}

func (t *installationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := context.WithValue(req.Context(), instKey{}, t.label)
	if t.writes != nil && isWrite(req.Method) {
		if d := t.writes.reserve(); d > 0 {
			t.metrics.waited(t.label, "pacing", d)
			if err := t.wait(ctx, d); err != nil {
				t.writes.cancel()
				if req.Body != nil {
					_ = req.Body.Close()
				}
				return nil, fmt.Errorf("pacing %s %s for installation %s: %w", req.Method, req.URL.Path, t.label, err)
			}
		}
	}
	return t.next.RoundTrip(req.WithContext(ctx))
}

// writeLimiter is a token bucket per budget (e.g. 80 a minute and 500 an
// hour): a full bucket lets a burst through, then requests are spaced by
// the refill rate. A reservation is taken at once and waited out by the
// caller, so concurrent writers queue in order.
type writeLimiter struct {
	now     func() time.Time
	mu      sync.Mutex
	buckets []*bucket
}

type bucket struct {
	capacity float64
	perSec   float64
	tokens   float64
	last     time.Time
}

func newWriteLimiter(now func() time.Time, perMinute, perHour int) *writeLimiter {
	l := &writeLimiter{now: now}
	if perMinute > 0 {
		l.buckets = append(l.buckets, &bucket{capacity: float64(perMinute), perSec: float64(perMinute) / 60, tokens: float64(perMinute)})
	}
	if perHour > 0 {
		l.buckets = append(l.buckets, &bucket{capacity: float64(perHour), perSec: float64(perHour) / 3600, tokens: float64(perHour)})
	}
	if len(l.buckets) == 0 {
		return nil
	}
	return l
}

// reserve takes one token from every bucket and returns how long to wait
// before the request may go.
func (l *writeLimiter) reserve() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var wait time.Duration
	for _, b := range l.buckets {
		if b.last.IsZero() {
			b.last = now
		}
		if el := now.Sub(b.last); el > 0 {
			b.tokens = min(b.capacity, b.tokens+el.Seconds()*b.perSec)
			b.last = now
		}
		b.tokens--
		if b.tokens < 0 {
			wait = max(wait, time.Duration(-b.tokens/b.perSec*float64(time.Second)))
		}
	}
	return wait
}

// cancel returns the tokens of a reservation that was not used.
func (l *writeLimiter) cancel() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.buckets {
		b.tokens = min(b.capacity, b.tokens+1)
	}
}

func formatInstallation(id int64) string { return strconv.FormatInt(id, 10) }
