package github_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

func TestIssuesAndComments(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.fake.AddIssue(repoName, 7, "Widgets break", "They break on Mondays.", "alice")
	e.fake.PushAs(t, repoName, "person/fix", map[string]string{"fix.md": "x\n"}, "fix")
	pr := e.fake.AddPullRequest(t, repoName, fakegithub.PullRequestSpec{Login: "bob", Head: "person/fix", Title: "Fix"})
	require.Equal(t, fakegithub.FirstNumber, pr)

	is, _, err := e.gh.Issues.Get(ctx, "octo", "widgets", 7)
	require.NoError(t, err)
	require.Equal(t, "Widgets break", is.GetTitle())
	require.Equal(t, "They break on Mondays.", is.GetBody())
	require.Equal(t, "open", is.GetState())
	require.Equal(t, "alice", is.GetUser().GetLogin())
	require.False(t, is.IsPullRequest())
	asIssue, _, err := e.gh.Issues.Get(ctx, "octo", "widgets", pr)
	require.NoError(t, err)
	require.True(t, asIssue.IsPullRequest())
	require.Equal(t, "bob", asIssue.GetUser().GetLogin())
	_, resp, err := e.gh.Issues.Get(ctx, "octo", "widgets", 8)
	require.Error(t, err)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	first := e.fake.AddComment(repoName, 7, "alice", "Still broken")
	mine, _, err := e.gh.Issues.CreateComment(ctx, "octo", "widgets", 7, &github.IssueComment{Body: github.String("On it")})
	require.NoError(t, err)
	require.Equal(t, "superagent[bot]", mine.GetUser().GetLogin())
	for i := range 35 {
		e.fake.AddComment(repoName, pr, "bob", "noise "+string(rune('a'+i%26)))
	}

	list, _, err := e.gh.Issues.ListComments(ctx, "octo", "widgets", 7, nil)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, first, list[0].GetID())
	require.Equal(t, "alice", list[0].GetUser().GetLogin())
	require.Equal(t, "Still broken", list[0].GetBody())
	require.False(t, list[0].GetCreatedAt().IsZero())
	require.Equal(t, mine.GetID(), list[1].GetID())
	require.Contains(t, list[1].GetHTMLURL(), "#issuecomment-")

	// Pages as GitHub does: 30 by default, then the rest.
	page, resp, err := e.gh.Issues.ListComments(ctx, "octo", "widgets", pr, nil)
	require.NoError(t, err)
	require.Len(t, page, 30)
	require.Equal(t, 2, resp.NextPage)
	page, resp, err = e.gh.Issues.ListComments(ctx, "octo", "widgets", pr, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{Page: 2}})
	require.NoError(t, err)
	require.Len(t, page, 5)
	require.Zero(t, resp.NextPage)

	edited, _, err := e.gh.Issues.EditComment(ctx, "octo", "widgets", mine.GetID(), &github.IssueComment{Body: github.String("Done")})
	require.NoError(t, err)
	require.Equal(t, "Done", edited.GetBody())
	require.Equal(t, "Done", e.fake.Comments()[1].Body)
	require.Len(t, e.fake.Comments(), 37)
}

func TestReviewsAndThreads(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.pushBranch(t, "superagent/fix", map[string]string{"fix.go": "package widgets\n"})
	pr, _, err := e.gh.PullRequests.Create(ctx, "octo", "widgets", &github.NewPullRequest{
		Title: github.String("Fix"), Head: github.String("superagent/fix"), Base: github.String("main"),
	})
	require.NoError(t, err)
	n := pr.GetNumber()

	rid := e.fake.AddReview(repoName, n, "carol", "CHANGES_REQUESTED")
	c1, th1 := e.fake.AddReviewComment(repoName, n, fakegithub.ReviewCommentSpec{Login: "carol", Body: "Name it better", Path: "fix.go", Line: 1, ReviewID: rid})
	c2, th2 := e.fake.AddReviewComment(repoName, n, fakegithub.ReviewCommentSpec{Login: "linter[bot]", Body: "lint", Path: "fix.go", Line: 1})
	require.NotEqual(t, th1, th2)
	require.Regexp(t, `^PRRT_\d+$`, th1)

	// go-github's CreateCommentInReplyTo posts {body, in_reply_to}: GitHub
	// takes it, but its description requires commit_id and path there, so
	// the product replies through .../replies instead.
	var reply *github.PullRequestComment
	var resp *github.Response
	v := e.fake.Expect(func() {
		reply, resp, err = e.gh.PullRequests.CreateCommentInReplyTo(ctx, "octo", "widgets", n, "Renamed", c1)
	})
	require.Len(t, v, 1)
	require.Equal(t, "request body: missing properties 'commit_id', 'path'", v[0].Problem.String())
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, c1, reply.GetInReplyTo())
	require.Equal(t, "superagent[bot]", reply.GetUser().GetLogin())
	require.Equal(t, "fix.go", reply.GetPath())

	req, err := e.gh.NewRequest("POST", "repos/octo/widgets/pulls/100/comments/"+strconv.FormatInt(c2, 10)+"/replies", map[string]string{"body": "Fixed the lint"})
	require.NoError(t, err)
	lintReply := new(github.PullRequestComment)
	_, err = e.gh.Do(ctx, req, lintReply)
	require.NoError(t, err)
	require.Equal(t, c2, lintReply.GetInReplyTo())
	own, _, err := e.gh.PullRequests.CreateComment(ctx, "octo", "widgets", n, &github.PullRequestComment{
		Body: github.String("Note"), Path: github.String("fix.go"), Line: github.Int(1), CommitID: github.String(pr.GetHead().GetSHA()),
	})
	require.NoError(t, err)
	require.Zero(t, own.GetInReplyTo())

	comments, _, err := e.gh.PullRequests.ListComments(ctx, "octo", "widgets", n, nil)
	require.NoError(t, err)
	require.Len(t, comments, 5)
	require.Equal(t, c1, comments[0].GetID())
	require.Equal(t, "carol", comments[0].GetUser().GetLogin())
	require.Equal(t, 1, comments[0].GetLine())
	require.Equal(t, rid, comments[0].GetPullRequestReviewID())
	require.Contains(t, comments[0].GetHTMLURL(), "/pull/100#discussion_r")
	require.Equal(t, c2, comments[1].GetID())
	require.Zero(t, comments[1].GetInReplyTo())

	reviews, _, err := e.gh.PullRequests.ListReviews(ctx, "octo", "widgets", n, nil)
	require.NoError(t, err)
	// carol's review, the linter's comment and the bot's three comments each make one.
	require.Len(t, reviews, 5)
	require.Equal(t, "CHANGES_REQUESTED", reviews[0].GetState())
	require.Equal(t, "carol", reviews[0].GetUser().GetLogin())
	require.Equal(t, "COMMENTED", reviews[1].GetState())

	submitted, _, err := e.gh.PullRequests.CreateReview(ctx, "octo", "widgets", n, &github.PullRequestReviewRequest{
		Body: github.String("Addressed"), Event: github.String("COMMENT"),
		Comments: []*github.DraftReviewComment{{Path: github.String("fix.go"), Line: github.Int(1), Body: github.String("Here")}},
	})
	require.NoError(t, err)
	require.Equal(t, "COMMENTED", submitted.GetState())
	require.Equal(t, "superagent[bot]", submitted.GetUser().GetLogin())
	require.Len(t, e.fake.ReviewThreads(repoName, n), 4)

	query := `query($owner: String!, $name: String!, $number: Int!) {
	  repository(owner: $owner, name: $name) { pullRequest(number: $number) {
	    reviewThreads(first: 100) { nodes { id isResolved comments(first: 50) { nodes { databaseId author { login } body } } } } } } }`
	data := graphql(t, e, query, map[string]any{"owner": "octo", "name": "widgets", "number": n})
	nodes := dig(data, "repository", "pullRequest", "reviewThreads", "nodes").([]any)
	require.Len(t, nodes, 4)
	require.Equal(t, th1, dig(nodes[0], "id"))
	require.Equal(t, false, dig(nodes[0], "isResolved"))
	cs := dig(nodes[0], "comments", "nodes").([]any)
	require.Len(t, cs, 2)
	require.InDelta(t, float64(c1), dig(cs[0], "databaseId"), 0)
	require.Equal(t, "carol", dig(cs[0], "author", "login"))
	require.Equal(t, "superagent", dig(cs[1], "author", "login"), "GraphQL logins of bots lack [bot]")
	require.Equal(t, "Renamed", dig(cs[1], "body"))

	data = graphql(t, e, `mutation { resolveReviewThread(input: {threadId: "`+th1+`"}) { thread { id isResolved } } }`, nil)
	require.Equal(t, true, dig(data, "resolveReviewThread", "thread", "isResolved"))
	threads := e.fake.ReviewThreads(repoName, n)
	require.Len(t, threads, 4)
	require.Equal(t, fakegithub.ReviewThread{ID: th1, Resolved: true, Path: "fix.go", Line: 1, Comments: []fakegithub.ThreadComment{
		{ID: c1, Login: "carol", Body: "Name it better"}, {ID: reply.GetID(), Login: "superagent[bot]", Body: "Renamed"},
	}}, threads[0])
	require.False(t, threads[1].Resolved)

	_, errs := graphqlRaw(t, e, `mutation($threadId: ID!) { resolveReviewThread(input: {threadId: $threadId}) { thread { id } } }`, map[string]any{"threadId": "PRRT_404"})
	require.Len(t, errs, 1)
	require.Contains(t, errs[0]["message"], "PRRT_404")
	_, errs = graphqlRaw(t, e, `query { viewer { login } }`, nil)
	require.Len(t, errs, 1)

	data = graphql(t, e, `mutation($pullRequestId: ID!) { convertPullRequestToDraft(input: {pullRequestId: $pullRequestId}) { pullRequest { isDraft } } }`,
		map[string]any{"pullRequestId": pr.GetNodeID()})
	require.Equal(t, true, dig(data, "convertPullRequestToDraft", "pullRequest", "isDraft"))
	require.True(t, e.fake.PullRequests(repoName)[0].Draft)
}
