package github_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

func TestAPersonsPullRequestFromAForkMergedInTheWebUI(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.fake.AddRepo(t, "bob/widgets", "main", map[string]string{"README.md": "# widgets\n"})
	e.pushBranch(t, "bob-fix", map[string]string{"fix.go": "package widgets\n"})
	n := e.fake.AddPullRequest(t, repoName, fakegithub.PullRequestSpec{Login: "bob", Head: "bob-fix", HeadRepo: "bob/widgets",
		MaintainerCanModify: true, Draft: true, Title: "Fix"})

	pr, _, err := e.gh.PullRequests.Get(ctx, "octo", "widgets", n)
	require.NoError(t, err)
	require.Equal(t, "bob/widgets", pr.GetHead().GetRepo().GetFullName())
	require.Equal(t, "bob:bob-fix", pr.GetHead().GetLabel())
	require.Equal(t, "bob", pr.GetHead().GetUser().GetLogin())
	require.True(t, pr.GetMaintainerCanModify())
	require.Equal(t, repoName, pr.GetBase().GetRepo().GetFullName())

	e.fake.ReadyForReview(t, repoName, n)
	sha := e.fake.MergeAs(t, repoName, n)
	pr, _, err = e.gh.PullRequests.Get(ctx, "octo", "widgets", n)
	require.NoError(t, err)
	require.True(t, pr.GetMerged())
	require.Equal(t, "closed", pr.GetState())
	require.Equal(t, sha, pr.GetMergeCommitSHA())
	main, _ := e.fake.Branch(t, repoName, "main")
	require.Equal(t, sha, main)
}
