package httpserver

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Defaults of AttemptLimitConfig.
const (
	DefaultAttemptBurst        = 10
	DefaultAttemptEvery        = time.Minute
	DefaultAttemptMaxAddresses = 10000
)

// AttemptLimitConfig tunes an AttemptLimit. The zero value of each field is
// the documented default.
type AttemptLimitConfig struct {
	// Burst is how many wrong attempts an address may make at once.
	// Default DefaultAttemptBurst (10).
	Burst int
	// Every is how often an address gets one attempt back. Default
	// DefaultAttemptEvery (a minute).
	Every time.Duration
	// MaxAddresses bounds the addresses remembered at once. Default
	// DefaultAttemptMaxAddresses (10,000); at a few dozen bytes each, that
	// is well under a megabyte.
	MaxAddresses int
}

// AttemptLimit slows down guessing a secret (the admin token): each client
// address has a bucket of Burst wrong attempts, refilled at one per Every;
// once it is empty, wrong attempts are refused until one is back. It only
// ever counts wrong attempts, and callers check the secret first: a right
// one always passes, from any address, however limited, so an attacker
// cannot lock the owner out. A right one does not refill the bucket either
// (someone behind the same address would otherwise win new guesses).
//
// Memory is bounded: when MaxAddresses are remembered, addresses whose
// bucket is full again are forgotten, and while none can be, new addresses
// share one bucket. Addresses are the connection's (RemoteAddr); IPv6
// addresses count per /64, the block one host commonly holds.
//
// The zero value is ready to use with the defaults; it is safe for
// concurrent use.
type AttemptLimit struct {
	Config AttemptLimitConfig

	mu       sync.Mutex
	buckets  map[string]*bucket
	overflow bucket
	pruned   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

// NewAttemptLimit returns a limit with cfg.
func NewAttemptLimit(cfg AttemptLimitConfig) *AttemptLimit {
	return &AttemptLimit{Config: cfg}
}

func (l *AttemptLimit) cfg() AttemptLimitConfig {
	c := l.Config
	if c.Burst <= 0 {
		c.Burst = DefaultAttemptBurst
	}
	if c.Every <= 0 {
		c.Every = DefaultAttemptEvery
	}
	if c.MaxAddresses <= 0 {
		c.MaxAddresses = DefaultAttemptMaxAddresses
	}
	return c
}

// Fail records a wrong attempt from addr at now. It reports whether the
// attempt was within the limit; when it was not, wait is how long until
// addr's next attempt counts (at least a second, for Retry-After).
func (l *AttemptLimit) Fail(addr string, now time.Time) (ok bool, wait time.Duration) {
	c := l.cfg()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucketFor(addressKey(addr), now, c)
	b.refill(now, c)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait = time.Duration((1 - b.tokens) * float64(c.Every))
	return false, max(wait.Round(time.Second), time.Second)
}

// bucketFor returns key's bucket, making room for it when the map is full;
// l.mu is held.
func (l *AttemptLimit) bucketFor(key string, now time.Time, c AttemptLimitConfig) *bucket {
	if b, ok := l.buckets[key]; ok {
		return b
	}
	if l.buckets == nil {
		l.buckets = map[string]*bucket{}
	}
	if len(l.buckets) >= c.MaxAddresses && now.Sub(l.pruned) >= c.Every {
		l.pruned = now
		for k, b := range l.buckets {
			if b.refill(now, c); b.tokens >= float64(c.Burst) {
				delete(l.buckets, k)
			}
		}
	}
	if len(l.buckets) >= c.MaxAddresses {
		return &l.overflow
	}
	b := &bucket{tokens: float64(c.Burst), at: now}
	l.buckets[key] = b
	return b
}

func (b *bucket) refill(now time.Time, c AttemptLimitConfig) {
	if b.at.IsZero() {
		b.tokens, b.at = float64(c.Burst), now
		return
	}
	if now.After(b.at) {
		b.tokens = min(float64(c.Burst), b.tokens+float64(now.Sub(b.at))/float64(c.Every))
		b.at = now
	}
}

// addressKey is the address an attempt is counted under: the IP, or the
// /64 of an IPv6 address.
func addressKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}

// ClientAddress is the IP the request came from: the connection's peer.
// Forwarded headers are not trusted; behind a proxy every client shares the
// proxy's address, which a limit may then slow down as one (the right
// secret still passes).
func ClientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// SetRetryAfter sets the Retry-After header to wait, in whole seconds.
func SetRetryAfter(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
}
