package githubapp

import (
	"context"
	"fmt"
	"regexp"
	"strconv"

	"github.com/google/go-github/v66/github"
)

// PullRequestReview is a submitted (or pending) pull request review.
type PullRequestReview = github.PullRequestReview

// Review sides: a comment on the new version of a line (RIGHT: added or
// unchanged lines) or on the old one (LEFT: removed or unchanged lines).
const (
	SideRight = "RIGHT"
	SideLeft  = "LEFT"
)

// Review events. COMMENT leaves the pull request's state alone.
const (
	ReviewComment        = "COMMENT"
	ReviewApprove        = "APPROVE"
	ReviewRequestChanges = "REQUEST_CHANGES"
)

// ReviewLine is one inline comment of a review: on line Line of file Path,
// on Side (SideRight by default).
type ReviewLine struct {
	Path string
	Line int
	Side string
	Body string
}

// NewReview is a review to submit in one request.
type NewReview struct {
	// CommitID is the head the review is about; empty means the pull
	// request's current head.
	CommitID string
	Body     string
	// Event is ReviewComment, ReviewApprove or ReviewRequestChanges.
	Event    string
	Comments []ReviewLine
}

// CreateReview submits a review with its inline comments on pull request
// number (POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews), placed
// by line and side rather than by diff position. GitHub refuses (422) a
// comment on a line the diff does not show.
func (r *Repo) CreateReview(ctx context.Context, number int, rv NewReview) (*PullRequestReview, error) {
	req := &github.PullRequestReviewRequest{Body: github.String(rv.Body), Event: github.String(rv.Event)}
	if rv.CommitID != "" {
		req.CommitID = github.String(rv.CommitID)
	}
	for _, c := range rv.Comments {
		side := c.Side
		if side == "" {
			side = SideRight
		}
		req.Comments = append(req.Comments, &github.DraftReviewComment{Path: github.String(c.Path), Line: github.Int(c.Line),
			Side: github.String(side), Body: github.String(c.Body)})
	}
	review, _, err := r.gh.PullRequests.CreateReview(ctx, r.owner, r.name, number, req)
	if err != nil {
		return nil, fmt.Errorf("submitting a review on %s#%d: %w", r.FullName(), number, err)
	}
	return review, nil
}

// ListReviews lists every review of pull request number, oldest first,
// following GitHub's pages.
func (r *Repo) ListReviews(ctx context.Context, number int) ([]*PullRequestReview, error) {
	var out []*PullRequestReview
	opts := &github.ListOptions{PerPage: 100}
	for {
		rs, resp, err := r.gh.PullRequests.ListReviews(ctx, r.owner, r.name, number, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the reviews of %s#%d: %w", r.FullName(), number, err)
		}
		out = append(out, rs...)
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// hunkHeader is a unified diff hunk's header: @@ -old,n +new,m @@.
var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// LineRange is the lines From..To (inclusive) of one side of a file.
type LineRange struct{ From, To int }

// DiffLines reads a file's patch (the patch field of a pull request's
// files) and returns, per side, the line ranges a review comment may be
// placed on: those of its hunks, the unchanged lines around the changes
// included, as on GitHub.
func DiffLines(patch string) map[string][]LineRange {
	out := map[string][]LineRange{}
	for _, line := range splitLines(patch) {
		m := hunkHeader.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		add := func(side, start, count string) {
			from, _ := strconv.Atoi(start)
			n := 1
			if count != "" {
				n, _ = strconv.Atoi(count)
			}
			if n > 0 {
				out[side] = append(out[side], LineRange{From: from, To: from + n - 1})
			}
		}
		add(SideLeft, m[1], m[2])
		add(SideRight, m[3], m[4])
	}
	return out
}

// InRanges reports whether line is in one of ranges.
func InRanges(ranges []LineRange, line int) bool {
	for _, r := range ranges {
		if line >= r.From && line <= r.To {
			return true
		}
	}
	return false
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return out
}
