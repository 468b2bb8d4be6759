package githubapp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/githubapp"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

// A review goes in one request with its inline comments placed by line
// and side, and reads back through ListReviews; a comment on a line the
// diff does not show is refused by GitHub and nothing is posted.
func TestCreateReviewPlacesCommentsOnTheDiff(t *testing.T) {
	fake := fakegithub.New(t)
	fake.AddRepo(t, "octo/repo", "main", map[string]string{"README.md": "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"})
	fake.PushAs(t, "octo/repo", "alice-edit", map[string]string{"README.md": "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nTEN\n"}, "Shout ten")
	n := fake.AddPullRequest(t, "octo/repo", fakegithub.PullRequestSpec{Login: "alice", Head: "alice-edit", Title: "Shout ten"})
	var waits []time.Duration
	r := newClient(t, fake, &waits).Repo(42, "octo/repo")
	ctx := context.Background()

	files, err := r.PullFiles(ctx, n, 10)
	require.NoError(t, err)
	require.Len(t, files, 1)
	lines := githubapp.DiffLines(files[0].GetPatch())
	require.True(t, githubapp.InRanges(lines[githubapp.SideRight], 10), "the changed line")
	require.True(t, githubapp.InRanges(lines[githubapp.SideRight], 8), "context around it")
	require.False(t, githubapp.InRanges(lines[githubapp.SideRight], 2), "far from the change")

	_, err = r.CreateReview(ctx, n, githubapp.NewReview{Body: "Nope.", Event: githubapp.ReviewComment,
		Comments: []githubapp.ReviewLine{{Path: "README.md", Line: 2, Body: "not in the diff"}}})
	require.Error(t, err)
	require.Contains(t, err.Error(), "422")
	none, err := r.ListReviews(ctx, n)
	require.NoError(t, err)
	require.Empty(t, none, "a refused review posts nothing")

	rv, err := r.CreateReview(ctx, n, githubapp.NewReview{Body: "One thought.", Event: githubapp.ReviewComment,
		Comments: []githubapp.ReviewLine{
			{Path: "README.md", Line: 10, Body: "```suggestion\nten\n```"},
			{Path: "README.md", Line: 10, Side: githubapp.SideLeft, Body: "was lowercase"},
		}})
	require.NoError(t, err)
	require.Equal(t, "COMMENTED", rv.GetState())
	reviews, err := r.ListReviews(ctx, n)
	require.NoError(t, err)
	require.Len(t, reviews, 1)
	require.Equal(t, rv.GetID(), reviews[0].GetID())
	comments, err := r.ReviewComments(ctx, n)
	require.NoError(t, err)
	require.Len(t, comments, 2)
	require.Equal(t, rv.GetID(), comments[0].GetPullRequestReviewID())
	require.Equal(t, githubapp.SideRight, comments[0].GetSide())
	require.Equal(t, githubapp.SideLeft, comments[1].GetSide())
	require.Empty(t, fake.Violations(), "every request and answer held to GitHub's description")
}

// DiffLines reads each hunk's ranges on both sides, a one-line hunk
// without a count included.
func TestDiffLines(t *testing.T) {
	for _, tc := range []struct {
		name        string
		patch       string
		left, right []githubapp.LineRange
	}{
		{"one hunk", "@@ -8,3 +8,3 @@ x\n eight\n nine\n-ten\n+TEN\n", []githubapp.LineRange{{8, 10}}, []githubapp.LineRange{{8, 10}}},
		{"new file", "@@ -0,0 +1 @@\n+hello\n", nil, []githubapp.LineRange{{1, 1}}},
		{"two hunks", "@@ -1,2 +1,3 @@\n a\n+b\n c\n@@ -20,4 +21,2 @@\n x\n-y\n-z\n w\n", []githubapp.LineRange{{1, 2}, {20, 23}}, []githubapp.LineRange{{1, 3}, {21, 22}}},
		{"binary or empty", "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := githubapp.DiffLines(tc.patch)
			require.Equal(t, tc.left, got[githubapp.SideLeft])
			require.Equal(t, tc.right, got[githubapp.SideRight])
		})
	}
}
