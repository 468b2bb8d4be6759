package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/clock"
)

func TestSleep(t *testing.T) {
	require.NoError(t, clock.Sleep(context.Background(), time.Millisecond))
	require.NoError(t, clock.Sleep(context.Background(), 0))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, clock.Sleep(ctx, time.Hour), context.Canceled, "a cancelled context ends the wait at once")
	require.ErrorIs(t, clock.Sleep(ctx, 0), context.Canceled)
}
