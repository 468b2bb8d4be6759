// Package fresh keeps in memory what a process may believe for a while
// after it learned it, instead of reading or writing it again: a
// permission level GitHub gave, the repository facts a process committed.
package fresh

import (
	"sync"
	"time"
)

// MaxEntries bounds a Memory: past it, the stale entries go, and if none
// has, all of them.
const MaxEntries = 10000

// Memory maps keys to values, each believed for a time after it was
// learned. The zero Memory is empty and ready; it is safe for concurrent
// use.
type Memory[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]entry[V]
}

type entry[V any] struct {
	v  V
	at time.Time
}

// Recall returns k's value if it was learned less than ttl before now
// (and not after now: a clock that went back believes nothing longer).
func (m *Memory[K, V]) Recall(k K, ttl time.Duration, now time.Time) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[k]
	if !ok || !stillFresh(e.at, ttl, now) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Remember keeps v for k, learned at at; ttl and now say which entries
// are stale, should the memory be full.
func (m *Memory[K, V]) Remember(k K, v V, at time.Time, ttl time.Duration, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[K]entry[V]{}
	}
	if len(m.m) >= MaxEntries {
		for key, e := range m.m {
			if !stillFresh(e.at, ttl, now) {
				delete(m.m, key)
			}
		}
		if len(m.m) >= MaxEntries {
			clear(m.m)
		}
	}
	m.m[k] = entry[V]{v, at}
}

// Forget drops everything.
func (m *Memory[K, V]) Forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.m)
}

func stillFresh(at time.Time, ttl time.Duration, now time.Time) bool {
	return !now.Before(at) && now.Sub(at) < ttl
}
