package githubapp_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/githubapp"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

func newClient(t *testing.T, fake *fakegithub.Server, waits *[]time.Duration) *githubapp.Client {
	t.Helper()
	var mu sync.Mutex
	c, err := githubapp.New(githubapp.Config{
		AppID:      fake.AppID,
		PrivateKey: fake.PrivateKey(),
		BaseURL:    fake.URL,
		Wait: func(_ context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			*waits = append(*waits, d)
			return nil
		},
	})
	require.NoError(t, err)
	return c
}

func TestPermissionThroughInstallationToken(t *testing.T) {
	fake := fakegithub.New(t)
	fake.SetPermission("octo/repo", "alice", "admin")
	var waits []time.Duration
	c := newClient(t, fake, &waits)
	ctx := context.Background()

	p, err := c.Permission(ctx, 42, "octo", "repo", "alice")
	require.NoError(t, err)
	require.Equal(t, "admin", p)
	p, err = c.Permission(ctx, 42, "octo", "repo", "mallory")
	require.NoError(t, err)
	require.Equal(t, "none", p)

	// The roles GitHub's permission field folds (maintain into write,
	// triage into read) come from role_name; a custom role reads as its
	// base level.
	fake.AddCustomRole("security-reviewer", "triage")
	for login, role := range map[string]string{"mona": "maintain", "tim": "triage", "wendy": "write", "sec": "security-reviewer"} {
		fake.SetPermission("octo/repo", login, role)
	}
	for login, want := range map[string]string{"mona": "maintain", "tim": "triage", "wendy": "write", "sec": "read"} {
		p, err = c.Permission(ctx, 42, "octo", "repo", login)
		require.NoError(t, err)
		require.Equal(t, want, p, login)
	}

	// One token serves every call.
	require.Equal(t, 1, fake.TokensIssued())
	require.Equal(t, 1, fake.Count(http.MethodPost, "/app/installations/42/access_tokens"))

	tok, err := c.InstallationToken(ctx, 42)
	require.NoError(t, err)
	require.NotEmpty(t, tok)

	slug, err := c.Slug(ctx)
	require.NoError(t, err)
	require.Equal(t, "superagent", slug)
	require.Empty(t, waits)
}

func TestRetriesTooManyRequests(t *testing.T) {
	fake := fakegithub.New(t)
	fake.SetPermission("octo/repo", "alice", "write")
	var waits []time.Duration
	c := newClient(t, fake, &waits)
	path := "/repos/octo/repo/collaborators/alice/permission"
	fake.FailNext(http.MethodGet, path,
		fakegithub.Fault{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"7"}}, Body: `{"message":"slow down"}`},
		fakegithub.Fault{Status: http.StatusTooManyRequests, Body: `{"message":"slow down"}`},
	)
	p, err := c.Permission(context.Background(), 1, "octo", "repo", "alice")
	require.NoError(t, err)
	require.Equal(t, "write", p)
	require.Equal(t, []time.Duration{7 * time.Second, 2 * time.Second}, waits)
	require.Equal(t, 3, fake.Count(http.MethodGet, path))
}

func TestRetriesAreBounded(t *testing.T) {
	fake := fakegithub.New(t)
	var waits []time.Duration
	c := newClient(t, fake, &waits)
	path := "/repos/octo/repo/collaborators/alice/permission"
	f := fakegithub.Fault{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"1"}}, Body: `{"message":"slow down"}`}
	fake.FailNext(http.MethodGet, path, f, f, f, f)
	_, err := c.Permission(context.Background(), 1, "octo", "repo", "alice")
	require.Error(t, err)
	require.Len(t, waits, 3)
	require.Equal(t, 4, fake.Count(http.MethodGet, path))

	// A wait beyond MaxRetryWait is not attempted.
	fake.FailNext(http.MethodGet, path, fakegithub.Fault{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"3600"}}, Body: `{}`})
	_, err = c.Permission(context.Background(), 1, "octo", "repo", "alice")
	require.Error(t, err)
	require.Len(t, waits, 3)
}

func TestNewRefusesBadConfig(t *testing.T) {
	_, err := githubapp.New(githubapp.Config{})
	require.Error(t, err)
	_, err = githubapp.New(githubapp.Config{AppID: 1, PrivateKey: []byte("nope")})
	require.Error(t, err)
	_, err = githubapp.New(githubapp.Config{AppID: 1, PrivateKey: []byte("x"), BaseURL: "ftp://x"})
	require.Error(t, err)
}

func TestRetriedWriteSendsItsBodyAgain(t *testing.T) {
	fake := fakegithub.New(t)
	fake.ServeConversations()
	var waits []time.Duration
	c := newClient(t, fake, &waits)
	path := "/repos/octo/repo/issues/1/comments"
	fake.FailNext(http.MethodPost, path, fakegithub.Fault{Status: http.StatusTooManyRequests, Body: `{"message":"slow down"}`})
	_, _, err := c.Installation(1).Issues.CreateComment(context.Background(), "octo", "repo", 1, &github.IssueComment{Body: github.String("hello")})
	require.NoError(t, err)
	require.Equal(t, []time.Duration{time.Second}, waits, "no Retry-After: the first backoff")
	require.Equal(t, 2, fake.Count(http.MethodPost, path))
	require.Len(t, fake.Comments(), 1)
	require.Equal(t, "hello", fake.Comments()[0].Body)
}

func TestCancelledRetryWait(t *testing.T) {
	fake := fakegithub.New(t)
	c, err := githubapp.New(githubapp.Config{AppID: fake.AppID, PrivateKey: fake.PrivateKey(), BaseURL: fake.URL,
		Wait: func(context.Context, time.Duration) error { return context.Canceled }})
	require.NoError(t, err)
	path := "/repos/octo/repo/collaborators/alice/permission"
	fake.FailNext(http.MethodGet, path, fakegithub.Fault{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"7"}}, Body: `{}`})
	_, err = c.Permission(context.Background(), 1, "octo", "repo", "alice")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "waiting 7s to retry after GET "+path+" answered 429")
	require.Equal(t, 1, fake.Count(http.MethodGet, path))
}
