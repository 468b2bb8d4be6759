package lease_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/lease"
)

func TestKeepRenewsUntilTheLeaseIsLost(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var renewals atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		lease.Keep(ctx, cancel, time.Millisecond, func(context.Context) (bool, error) {
			switch renewals.Add(1) {
			case 1:
				return false, errors.New("database busy") // logged, tried again
			case 2, 3:
				return true, nil
			}
			return false, nil
		}, slog.New(slog.DiscardHandler), "test")
	}()
	<-done
	require.Equal(t, int32(4), renewals.Load())
	require.ErrorIs(t, context.Cause(ctx), lease.ErrLost)
}

func TestKeepStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		lease.Keep(ctx, cancel, time.Hour, func(context.Context) (bool, error) { return true, nil }, slog.New(slog.DiscardHandler), "test")
	}()
	cancel(nil)
	<-done
	require.ErrorIs(t, context.Cause(ctx), context.Canceled)
}
