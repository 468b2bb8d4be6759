package fresh

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMemory(t *testing.T) {
	t.Parallel()
	var m Memory[string, int]
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	_, ok := m.Recall("a", time.Minute, t0)
	require.False(t, ok, "an empty memory knows nothing")

	m.Remember("a", 1, t0, time.Minute, t0)
	v, ok := m.Recall("a", time.Minute, t0.Add(59*time.Second))
	require.True(t, ok)
	require.Equal(t, 1, v)
	_, ok = m.Recall("a", time.Minute, t0.Add(time.Minute))
	require.False(t, ok, "believed less than the TTL")
	_, ok = m.Recall("a", time.Minute, t0.Add(-time.Second))
	require.False(t, ok, "a clock that went back believes nothing")

	m.Forget()
	_, ok = m.Recall("a", time.Minute, t0)
	require.False(t, ok)
}

// Full, a memory drops its stale entries first, and all of them only when
// none is stale.
func TestMemoryBounded(t *testing.T) {
	t.Parallel()
	var m Memory[int, int]
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for k := range MaxEntries - 1 {
		m.Remember(k, k, t0, time.Minute, t0)
	}
	later := t0.Add(30 * time.Second)
	m.Remember(-1, -1, later, time.Minute, later)
	require.Len(t, m.m, MaxEntries)

	// The old ones are stale by now: they go, the recent one stays.
	now := t0.Add(70 * time.Second)
	m.Remember(-2, -2, now, time.Minute, now)
	require.Len(t, m.m, 2)
	_, ok := m.Recall(-1, time.Minute, now)
	require.True(t, ok)

	// Full of fresh entries: all go.
	for k := range MaxEntries - 2 {
		m.Remember(k, k, now, time.Minute, now)
	}
	m.Remember(-3, -3, now, time.Minute, now)
	require.Len(t, m.m, 1)
}
