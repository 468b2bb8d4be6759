package outbox

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/superagent-dev/superagent/tickets"
)

var (
	issueCommentURL = regexp.MustCompile(`#issuecomment-([0-9]+)$`)
	pullCommentURL  = regexp.MustCompile(`#discussion_r([0-9]+)$`)
	githubTarget    = regexp.MustCompile(`^([^/\s]+)/([^#\s]+)#(issue|issue_comment|pull_comment):([0-9]+)(?:/review_thread:([0-9]+))?$`)
	reviewThreadKey = regexp.MustCompile(`/review-thread/([0-9]+)$`)
)

// ReactionTarget says where a reaction to a GitHub card goes, as an
// outgoing target: the comment itself (owner/name#issue_comment:ID or
// #pull_comment:ID), else its issue or pull request (#issue:N); "" when
// the card has nothing to react to (a push, a check failure).
func ReactionTarget(c tickets.Card) string {
	if m := issueCommentURL.FindStringSubmatch(c.URL); m != nil {
		return c.Thread.Repo + "#issue_comment:" + m[1]
	}
	if m := pullCommentURL.FindStringSubmatch(c.URL); m != nil {
		return c.Thread.Repo + "#pull_comment:" + m[1]
	}
	if c.Thread.Number > 0 {
		return c.Thread.Repo + "#issue:" + strconv.Itoa(c.Thread.Number)
	}
	return ""
}

// MessageTarget says where a message about a GitHub card goes, as an
// outgoing target: under the card's review comment, as a reply in its
// review thread (owner/name#issue:N/review_thread:ROOT), else on its
// issue or pull request conversation (#issue:N); "" when the card has no
// conversation (a push, a check failure on a branch).
func MessageTarget(c tickets.Card) string {
	if c.Thread.Number <= 0 {
		return ""
	}
	target := c.Thread.Repo + "#issue:" + strconv.Itoa(c.Thread.Number)
	if m := reviewThreadKey.FindStringSubmatch(c.Thread.Key); m != nil {
		target += "/review_thread:" + m[1]
	}
	return target
}

// gitHubTarget is a parsed outgoing GitHub target; thread is the root
// comment of a review thread the message replies in, or 0.
type gitHubTarget struct {
	owner, repo, what string
	id, thread        int64
}

func parseGitHubTarget(target string) (gitHubTarget, error) {
	t := githubTarget.FindStringSubmatch(target)
	if t == nil {
		return gitHubTarget{}, fmt.Errorf("unusable GitHub target %q", target)
	}
	id, _ := strconv.ParseInt(t[4], 10, 64)
	out := gitHubTarget{owner: t[1], repo: t[2], what: t[3], id: id}
	if t[5] != "" {
		if t[3] != "issue" {
			return gitHubTarget{}, fmt.Errorf("unusable GitHub target %q: a review thread is named under its pull request (#issue:N)", target)
		}
		out.thread, _ = strconv.ParseInt(t[5], 10, 64)
	}
	return out, nil
}

// React adds content (eyes, +1, …) as gh to a target ReactionTarget
// names, and returns the reaction's id. GitHub keeps one reaction of a
// content per account, so sending it again is safe.
func React(ctx context.Context, gh *github.Client, target, content string) (int64, error) {
	t, err := parseGitHubTarget(target)
	if err != nil {
		return 0, err
	}
	var r *github.Reaction
	switch t.what {
	case "issue":
		r, _, err = gh.Reactions.CreateIssueReaction(ctx, t.owner, t.repo, int(t.id), content)
	case "issue_comment":
		r, _, err = gh.Reactions.CreateIssueCommentReaction(ctx, t.owner, t.repo, t.id, content)
	case "pull_comment":
		r, _, err = gh.Reactions.CreatePullRequestCommentReaction(ctx, t.owner, t.repo, t.id, content)
	}
	if err != nil {
		return 0, err
	}
	return r.GetID(), nil
}

// Comment writes body as gh on the conversation of issue or pull request
// number of repo (owner/name) and returns the comment's address.
func Comment(ctx context.Context, gh *github.Client, repo string, number int, body string) (string, error) {
	owner, name, _ := strings.Cut(repo, "/")
	c, _, err := gh.Issues.CreateComment(ctx, owner, name, number, &github.IssueComment{Body: github.String(body)})
	if err != nil {
		return "", fmt.Errorf("commenting on %s#%d: %w", repo, number, err)
	}
	return c.GetHTMLURL(), nil
}

// ReviewReply writes body as gh as a reply in the review thread whose
// first comment is root, on pull request number of repo (owner/name),
// and returns the reply. It uses GitHub's documented reply endpoint
// (POST /repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies),
// not go-github's CreateCommentInReplyTo: that posts {body, in_reply_to}
// to .../pulls/{n}/comments, which GitHub's description requires to carry
// commit_id and path as well. GitHub takes no reply to a reply: root must
// be the thread's first comment.
func ReviewReply(ctx context.Context, gh *github.Client, repo string, number int, root int64, body string) (*github.PullRequestComment, error) {
	owner, name, _ := strings.Cut(repo, "/")
	u := fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", url.PathEscape(owner), url.PathEscape(name), number, root)
	req, err := gh.NewRequest(http.MethodPost, u, map[string]string{"body": body})
	if err != nil {
		return nil, fmt.Errorf("replying to review comment %d: %w", root, err)
	}
	c := new(github.PullRequestComment)
	if _, err := gh.Do(ctx, req, c); err != nil {
		return nil, fmt.Errorf("replying to review comment %d: %w", root, err)
	}
	return c, nil
}

// FindComment looks for a comment on the conversation of number that
// carries key's Marker: a write whose sender died before it saw the
// answer. It returns the comment's address and whether it was found.
func FindComment(ctx context.Context, gh *github.Client, repo string, number int, key string) (string, bool, error) {
	c, err := MarkedComment(ctx, gh, repo, number, key)
	if err != nil || c == nil {
		return "", false, err
	}
	return c.GetHTMLURL(), true, nil
}

// MarkedComment is the comment on the conversation of number that carries
// key's Marker, or nil when there is none.
func MarkedComment(ctx context.Context, gh *github.Client, repo string, number int, key string) (*github.IssueComment, error) {
	owner, name, _ := strings.Cut(repo, "/")
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		cs, resp, err := gh.Issues.ListComments(ctx, owner, name, number, opts)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if strings.Contains(c.GetBody(), Marker(key)) {
				return c, nil
			}
		}
		if resp.NextPage == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
}
