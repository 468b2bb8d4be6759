package outbox

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/internal/githubapp"
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

// React adds content (eyes, +1, …) as r to a target ReactionTarget
// names in r, and returns the reaction's id. GitHub keeps one reaction of
// a content per account, so sending it again is safe.
func React(ctx context.Context, r *githubapp.Repo, target, content string) (int64, error) {
	t, err := parseGitHubTarget(target)
	if err != nil {
		return 0, err
	}
	if !strings.EqualFold(t.owner+"/"+t.repo, r.FullName()) {
		return 0, fmt.Errorf("target %q is not in %s", target, r.FullName())
	}
	switch t.what {
	case "issue":
		return r.ReactToIssue(ctx, int(t.id), content)
	case "issue_comment":
		return r.ReactToIssueComment(ctx, t.id, content)
	default: // pull_comment
		return r.ReactToReviewComment(ctx, t.id, content)
	}
}

// Comment writes body as r on the conversation of issue or pull request
// number and returns the comment's address.
func Comment(ctx context.Context, r *githubapp.Repo, number int, body string) (string, error) {
	c, err := r.CreateComment(ctx, number, body)
	if err != nil {
		return "", fmt.Errorf("commenting on %s#%d: %w", r.FullName(), number, err)
	}
	return c.GetHTMLURL(), nil
}

// FindComment looks for a comment on the conversation of number that
// carries key's Marker: a write whose sender died before it saw the
// answer. It returns the comment's address and whether it was found.
func FindComment(ctx context.Context, r *githubapp.Repo, number int, key string) (string, bool, error) {
	c, err := MarkedComment(ctx, r, number, key)
	if err != nil || c == nil {
		return "", false, err
	}
	return c.GetHTMLURL(), true, nil
}

// MarkedComment is the comment on the conversation of number that carries
// key's Marker, or nil when there is none.
func MarkedComment(ctx context.Context, r *githubapp.Repo, number int, key string) (*githubapp.IssueComment, error) {
	return r.FindComment(ctx, number, func(c *githubapp.IssueComment) bool { return strings.Contains(c.GetBody(), Marker(key)) })
}
