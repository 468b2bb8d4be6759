// Package lease keeps a database lease alive while work runs: the work
// that holds a lease renews it well before it lapses, and stops when
// another holder took it over, so that two processes never do the same
// work at once and a dead process frees its work after one term.
package lease

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// ErrLost is the cause of the context Keep cancels when the lease was
// taken over.
var ErrLost = errors.New("the lease was lost to another holder")

// Keep calls renew every interval until ctx ends. When renew reports that
// the lease is no longer held, Keep cancels ctx with ErrLost and returns;
// an error from renew is logged and the next tick tries again (the lease
// is still good until it lapses). Run it in its own goroutine.
func Keep(ctx context.Context, cancel context.CancelCauseFunc, interval time.Duration, renew func(context.Context) (bool, error), logger *slog.Logger, what string) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			held, err := renew(ctx)
			if err != nil {
				logger.Error("renewing a lease", "lease", what, "error", err)
				continue
			}
			if !held {
				cancel(ErrLost)
				return
			}
		}
	}
}
