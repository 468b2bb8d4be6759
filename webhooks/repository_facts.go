package webhooks

import (
	"sync"
	"time"
)

// factsFresh is how long this process trusts its own record of a
// repository's facts. Within it, a busy repository's deliveries neither
// write its row nor check it; past it, the next delivery does. Another
// process that recorded the repository meanwhile (a new installation
// creates the row without facts) is thus believed at most this late.
const factsFresh = time.Minute

// maxFactsRemembered bounds the memory; past it, it starts over.
const maxFactsRemembered = 10000

// recordedFacts remembers, per repository, the facts this process last
// committed to its row, and when.
type recordedFacts struct {
	mu sync.Mutex
	at map[repositoryFacts]time.Time
}

// fresh reports whether f was committed less than factsFresh before now.
func (r *recordedFacts) fresh(f repositoryFacts, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.at[f]
	return ok && now.Sub(at) < factsFresh && !now.Before(at)
}

// remember notes that f was committed at now.
func (r *recordedFacts) remember(f repositoryFacts, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil || len(r.at) >= maxFactsRemembered {
		r.at = map[repositoryFacts]time.Time{}
	}
	r.at[f] = now
}

// forget drops everything remembered: an installation change may have
// made or removed repositories' rows.
func (r *recordedFacts) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at = nil
}
