package github_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

func TestPullRequestLifecycle(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	sha := e.pushBranch(t, "superagent/fix", map[string]string{"fix.go": "package widgets\n\nfunc Fix() {}\n", "README.md": "# widgets, fixed\n"})

	pr, resp, err := e.gh.PullRequests.Create(ctx, "octo", "widgets", &github.NewPullRequest{
		Title: github.String("Fix widgets"), Head: github.String("octo:superagent/fix"), Base: github.String("main"),
		Body: github.String("Fixes #7"), Draft: github.Bool(true),
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, fakegithub.FirstNumber, pr.GetNumber())
	require.Equal(t, "open", pr.GetState())
	require.True(t, pr.GetDraft())
	require.Equal(t, "https://github.com/octo/widgets/pull/100", pr.GetHTMLURL())
	require.Equal(t, "superagent/fix", pr.GetHead().GetRef())
	require.Equal(t, sha, pr.GetHead().GetSHA())
	require.Equal(t, "main", pr.GetBase().GetRef())
	require.Equal(t, "superagent[bot]", pr.GetUser().GetLogin())
	require.Equal(t, "Bot", pr.GetUser().GetType())
	require.True(t, pr.GetMergeable())
	require.Equal(t, 4, pr.GetAdditions()) // fix.go 3 lines, README 1
	require.Equal(t, 1, pr.GetDeletions())
	require.Equal(t, 2, pr.GetChangedFiles())
	require.NotEmpty(t, pr.GetNodeID())

	t.Run("duplicate head", func(t *testing.T) {
		_, resp, err := e.gh.PullRequests.Create(ctx, "octo", "widgets", &github.NewPullRequest{
			Title: github.String("Again"), Head: github.String("superagent/fix"), Base: github.String("main"),
		})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		var ge *github.ErrorResponse
		require.True(t, errors.As(err, &ge))
		require.Equal(t, "A pull request already exists for octo:superagent/fix.", ge.Errors[0].Message)
	})

	t.Run("no commits", func(t *testing.T) {
		e.fake.PushAs(t, repoName, "empty", nil, "nothing")
		mustGit(t, "", "--git-dir", e.bare, "update-ref", "refs/heads/empty", "main")
		_, resp, err := e.gh.PullRequests.Create(ctx, "octo", "widgets", &github.NewPullRequest{
			Title: github.String("Empty"), Head: github.String("empty"), Base: github.String("main"),
		})
		require.Error(t, err)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	})

	newer := e.fake.PushAs(t, repoName, "superagent/fix", map[string]string{"more.go": "package widgets\n"}, "more")
	got, _, err := e.gh.PullRequests.Get(ctx, "octo", "widgets", 100)
	require.NoError(t, err)
	require.Equal(t, newer, got.GetHead().GetSHA())
	require.Equal(t, 3, got.GetChangedFiles())

	e.fake.PushAs(t, repoName, "person/docs", map[string]string{"docs.md": "docs\n"}, "docs")
	person := e.fake.AddPullRequest(t, repoName, fakegithub.PullRequestSpec{Login: "alice", Head: "person/docs", Title: "Docs"})
	require.Equal(t, 101, person)

	list, _, err := e.gh.PullRequests.List(ctx, "octo", "widgets", &github.PullRequestListOptions{Head: "octo:superagent/fix"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, 100, list[0].GetNumber())
	list, _, err = e.gh.PullRequests.List(ctx, "octo", "widgets", nil)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "alice", list[0].GetUser().GetLogin())

	// Editing, closing and reopening.
	edited, _, err := e.gh.PullRequests.Edit(ctx, "octo", "widgets", 101, &github.PullRequest{Title: github.String("Better docs"), State: github.String("closed")})
	require.NoError(t, err)
	require.Equal(t, "Better docs", edited.GetTitle())
	require.Equal(t, "closed", edited.GetState())
	list, _, err = e.gh.PullRequests.List(ctx, "octo", "widgets", &github.PullRequestListOptions{State: "closed"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	list, _, err = e.gh.PullRequests.List(ctx, "octo", "widgets", &github.PullRequestListOptions{State: "all"})
	require.NoError(t, err)
	require.Len(t, list, 2)

	// A draft cannot be merged; ready for review through GraphQL, then it can.
	_, resp, err = e.gh.PullRequests.Merge(ctx, "octo", "widgets", 100, "", nil)
	require.Error(t, err)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	data := graphql(t, e, `mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { id isDraft } } }`,
		map[string]any{"id": pr.GetNodeID()})
	require.Equal(t, false, dig(data, "markPullRequestReadyForReview", "pullRequest", "isDraft"))

	res, _, err := e.gh.PullRequests.Merge(ctx, "octo", "widgets", 100, "", &github.PullRequestOptions{SHA: newer})
	require.NoError(t, err)
	require.True(t, res.GetMerged())
	main, _ := e.fake.Branch(t, repoName, "main")
	require.Equal(t, res.GetSHA(), main)
	require.Equal(t, "package widgets\n", mustGit(t, "", "--git-dir", e.bare, "show", "main:more.go")+"\n")
	got, _, err = e.gh.PullRequests.Get(ctx, "octo", "widgets", 100)
	require.NoError(t, err)
	require.True(t, got.GetMerged())
	require.Equal(t, "closed", got.GetState())
	_, resp, err = e.gh.PullRequests.Merge(ctx, "octo", "widgets", 100, "", nil)
	require.Error(t, err)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	snap := e.fake.PullRequests(repoName)
	require.Len(t, snap, 2)
	require.Equal(t, fakegithub.PullRequest{Number: 100, Title: "Fix widgets", Body: "Fixes #7", Head: "superagent/fix", Base: "main",
		HeadSHA: newer, State: "closed", Merged: true, MergeCommitSHA: res.GetSHA(), User: "superagent[bot]"}, snap[0])
	require.Equal(t, "alice", snap[1].User)
}
