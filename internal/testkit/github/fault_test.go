package github_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

// A slow fault with no status lets the write land while its caller, who
// gave up waiting, never sees the answer.
func TestSlowFaultLandsTheWriteWithoutAnswering(t *testing.T) {
	e := setup(t)
	e.fake.FailNext("POST", "/repos/octo/widgets/pulls", fakegithub.Fault{Delay: time.Minute})
	e.fake.PushAs(t, repoName, "feature", map[string]string{"a.txt": "a\n"}, "add a")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err := e.gh.PullRequests.Create(ctx, "octo", "widgets", &github.NewPullRequest{
		Title: github.String("x"), Head: github.String("feature"), Base: github.String("main")})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Len(t, e.fake.PullRequests(repoName), 1, "the write landed")

	// The next request is answered at once.
	_, _, err = e.gh.PullRequests.Get(context.Background(), "octo", "widgets", e.fake.PullRequests(repoName)[0].Number)
	require.NoError(t, err)
}
