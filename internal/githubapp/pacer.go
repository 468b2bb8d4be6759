package githubapp

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
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
	writes  pacer // nil: writes are not paced
	wait    func(ctx context.Context, d time.Duration) error
	metrics *metrics
}

func (t *installationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := context.WithValue(req.Context(), instKey{}, t.label)
	if t.writes != nil && isWrite(req.Method) {
		d, cancel, err := t.writes.reserve(ctx)
		if err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, err
		}
		if d > 0 {
			t.metrics.waited(t.label, "pacing", d)
			if err := t.wait(ctx, d); err != nil {
				cancel()
				if req.Body != nil {
					_ = req.Body.Close()
				}
				return nil, fmt.Errorf("pacing %s %s for installation %s: %w", req.Method, req.URL.Path, t.label, err)
			}
		}
	}
	return t.next.RoundTrip(req.WithContext(ctx))
}

// writeLimiter paces one installation's writes with a token bucket per
// budget (e.g. 80 a minute and 500 an hour): a full bucket lets a burst
// through, then requests are spaced by the refill rate. A reservation is
// taken at once and waited out by the caller, so concurrent writers queue
// in order. Time is the injected clock's, passed to the limiters' *N
// methods, so tests control it.
type writeLimiter struct {
	now func() time.Time
	// mu makes taking a token from every budget one step, so that two
	// writers cannot queue in a different order on each.
	mu      sync.Mutex
	budgets []*rate.Limiter
}

func newWriteLimiter(now func() time.Time, perMinute, perHour int) *writeLimiter {
	l := &writeLimiter{now: now}
	if perMinute > 0 {
		l.budgets = append(l.budgets, rate.NewLimiter(rate.Limit(float64(perMinute)/60), perMinute))
	}
	if perHour > 0 {
		l.budgets = append(l.budgets, rate.NewLimiter(rate.Limit(float64(perHour)/3600), perHour))
	}
	if len(l.budgets) == 0 {
		return nil
	}
	return l
}

// reserve takes one token from every budget and returns how long to wait
// before the request may go, and cancel, which gives the tokens back when
// the request is not sent after all.
func (l *writeLimiter) reserve(context.Context) (wait time.Duration, cancel func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	rs := make([]*rate.Reservation, len(l.budgets))
	for i, b := range l.budgets {
		rs[i] = b.ReserveN(now, 1)
		wait = max(wait, rs[i].DelayFrom(now))
	}
	return wait, func() {
		at := l.now()
		for _, r := range rs {
			r.CancelAt(at)
		}
	}, nil
}

// newPacer makes installation id's write pacing, or nil when writes are
// not paced.
func (c *Client) newPacer(id int64) pacer {
	if c.cfg.SharedPacing != nil {
		if p := newSharedPacer(c.cfg.SharedPacing, id, c.cfg.Now, c.cfg.WritesPerMinute, c.cfg.WritesPerHour); p != nil {
			return p
		}
		return nil
	}
	if l := newWriteLimiter(c.cfg.Now, c.cfg.WritesPerMinute, c.cfg.WritesPerHour); l != nil {
		return l
	}
	return nil
}

func formatInstallation(id int64) string { return strconv.FormatInt(id, 10) }
