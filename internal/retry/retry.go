// Package retry is the one retry loop of superagent's API clients (GitHub,
// Feishu, the model providers): a bounded number of attempts, the wait the
// server asks for or an exponential backoff with jitter, a cap past which
// the loop gives up rather than wait, and a sleep that ends with its
// context. What each provider says about waiting (Retry-After,
// Retry-After-Ms, x-ogw-ratelimit-reset, X-RateLimit-Reset) is read by a
// small adapter in its client, which hands the wait to Policy.Do.
package retry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sleep waits for d, or until ctx ends, whichever comes first, and returns
// ctx's error in the second case. A d of zero or less returns at once, with
// ctx's error if it has ended. It is the wait between attempts, so it also
// ends, with ErrStopping, when the process stops (see WithStop): a backoff
// never holds up a shutdown.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-Stopping(ctx):
		return ErrStopping
	case <-t.C:
		return nil
	}
}

// ErrStopping is Sleep's error when the process began to stop during the
// wait.
var ErrStopping = errors.New("the process is stopping")

type stopKey struct{}

// WithStop returns a copy of ctx under which Sleep also ends when stop is
// closed. A job's context lives on while the process stops gracefully, so
// that work in flight can finish; only its waits for another attempt end
// at once.
func WithStop(ctx context.Context, stop <-chan struct{}) context.Context {
	return context.WithValue(ctx, stopKey{}, stop)
}

// Stopping is the stop signal WithStop put in ctx; nil (never closed)
// when there is none.
func Stopping(ctx context.Context) <-chan struct{} {
	stop, _ := ctx.Value(stopKey{}).(<-chan struct{})
	return stop
}

// Policy says how often a failed attempt is tried again and how long to
// wait in between. The zero value never retries.
type Policy struct {
	// Retries is how many times a failed attempt is tried again. Zero or
	// negative: never.
	Retries int
	// MaxWait is the longest wait before one retry. When the next wait would
	// be longer, Do gives up with a *TooLongError instead. Zero: no limit;
	// negative: every wait is too long.
	MaxWait time.Duration
	// Backoff is the least wait before retry n (1 for the first retry),
	// whatever the server asked for. Default: none, only what the server
	// asks for.
	Backoff func(n int) time.Duration
	// Sleep waits between attempts and returns ctx's error when ctx ends
	// first. Default: Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
}

// again marks an error as worth another attempt.
type again struct {
	err   error
	after time.Duration
}

func (e *again) Error() string { return e.err.Error() }
func (e *again) Unwrap() error { return e.err }

// Again marks err as worth another attempt after at least after (what the
// server asked for; zero when it said nothing). An attempt returns Again's
// result as it is: Do keeps the error given here, not any wrapping around
// the mark. Again(nil, d) is nil.
func Again(err error, after time.Duration) error {
	if err == nil {
		return nil
	}
	return &again{err: err, after: after}
}

// TooLongError is Do giving up because the next wait would pass
// Policy.MaxWait. Err is the last attempt's error.
type TooLongError struct {
	Wait, Max time.Duration
	Err       error
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("%v (asks to wait %s, more than the %s allowed)", e.Err, e.Wait, e.Max)
}

func (e *TooLongError) Unwrap() error { return e.Err }

// Do calls try with the attempt number (0 for the first) until it returns
// nil or an error not marked by Again, or the policy ends the loop. The
// wait before a retry is the longer of what the attempt asked for and
// Policy.Backoff; onWait, when not nil, is called with it just before the
// wait (to count it, or to release what the failed attempt holds).
//
// Do returns nil when an attempt succeeds; an unmarked error as it is; the
// last attempt's error, without its mark, when the retries are used up; a
// *TooLongError wrapping it when the next wait would pass Policy.MaxWait;
// and an error wrapping ctx's when ctx ends during a wait.
func (p Policy) Do(ctx context.Context, try func(attempt int) error, onWait func(d time.Duration)) error {
	sleep := p.Sleep
	if sleep == nil {
		sleep = Sleep
	}
	for attempt := 0; ; attempt++ {
		err := try(attempt)
		var a *again
		if !errors.As(err, &a) {
			return err
		}
		if attempt >= p.Retries {
			return a.err
		}
		wait := a.after
		if p.Backoff != nil {
			wait = max(wait, p.Backoff(attempt+1))
		}
		if p.MaxWait != 0 && wait > p.MaxWait {
			return &TooLongError{Wait: wait, Max: p.MaxWait, Err: a.err}
		}
		if onWait != nil {
			onWait(wait)
		}
		if err := sleep(ctx, wait); err != nil {
			// The failed attempt is named, not wrapped: a caller must not
			// take an interrupted wait for that attempt's answer.
			return fmt.Errorf("waiting %s to retry after %s: %w", wait, a.err.Error(), err)
		}
	}
}
