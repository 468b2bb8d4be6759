package admin

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// signInLimit slows down guessing the admin token: after maxFailures wrong
// tokens from one address within window, that address is refused until the
// window has passed. A right token clears its count. The token is long and
// random when generated, but a deployment may set a weaker one.
type signInLimit struct {
	mu       sync.Mutex
	failures map[string][]time.Time
}

const (
	signInMaxFailures = 10
	signInWindow      = 10 * time.Minute
)

func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// blocked reports whether addr has used up its failures.
func (l *signInLimit) blocked(addr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recent(addr, now)) >= signInMaxFailures
}

func (l *signInLimit) fail(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failures == nil {
		l.failures = map[string][]time.Time{}
	}
	l.failures[addr] = append(l.recent(addr, now), now)
	// Forget addresses whose failures are all old, so the map stays small.
	for a := range l.failures {
		if len(l.recent(a, now)) == 0 {
			delete(l.failures, a)
		}
	}
}

func (l *signInLimit) succeed(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.failures, addr)
}

// recent returns addr's failures within the window; l.mu is held.
func (l *signInLimit) recent(addr string, now time.Time) []time.Time {
	var out []time.Time
	for _, t := range l.failures[addr] {
		if now.Sub(t) < signInWindow {
			out = append(out, t)
		}
	}
	return out
}
