package gcfloor

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentFor(t *testing.T) {
	t.Parallel()
	const floor = 64 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{2 << 20, 3100},    // 2 MiB × 32 = the floor
		{16 << 20, 300},    // 16 MiB × 4
		{32 << 20, 100},    // half the floor: Go's default
		{1 << 30, 100},     // a large heap is left alone
		{1024, maxPercent}, // bounded however small
	} {
		require.Equal(t, c.want, percentFor(floor, c.live), "live %d", c.live)
	}
}

// After each cycle the goal is lifted to the floor while the heap is
// small, and back to Go's own once it is not. Not parallel: GOGC belongs
// to the process.
func TestKeepLiftsSmallHeapsOnly(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	const floor = 256 << 20
	require.True(t, Keep(floor))

	goal := func() (goal, gogc uint64) {
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return s[0].Value.Uint64(), s[1].Value.Uint64()
	}
	settle := func(ok func(goal, gogc uint64) bool) (uint64, uint64) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			runtime.GC()
			g, p := goal()
			if ok(g, p) || time.Now().After(deadline) {
				return g, p
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	g, p := settle(func(g, _ uint64) bool { return g >= floor*9/10 })
	require.GreaterOrEqual(t, g, uint64(floor*9/10), "a small heap's goal reaches the floor (GOGC %d)", p)

	big := make([][]byte, 0, 160)
	for range cap(big) {
		big = append(big, make([]byte, 1<<20))
	}
	_, p = settle(func(_, p uint64) bool { return p == 100 })
	require.Equal(t, uint64(100), p, "a heap past half the floor collects as Go's default")
	runtime.KeepAlive(big)
}

// An operator's GOGC or GOMEMLIMIT is left to decide alone.
func TestKeepDefersToTheEnvironment(t *testing.T) {
	t.Setenv("GOGC", "200")
	require.False(t, Keep(DefaultFloor))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "1GiB")
	require.False(t, Keep(DefaultFloor))
}
