package outbox_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// React reaches each of GitHub's three reaction routes, held to GitHub's
// description by the fake.
func TestReactOnEveryTarget(t *testing.T) {
	t.Parallel()
	fake := fakegithub.New(t)
	fake.ServeConversations()
	c, err := githubapp.New(githubapp.Config{AppID: fake.AppID, PrivateKey: fake.PrivateKey(), BaseURL: fake.URL})
	require.NoError(t, err)
	gh := c.Repo(7, "octo/widgets")
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

// A message about a card goes under it: a review comment's in its review
// thread, through GitHub's reply endpoint; an issue or pull request
// comment's in that conversation; a push's nowhere.
func TestMessageTarget(t *testing.T) {
	t.Parallel()
	pull := tickets.Thread{Source: tickets.SourceGitHub, Key: "github:octo/widgets#12", Repo: "octo/widgets", Number: 12}
	review := pull
	review.Key += "/review-thread/284312630"
	branch := tickets.Thread{Source: tickets.SourceGitHub, Key: "github:octo/widgets@main", Repo: "octo/widgets"}
	for _, tc := range []struct {
		thread tickets.Thread
		want   string
	}{
		{review, "octo/widgets#issue:12/review_thread:284312630"},
		{pull, "octo/widgets#issue:12"},
		{branch, ""},
	} {
		require.Equal(t, tc.want, outbox.MessageTarget(tickets.Card{Source: tickets.SourceGitHub, Thread: tc.thread}), tc.thread.Key)
	}
}

// The Messenger sends such a message through the replies endpoint, with
// the agent line, held to GitHub's description by the fake; a comment
// that is no thread's is refused by GitHub.
func TestQuestionUnderAReviewCommentIsAReplyInItsThread(t *testing.T) {
	t.Parallel()
	fake := fakegithub.New(t)
	fake.ServeRepositories()
	c, err := githubapp.New(githubapp.Config{AppID: fake.AppID, PrivateKey: fake.PrivateKey(), BaseURL: fake.URL})
	require.NoError(t, err)
	d := dbtest.SQLite(t)
	seed.Installation(t, d, 7, "octo/widgets")
	root, _ := fake.AddReviewComment("octo/widgets", 12, fakegithub.ReviewCommentSpec{Login: "alice", Body: "Why this name?", Path: "main.go", Line: 3})
	card := tickets.Card{Source: tickets.SourceGitHub, Thread: tickets.Thread{Source: tickets.SourceGitHub,
		Key: "github:octo/widgets#12/review-thread/" + strconv.FormatInt(root, 10), Repo: "octo/widgets", Number: 12}}
	m := &outbox.Messenger{DB: d, GitHub: c}
	require.NoError(t, m.Send(context.Background(), tickets.Outgoing{ID: 1, Source: tickets.SourceGitHub, Kind: outbox.KindComment,
		Target: outbox.MessageTarget(card), Body: "Which name would you prefer?"}, card))
	threads := fake.ReviewThreads("octo/widgets", 12)
	require.Len(t, threads, 1)
	require.Len(t, threads[0].Comments, 2)
	require.Equal(t, promptparts.DefaultAgentLine+"\n\nWhich name would you prefer?", threads[0].Comments[1].Body)
	require.Empty(t, fake.Comments(), "nothing in the pull request's conversation")
	require.Empty(t, fake.Violations())

	_, err = c.Repo(7, "octo/widgets").ReplyToReviewComment(context.Background(), 12, root+1000, "lost")
	require.Error(t, err, "a reply needs the thread's comment")
}
