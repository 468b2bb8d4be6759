// Package gcfloor gives the garbage collector a floor under its heap goal.
//
// The service keeps little alive (a few megabytes: SQLite's pages live
// outside the Go heap) and allocates a lot per request, so with the
// default GOGC of 100 the collector ran every 10 ms under load, about a
// hundred cycles a second, each with its write barriers, assists and
// stack scans. Letting the heap grow to a floor before collecting costs
// memory the process would hardly notice and gives the CPU back.
//
// The floor only lifts small heaps: once the live heap is half the floor,
// GOGC is back at 100, and a process that grows large behaves as Go's
// default. An operator who sets GOGC or GOMEMLIMIT decides alone.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultFloor is the heap goal the service keeps at least: measured
// with `make bench`, 32 MiB carded deliveries as fast as 64 MiB did while
// River's own insert, in the same process, lost less to a colder heap.
const DefaultFloor = 32 << 20

// maxPercent bounds GOGC, however small the live heap reads.
const maxPercent = 10000

var once sync.Once

// Keep makes the collector's heap goal at least floor bytes for the rest
// of the process, unless the environment sets GOGC or GOMEMLIMIT. It
// reports whether it did; a second call changes nothing.
func Keep(floor uint64) bool {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return false
	}
	once.Do(func() {
		t := &tuner{floor: floor, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
		// Before the first cycle nothing is known of the live heap: take
		// it to be the runtime's smallest goal.
		t.set(percentFor(floor, 4<<20))
		t.arm()
	})
	return true
}

// tuner sets GOGC after every cycle from the live heap it left.
type tuner struct {
	mu     sync.Mutex
	floor  uint64
	sample []metrics.Sample
	last   int
}

// marker is allocated to be collected: its cleanup runs once per cycle.
// It holds a pointer so the tiny allocator does not batch it with others.
type marker struct{ _ *byte }

func (t *tuner) arm() {
	runtime.AddCleanup(&marker{}, func(t *tuner) {
		t.adjust()
		t.arm()
	}, t)
}

func (t *tuner) adjust() {
	t.mu.Lock()
	defer t.mu.Unlock()
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	t.setLocked(percentFor(t.floor, t.sample[0].Value.Uint64()))
}

func (t *tuner) set(percent int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setLocked(percent)
}

func (t *tuner) setLocked(percent int) {
	if percent != t.last {
		debug.SetGCPercent(percent)
		t.last = percent
	}
}

// percentFor is the GOGC whose goal, live × (1 + GOGC/100), reaches
// floor; never below Go's default of 100.
func percentFor(floor, live uint64) int {
	if live == 0 || live >= floor/2 {
		return 100
	}
	return int(min(floor*100/live-100, maxPercent))
}
