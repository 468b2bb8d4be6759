package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// hiccups is the machine's own stalls: the gaps, of at least hiccupFloor,
// in which a thread that only reads the clock did not run.
type hiccups struct {
	threads int
	elapsed time.Duration
	gaps    []time.Duration // longest first
}

// hiccupFloor is the shortest gap counted: about the median acknowledgement
// on SQLite, so every gap counted is one that doubles a request's time.
const hiccupFloor = time.Millisecond

// measureHiccups keeps one goroutine per usable core, each locked to its
// thread, reading the clock for d, and records every gap between two reads
// of at least hiccupFloor. It runs before anything else of the bench starts
// and allocates nothing while it spins, so no goroutine of this process and
// no collection competes for the cores: a gap is time the kernel or the
// hypervisor gave the thread's core to something else. SQLite's writer is
// one thread, and a gap that lands on it while it holds the write lock
// stalls every request in flight.
func measureHiccups(d time.Duration) hiccups {
	threads := runtime.GOMAXPROCS(0)
	found := make([][]time.Duration, threads)
	var wg sync.WaitGroup
	start := time.Now()
	for t := range threads {
		found[t] = make([]time.Duration, 0, 4096)
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			end := start.Add(d)
			last := time.Now()
			for last.Before(end) {
				now := time.Now()
				if gap := now.Sub(last); gap >= hiccupFloor && len(found[t]) < cap(found[t]) {
					found[t] = append(found[t], gap)
				}
				last = now
			}
		})
	}
	wg.Wait()
	h := hiccups{threads: threads, elapsed: time.Since(start)}
	for _, f := range found {
		h.gaps = append(h.gaps, f...)
	}
	slices.SortFunc(h.gaps, func(a, b time.Duration) int { return int(b - a) })
	return h
}

// perSecond is how many gaps of at least the given length each thread saw a second.
func (h hiccups) perSecond(least time.Duration) float64 {
	n := 0
	for _, g := range h.gaps {
		if g >= least {
			n++
		}
	}
	return float64(n) / h.elapsed.Seconds() / float64(h.threads)
}

func (h hiccups) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "a thread spinning on each of the %d cores for %s was stopped, per thread and second,", h.threads, h.elapsed.Round(100*time.Millisecond))
	for _, least := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond} {
		fmt.Fprintf(&b, " %.1f× ≥ %s,", h.perSecond(least), least)
	}
	longest := time.Duration(0)
	if len(h.gaps) > 0 {
		longest = h.gaps[0]
	}
	fmt.Fprintf(&b, " the longest %s", longest.Round(10*time.Microsecond))
	return b.String()
}
