package retry_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/superagent-dev/superagent/internal/retry"
)

// TestMain fails the package when a test leaves goroutines behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestSleep(t *testing.T) {
	require.NoError(t, retry.Sleep(context.Background(), time.Millisecond))
	require.NoError(t, retry.Sleep(context.Background(), 0))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, retry.Sleep(ctx, time.Hour), context.Canceled, "a cancelled context ends the wait at once")
	require.ErrorIs(t, retry.Sleep(ctx, 0), context.Canceled)
}

// A process that begins to stop ends the waits between attempts at once,
// and a Policy's loop with them, saying so; its context lives on.
func TestSleepEndsWhenTheProcessStops(t *testing.T) {
	stop := make(chan struct{})
	ctx := retry.WithStop(context.Background(), stop)
	require.NoError(t, retry.Sleep(ctx, time.Millisecond), "a wait ends as usual before the stop")

	ended := make(chan error, 1)
	go func() {
		ended <- retry.Policy{Retries: 5}.Do(ctx, func(int) error { return retry.Again(errBusy, time.Hour) }, nil)
	}()
	close(stop)
	err := <-ended
	require.ErrorIs(t, err, retry.ErrStopping)
	require.ErrorContains(t, err, "busy", "the error names the attempt that failed")
	require.NoError(t, ctx.Err(), "the context itself is not cancelled")
	require.Nil(t, retry.Stopping(context.Background()), "no stop signal without WithStop")
}

// recorder is a Policy.Sleep that takes no time.
type recorder struct{ waits []time.Duration }

func (r *recorder) Sleep(ctx context.Context, d time.Duration) error {
	r.waits = append(r.waits, d)
	return ctx.Err()
}

var errBusy = errors.New("busy")

func TestDo(t *testing.T) {
	ctx := context.Background()
	setup := func(p retry.Policy) (retry.Policy, *recorder) {
		r := &recorder{}
		p.Sleep = r.Sleep
		return p, r
	}
	t.Run("retries until an attempt succeeds", func(t *testing.T) {
		p, r := setup(retry.Policy{Retries: 3})
		var notified []time.Duration
		err := p.Do(ctx, func(attempt int) error {
			if attempt < 2 {
				return retry.Again(errBusy, time.Duration(attempt+1)*time.Second)
			}
			return nil
		}, func(d time.Duration) { notified = append(notified, d) })
		require.NoError(t, err)
		require.Equal(t, []time.Duration{time.Second, 2 * time.Second}, r.waits)
		require.Equal(t, r.waits, notified, "onWait hears of each wait before it")
	})
	t.Run("an unmarked error ends the loop at once", func(t *testing.T) {
		p, r := setup(retry.Policy{Retries: 3})
		calls := 0
		err := p.Do(ctx, func(int) error { calls++; return errBusy }, nil)
		require.Same(t, errBusy, err)
		require.Equal(t, 1, calls)
		require.Empty(t, r.waits)
	})
	t.Run("bounded: the last error without its mark", func(t *testing.T) {
		p, r := setup(retry.Policy{Retries: 2})
		calls := 0
		err := p.Do(ctx, func(int) error { calls++; return retry.Again(errBusy, 0) }, nil)
		require.Same(t, errBusy, err)
		require.Equal(t, 3, calls)
		require.Equal(t, []time.Duration{0, 0}, r.waits)
	})
	t.Run("zero or negative retries never retry", func(t *testing.T) {
		for _, n := range []int{0, -1} {
			p, _ := setup(retry.Policy{Retries: n})
			calls := 0
			require.Same(t, errBusy, p.Do(ctx, func(int) error { calls++; return retry.Again(errBusy, 0) }, nil))
			require.Equal(t, 1, calls)
		}
	})
	t.Run("the backoff is the least wait", func(t *testing.T) {
		p, r := setup(retry.Policy{Retries: 3, Backoff: retry.Exponential(time.Second, 0, nil)})
		asked := []time.Duration{0, 5 * time.Second, time.Second}
		_ = p.Do(ctx, func(attempt int) error {
			if attempt == len(asked) {
				return nil
			}
			return retry.Again(errBusy, asked[attempt])
		}, nil)
		require.Equal(t, []time.Duration{time.Second, 5 * time.Second, 4 * time.Second}, r.waits)
	})
	t.Run("a wait past MaxWait gives up", func(t *testing.T) {
		p, r := setup(retry.Policy{Retries: 3, MaxWait: time.Minute})
		err := p.Do(ctx, func(int) error { return retry.Again(errBusy, time.Hour) }, func(time.Duration) { t.Error("no wait expected") })
		var long *retry.TooLongError
		require.ErrorAs(t, err, &long)
		require.Equal(t, time.Hour, long.Wait)
		require.Equal(t, time.Minute, long.Max)
		require.ErrorIs(t, err, errBusy)
		require.ErrorContains(t, err, "asks to wait 1h0m0s, more than the 1m0s allowed")
		require.Empty(t, r.waits)
	})
	t.Run("an ended context stops the wait", func(t *testing.T) {
		p, _ := setup(retry.Policy{Retries: 3})
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		err := p.Do(cctx, func(int) error { return retry.Again(errBusy, time.Second) }, nil)
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, errBusy, "the failed attempt is named, not wrapped")
		require.ErrorContains(t, err, "waiting 1s to retry after busy")
	})
	t.Run("the default sleep is a timer", func(t *testing.T) {
		calls := 0
		err := retry.Policy{Retries: 1}.Do(ctx, func(int) error {
			calls++
			if calls == 1 {
				return retry.Again(errBusy, time.Millisecond)
			}
			return nil
		}, nil)
		require.NoError(t, err)
		require.Equal(t, 2, calls)
	})
	require.NoError(t, retry.Again(nil, time.Second))
}

func TestExponential(t *testing.T) {
	b := retry.Exponential(time.Second, 5*time.Second, func() float64 { return 0.5 })
	// Three quarters of 1, 2, 4, then of the 5 s cap.
	require.Equal(t, []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second, 3750 * time.Millisecond},
		[]time.Duration{b(1), b(2), b(3), b(4)})
	require.Equal(t, 2*time.Second, retry.Exponential(time.Second, 0, func() float64 { return 0 })(3), "the jitter spans the upper half")
	require.Equal(t, 8*time.Second, retry.Exponential(time.Second, 0, nil)(4))
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7", 7 * time.Second, true},
		{" 7 ", 7 * time.Second, true},
		{"0", 0, true},
		{"1.5", 1500 * time.Millisecond, true},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{"", 0, false},
		{"-1", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"1e300", 0, false},
		{"soon", 0, false},
	}
	for _, c := range cases {
		got, ok := retry.ParseRetryAfter(c.in, now)
		require.Equal(t, c.ok, ok, "%q", c.in)
		require.Equal(t, c.want, got, "%q", c.in)
	}
}

func TestParseMillis(t *testing.T) {
	d, ok := retry.ParseMillis("250.5")
	require.True(t, ok)
	require.Equal(t, 250500*time.Microsecond, d)
	for _, in := range []string{"", "-3", "x", "Inf"} {
		_, ok := retry.ParseMillis(in)
		require.False(t, ok, "%q", in)
	}
}

// FuzzParseRetryAfter feeds server-controlled header values to the parser:
// it must never panic nor give a negative wait.
func FuzzParseRetryAfter(f *testing.F) {
	for _, seed := range []string{"7", "1.5", "Wed, 21 Oct 2015 07:28:00 GMT", "-1", "1e400", "NaN", ""} {
		f.Add(seed)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d, ok := retry.ParseRetryAfter(v, now); d < 0 || (!ok && d != 0) {
			t.Fatalf("ParseRetryAfter(%q) = %s, %t", v, d, ok)
		}
		if d, ok := retry.ParseMillis(v); d < 0 || (!ok && d != 0) {
			t.Fatalf("ParseMillis(%q) = %s, %t", v, d, ok)
		}
	})
}
