package workspace

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Concurrent Tickets of one repository run its setup once: the others
// wait for the lock and get the same cache, complete.
func TestSetupConcurrentTicketsBuildOnce(t *testing.T) {
	requireBwrap(t)
	ctx := context.Background()
	e := setup(t)
	m := e.manager(t, Config{Sandbox: SandboxBwrap})
	script := []byte("#!/bin/sh\nmkdir -p \"$SUPERAGENT_CACHE/bin\"\nsleep 1\necho built > \"$SUPERAGENT_CACHE/bin/marker\"\n")
	var wg sync.WaitGroup
	results := make([]SetupResult, 3)
	errs := make([]error, 3)
	for i := range results {
		w, err := m.Prepare(ctx, int64(i+1), e.remote, "superagent/t")
		require.NoError(t, err)
		wg.Go(func() { results[i], errs[i] = w.Setup(ctx, "o/r", script, nil) })
	}
	wg.Wait()
	ran := 0
	for i, r := range results {
		require.NoError(t, errs[i])
		require.True(t, r.OK, "%+v", r)
		if !r.Cached {
			ran++
		}
		require.Equal(t, results[0].CacheDir, r.CacheDir)
	}
	require.Equal(t, 1, ran, "setup ran once")
	b, err := os.ReadFile(filepath.Join(results[0].CacheDir, "bin", "marker"))
	require.NoError(t, err)
	require.Equal(t, "built\n", string(b))
	w1, err := m.Open(1)
	require.NoError(t, err)
	require.Equal(t, results[0].CacheDir, w1.SetupCache("o/r"))

	// Commands see it read-only, with its bin on PATH.
	w, err := m.Open(1)
	require.NoError(t, err)
	res, err := w.With(results[0].CacheDir, []string{"EXTRA=yes"}).Run(ctx, "cat /cache/bin/marker; echo extra=$EXTRA; touch /cache/x || echo read-only", ".", 0)
	require.NoError(t, err)
	require.Contains(t, res.Output, "built\nextra=yes\n")
	require.Contains(t, res.Output, "read-only")
}

// A setup that passes its cache quota or its timeout fails, and keeps no
// cache; the next run of the same script runs again.
func TestSetupLimitsFailAndKeepNothing(t *testing.T) {
	requireBwrap(t)
	ctx := context.Background()
	e := setup(t)
	m := e.manager(t, Config{Sandbox: SandboxBwrap, SetupMaxBytes: 1 << 20, SetupTimeout: 2 * time.Second})
	w, err := m.Prepare(ctx, 1, e.remote, "superagent/t")
	require.NoError(t, err)

	big := []byte("head -c 4000000 /dev/zero > $SUPERAGENT_CACHE/big; sleep 5; echo wrote\n")
	r, err := w.Setup(ctx, "o/r", big, nil)
	require.NoError(t, err)
	require.False(t, r.OK)
	require.True(t, r.OverQuota, "%+v", r)
	require.Contains(t, r.Tail, "setup cache passed its disk quota of 1 MiB")
	require.Empty(t, w.SetupCache("o/r"))

	slow := []byte("echo starting\nsleep 30\n")
	r, err = w.Setup(ctx, "o/r", slow, nil)
	require.NoError(t, err)
	require.True(t, r.TimedOut, "%+v", r)
	require.Contains(t, r.Tail, "starting")
	r, err = w.Setup(ctx, "o/r", slow, nil)
	require.NoError(t, err)
	require.False(t, r.Cached, "a failure is not cached")
	entries, err := os.ReadDir(filepath.Join(e.root, ".setup", "o~r"))
	require.NoError(t, err)
	require.Empty(t, entries, "no cache and no build left")
}
