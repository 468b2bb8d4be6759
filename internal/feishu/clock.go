package feishu

import (
	"context"
	"time"

	"github.com/superagent-dev/superagent/internal/retry"
)

// Clock is the time source of a Client: tests pass a fake so rate-limit
// waits take no real time.
type Clock interface {
	Now() time.Time
	// Sleep waits for d, or returns ctx.Err() when ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real clock.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error { return retry.Sleep(ctx, d) }
