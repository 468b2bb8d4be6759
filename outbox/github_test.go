package outbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/githubapp"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/outbox"
)

// React reaches each of GitHub's three reaction routes, held to GitHub's
// description by the fake.
func TestReactOnEveryTarget(t *testing.T) {
	t.Parallel()
	fake := fakegithub.New(t)
	fake.ServeConversations()
	c, err := githubapp.New(githubapp.Config{AppID: fake.AppID, PrivateKey: fake.PrivateKey(), BaseURL: fake.URL})
	require.NoError(t, err)
	gh := c.Installation(7)
	ctx := context.Background()
	for _, target := range []string{"octo/widgets#issue:3", "octo/widgets#issue_comment:9001", "octo/widgets#pull_comment:284312630"} {
		id, err := outbox.React(ctx, gh, target, "eyes")
		require.NoError(t, err, target)
		require.NotZero(t, id, target)
	}
	var subjects []string
	for _, r := range fake.Reactions() {
		require.Equal(t, "eyes", r.Content)
		subjects = append(subjects, r.Subject)
	}
	require.Equal(t, []string{"issue:octo/widgets#3", "issue_comment:octo/widgets/9001", "pull_comment:octo/widgets/284312630"}, subjects)
	require.Empty(t, fake.Violations())
}
