package githubapp_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/githubapp"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

// The comment lists follow GitHub's pages: IssueComments stops at its
// limit, FindComment reads on until a comment matches and no further.
func TestCommentsFollowPages(t *testing.T) {
	fake := fakegithub.New(t)
	fake.ServeRepositories()
	for i := range 250 {
		fake.AddComment("octo/repo", 5, "alice", fmt.Sprintf("comment %d", i))
	}
	var waits []time.Duration
	r := newClient(t, fake, &waits).Repo(42, "octo/repo")
	ctx := context.Background()

	first, err := r.IssueComments(ctx, 5, 120)
	require.NoError(t, err)
	require.Len(t, first, 120)
	require.Equal(t, "comment 119", first[119].GetBody())

	lists := func() int { return fake.Count(http.MethodGet, "/repos/octo/repo/issues/5/comments") }
	before := lists()
	c, err := r.FindComment(ctx, 5, func(c *githubapp.IssueComment) bool { return c.GetBody() == "comment 130" })
	require.NoError(t, err)
	require.Equal(t, "comment 130", c.GetBody())
	require.Equal(t, 2, lists()-before, "the second page has it")

	before = lists()
	c, err = r.FindComment(ctx, 5, func(c *githubapp.IssueComment) bool { return strings.HasPrefix(c.GetBody(), "nobody") })
	require.NoError(t, err)
	require.Nil(t, c)
	require.Equal(t, 3, lists()-before, "every page is read")
	require.Empty(t, fake.Violations())
}

// A pull request GitHub does not have is told by IsNotFound, and nothing
// else is.
func TestIsNotFound(t *testing.T) {
	fake := fakegithub.New(t)
	fake.AddRepo(t, "octo/repo", "main", map[string]string{"README.md": "hi\n"})
	var waits []time.Duration
	r := newClient(t, fake, &waits).Repo(42, "octo/repo")
	_, err := r.PullRequest(context.Background(), 404)
	require.Error(t, err)
	require.True(t, githubapp.IsNotFound(err))
	require.False(t, githubapp.IsNotFound(fmt.Errorf("reading: %w", context.Canceled)))
}
