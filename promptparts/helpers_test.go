package promptparts

import (
	"context"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
)

// testDefaults is a small release: every required part with a short text.
func testDefaults() fstest.MapFS {
	fsys := fstest.MapFS{}
	for _, key := range RequiredKeys {
		fsys[key+".md"] = &fstest.MapFile{Data: []byte("# " + key + "\n\nBuilt-in text of " + key + ".\n")}
	}
	fsys[KeyEnvironment+".md"] = &fstest.MapFile{Data: []byte("# Environment\n\n{variables}\n")}
	fsys[KeyPolicy+".md"] = &fstest.MapFile{Data: []byte("# Policy\n\nVersion {version}, mode {mode}.\n\n{rules}\n")}
	fsys[KeyPolicyNone+".md"] = &fstest.MapFile{Data: []byte("# Policy\n\nVersion {version}, mode {mode}. No rule is enabled.\n")}
	return fsys
}

// withText returns a copy of fsys with key's default replaced: a new release.
func withText(fsys fstest.MapFS, key, text string) fstest.MapFS {
	out := fstest.MapFS{}
	for k, v := range fsys {
		out[k] = v
	}
	out[key+".md"] = &fstest.MapFile{Data: []byte(text)}
	return out
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Second)
	return c.now
}

func newService(t testing.TB, d *db.DB, fsys fstest.MapFS) *Service {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)}
	s, err := New(Config{Defaults: fsys, Now: clock.Now}, d)
	require.NoError(t, err)
	require.NoError(t, s.Start(context.Background()))
	t.Cleanup(s.Stop)
	return s
}

var panel = SaveMeta{Origin: OriginPanel, Actor: "alice"}

func save(t testing.TB, s *Service, body string) SaveResult {
	t.Helper()
	res, err := s.SaveJSON(context.Background(), []byte(body), panel)
	require.NoError(t, err)
	return res
}

func ptr[T any](v T) *T { return &v }
