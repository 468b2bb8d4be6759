package githubapp_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/githubapp"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/internal/testkit/metrictest"
)

// fakeClock moves only when waited on.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
	// interrupt, when set, is called (once) as the next wait begins.
	interrupt func()
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Wait(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.interrupt != nil {
		c.interrupt()
		c.interrupt = nil
		return ctx.Err()
	}
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func (c *fakeClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

func setupMetrics(t *testing.T, cfg githubapp.Config) (*githubapp.Client, *fakegithub.Server, *prometheus.Registry, *fakeClock) {
	t.Helper()
	fake := fakegithub.New(t)
	fake.ServeConversations()
	reg := prometheus.NewRegistry()
	clock := &fakeClock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	cfg.AppID, cfg.PrivateKey, cfg.BaseURL = fake.AppID, fake.PrivateKey(), fake.URL
	cfg.Registerer, cfg.Now, cfg.Wait = reg, clock.Now, clock.Wait
	c, err := githubapp.New(cfg)
	require.NoError(t, err)
	return c, fake, reg, clock
}

// series counts the series of one metric in reg. (prometheus/testutil
// would do, but its diff dependency is not in go.sum.)
func series(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}

func TestMetricsCountRateLimitedRetry(t *testing.T) {
	c, fake, reg, clock := setupMetrics(t, githubapp.Config{})
	fake.SetPermission("octo/repo", "alice", "write")
	path := "/repos/octo/repo/collaborators/alice/permission"
	fake.FailNext(http.MethodGet, path, fakegithub.Fault{Status: http.StatusTooManyRequests,
		Header: http.Header{"Retry-After": {"7"}}, Body: `{"message":"slow down"}`})

	p, err := c.Permission(context.Background(), 42, "octo", "repo", "alice")
	require.NoError(t, err)
	require.Equal(t, "write", p)
	require.Equal(t, []time.Duration{7 * time.Second}, clock.Waits())

	require.Equal(t, 1.0, metrictest.Value(t, reg, "superagent_github_rate_limited_total", "installation", "42", "reason", "too_many_requests"))
	require.Equal(t, 1.0, metrictest.Value(t, reg, "superagent_github_rate_limit_waits_total", "installation", "42", "reason", "retry_after"))
	require.Equal(t, 7.0, metrictest.Value(t, reg, "superagent_github_rate_limit_wait_seconds_total", "installation", "42", "reason", "retry_after"))
	require.Equal(t, 1.0, metrictest.Value(t, reg, "superagent_github_requests_total", "installation", "42", "method", "read", "status", "4xx"))
	require.Equal(t, 1.0, metrictest.Value(t, reg, "superagent_github_requests_total", "installation", "42", "method", "read", "status", "2xx"))
	// The token mint is the App's own request, not paced and not the installation's.
	require.Equal(t, 1.0, metrictest.Value(t, reg, "superagent_github_requests_total", "installation", "app", "method", "write", "status", "2xx"))
	require.Equal(t, float64(fakegithub.RateLimit-2),
		metrictest.Value(t, reg, "superagent_github_rate_limit_remaining", "installation", "42", "resource", "core"))
}

func TestMetricsCountSecondaryLimit(t *testing.T) {
	c, fake, reg, clock := setupMetrics(t, githubapp.Config{})
	path := "/repos/octo/repo/collaborators/alice/permission"
	fake.FailNext(http.MethodGet, path, fakegithub.Fault{Status: http.StatusForbidden,
		Body: `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`})
	_, err := c.Permission(context.Background(), 42, "octo", "repo", "alice")
	var abuse *github.AbuseRateLimitError
	require.ErrorAs(t, err, &abuse, "the body read for the metric is still there for go-github")
	require.Empty(t, clock.Waits())
	require.Equal(t, 1.0, metrictest.Value(t, reg, "superagent_github_rate_limited_total", "installation", "42", "reason", "secondary"))

	// A plain 403 is not a rate limit.
	fake.FailNext(http.MethodGet, path, fakegithub.Fault{Status: http.StatusForbidden, Body: `{"message":"Resource not accessible by integration"}`})
	_, err = c.Permission(context.Background(), 42, "octo", "repo", "alice")
	require.Error(t, err)
	require.Equal(t, 1, series(t, reg, "superagent_github_rate_limited_total"))
}

func TestWritesArePacedPerInstallation(t *testing.T) {
	c, fake, reg, clock := setupMetrics(t, githubapp.Config{})
	ctx := context.Background()
	comment := func(inst int64, i int) {
		t.Helper()
		_, _, err := c.Installation(inst).Issues.CreateComment(ctx, "octo", "repo", 1, &github.IssueComment{Body: github.String("c" + strconv.Itoa(i))})
		require.NoError(t, err)
	}
	// A burst of the whole minute's budget goes at once.
	for i := range 80 {
		comment(7, i)
	}
	require.Empty(t, clock.Waits())
	// Beyond it, each write waits for one token (60s/80) instead of failing.
	for i := range 5 {
		comment(7, 80+i)
	}
	require.Equal(t, []time.Duration{750 * time.Millisecond, 750 * time.Millisecond, 750 * time.Millisecond,
		750 * time.Millisecond, 750 * time.Millisecond}, clock.Waits())
	require.Len(t, fake.Comments(), 85)

	// Reads are not paced, and another installation has its own budget.
	for range 3 {
		_, err := c.Permission(ctx, 7, "octo", "repo", "alice")
		require.NoError(t, err)
	}
	comment(8, 0)
	require.Len(t, clock.Waits(), 5)

	require.Equal(t, 5.0, metrictest.Value(t, reg, "superagent_github_rate_limit_waits_total", "installation", "7", "reason", "pacing"))
	require.InDelta(t, 3.75, metrictest.Value(t, reg, "superagent_github_rate_limit_wait_seconds_total", "installation", "7", "reason", "pacing"), 1e-9)
	require.Equal(t, 85.0, metrictest.Value(t, reg, "superagent_github_requests_total", "installation", "7", "method", "write", "status", "2xx"))
	require.Equal(t, 0.0, metrictest.Value(t, reg, "superagent_github_rate_limited_total", "installation", "7", "reason", "too_many_requests"))
}

func TestWritesPacedByTheHourlyBudget(t *testing.T) {
	c, fake, _, clock := setupMetrics(t, githubapp.Config{WritesPerMinute: -1, WritesPerHour: 2})
	ctx := context.Background()
	for i := range 3 {
		_, _, err := c.Installation(1).Issues.CreateComment(ctx, "octo", "repo", 1, &github.IssueComment{Body: github.String("c" + strconv.Itoa(i))})
		require.NoError(t, err)
	}
	require.Equal(t, []time.Duration{30 * time.Minute}, clock.Waits())

	// A cancelled wait fails the request without sending it.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err := c.Installation(1).Issues.CreateComment(cctx, "octo", "repo", 1, &github.IssueComment{Body: github.String("late")})
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, fake.Comments(), 3)

	// The cancelled write gave its token back (the fake clock moved during
	// its wait): the next one goes at once.
	_, _, err = c.Installation(1).Issues.CreateComment(ctx, "octo", "repo", 1, &github.IssueComment{Body: github.String("after")})
	require.NoError(t, err)
	require.Equal(t, []time.Duration{30 * time.Minute, 30 * time.Minute}, clock.Waits())
}

func TestClientsShareMetricsOnOneRegistry(t *testing.T) {
	fake := fakegithub.New(t)
	reg := prometheus.NewRegistry()
	for range 2 {
		_, err := githubapp.New(githubapp.Config{AppID: fake.AppID, PrivateKey: fake.PrivateKey(), BaseURL: fake.URL, Registerer: reg})
		require.NoError(t, err)
	}
}
