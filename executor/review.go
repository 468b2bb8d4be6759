package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// Bounds of one review: GitHub takes more, but a review a person reads
// has a handful of comments, each about one thing.
const (
	maxReviewComments    = 30
	maxReviewCommentChar = 4000
	maxReviewFiles       = 300
)

// adoptReview gives a review Ticket, before its first workspace, the pull
// request it reviews: its workspace then holds the pull request's head
// (from the fork it comes from, if any), and the Session is told what a
// review is here. The Ticket never pushes there (its Mandate has no
// branch). A request on something that is not an open pull request is
// told to the Session, which says so.
func (e *Executor) adoptReview(ctx context.Context, t tickets.Ticket, sid int64) (tickets.Ticket, error) {
	src, err := e.deps.Tickets.Card(ctx, e.deps.DB, t.SourceCardID)
	if err != nil {
		return t, err
	}
	repo, number, ok := tickets.ReviewRequest(src)
	if !ok || !strings.EqualFold(repo, t.Repo) {
		return t, nil
	}
	gh, err := e.installationClient(ctx, t.Repo)
	if err != nil {
		return t, err
	}
	pr, err := gh.PullRequest(ctx, number)
	switch {
	case githubapp.IsNotFound(err):
		_, err = e.sessions.Append(ctx, e.deps.DB, sid, fmt.Sprintf("host: the request asks for a review of %s#%d, which is not a pull request: "+
			"say so in one sentence under the request and report blocked.", t.Repo, number))
		return t, err
	case err != nil:
		return t, fmt.Errorf("reading pull request %s#%d: %w", t.Repo, number, err)
	case pr.GetState() != "open":
		_, err = e.sessions.Append(ctx, e.deps.DB, sid, fmt.Sprintf("host: the request asks for a review of %s#%d, which is %s: "+
			"say so in one sentence under the request and report blocked.", t.Repo, number, pr.GetState()))
		return t, err
	}
	events, err := e.reviewEvents(ctx)
	if err != nil {
		return t, err
	}
	head := pr.GetHead()
	err = e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		if err := e.deps.Tickets.SetPullRequest(ctx, tx, t.ID, head.GetRef(), number); err != nil {
			return err
		}
		_, err := e.sessions.Append(ctx, tx, sid, fmt.Sprintf("host: this Ticket reviews %s's pull request %s#%d (branch %s, head %s); "+
			"your workspace holds its head. Read its diff (github_read what=pull_request) and the code it touches, run the repository's tests "+
			"with run_command, then post ONE review with %s: inline comments on lines of the diff (a ```suggestion block where you have a concrete fix), "+
			"event %s. Nothing is pushed to their branch. Replies in the review's threads come back to you: answer them with review_reply. "+
			"Then report done, saying what the review found and which tests ran.",
			pr.GetUser().GetLogin(), t.Repo, number, head.GetRef(), head.GetSHA(), ToolPRReview, strings.Join(events, " or ")))
		return err
	})
	if err != nil {
		return t, err
	}
	e.cfg.Logger.Info("reviewing a person's pull request", "ticket", t.ID, "repo", t.Repo, "pr", number, "author", pr.GetUser().GetLogin())
	return e.deps.Tickets.Ticket(ctx, e.deps.DB, t.ID)
}

// reviewEvents are the review events the policy allows.
func (e *Executor) reviewEvents(ctx context.Context) ([]string, error) {
	settings, _, err := e.deps.Prompts.Current(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	return settings.Policy.ReviewEvents(), nil
}

type prReviewArgs struct {
	Pull     int                 `json:"pull,omitempty" jsonschema_description:"the pull request; default the one the Ticket reviews"`
	Body     string              `json:"body" jsonschema_description:"the review's summary: what you read, which tests ran and what they showed"`
	Event    string              `json:"event,omitempty" jsonschema:"enum=COMMENT,enum=APPROVE,enum=REQUEST_CHANGES" jsonschema_description:"default COMMENT; the others only where the policy allows them"`
	Comments []reviewCommentArgs `json:"comments"`
}

type reviewCommentArgs struct {
	Path string `json:"path"`
	Line int    `json:"line" jsonschema_description:"the line's number in the file on side"`
	Side string `json:"side,omitempty" jsonschema:"enum=RIGHT,enum=LEFT" jsonschema_description:"RIGHT (default): the pull request's version; LEFT: the base's, for a removed line"`
	Body string `json:"body" jsonschema_description:"one point; a concrete fix as a suggestion block"`
}

// checkPRReview refuses, before anything is posted, a review this Ticket
// may not post or whose comments do not all sit on the diff; the reason
// lists every problem and, for a misplaced comment, where it may go.
func (e *Executor) checkPRReview(ctx context.Context, call session.Call, a prReviewArgs) error {
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, call.TicketID)
	if err != nil {
		return err
	}
	if !tickets.IsReview(t) {
		return session.Refuse("this Ticket was not asked for a review: pr_review posts the one review a person asked for with \"@… review\"")
	}
	if err := mayWrite(t, tickets.ActionReview); err != nil {
		return session.Refuse("%s", err)
	}
	if t.PullNumber == 0 {
		return session.Refuse("this Ticket has no pull request to review")
	}
	if a.Pull != 0 && a.Pull != t.PullNumber {
		return session.Refuse("this Ticket reviews %s#%d, not #%d", t.Repo, t.PullNumber, a.Pull)
	}
	if o, err := e.deps.Tickets.Intent(ctx, e.deps.DB, reviewKey(t)); err == nil && o.State == tickets.OutgoingSent {
		return session.Refuse("this Ticket has posted its review already (%s): answer in its threads with review_reply", o.Result)
	} else if err != nil && !errors.Is(err, tickets.ErrNotFound) {
		return err
	}
	var problems []string
	events, err := e.reviewEvents(ctx)
	if err != nil {
		return err
	}
	if a.Event != "" && !slices.Contains(events, a.Event) {
		problems = append(problems, fmt.Sprintf("event %s is not allowed by the policy (allowed: %s)", a.Event, strings.Join(events, ", ")))
	}
	if strings.TrimSpace(a.Body) == "" {
		problems = append(problems, "the review needs a body: what you read, which tests ran and what they showed")
	}
	if len(a.Comments) > maxReviewComments {
		problems = append(problems, fmt.Sprintf("%d comments; at most %d: keep the ones that matter", len(a.Comments), maxReviewComments))
	}
	gh, err := e.installationClient(ctx, t.Repo)
	if err != nil {
		return err
	}
	files, err := gh.PullFiles(ctx, t.PullNumber, maxReviewFiles)
	if err != nil {
		return err
	}
	problems = append(problems, placeComments(files, a.Comments)...)
	if len(problems) > 0 {
		return session.Refuse("nothing was posted: %s", strings.Join(problems, "; "))
	}
	return nil
}

// placeComments says, for each comment, why it cannot sit where it asks:
// a file the pull request does not change, or a line outside its hunks
// (with the ranges it may take instead).
func placeComments(files []*githubapp.CommitFile, comments []reviewCommentArgs) []string {
	patches := map[string]string{}
	var names []string
	for _, f := range files {
		patches[f.GetFilename()] = f.GetPatch()
		names = append(names, f.GetFilename())
	}
	sort.Strings(names)
	var problems []string
	for i, c := range comments {
		where := fmt.Sprintf("comments[%d] (%s line %d)", i, c.Path, c.Line)
		side := c.Side
		if side == "" {
			side = githubapp.SideRight
		}
		patch, changed := patches[c.Path]
		switch {
		case strings.TrimSpace(c.Body) == "":
			problems = append(problems, where+": the comment is empty")
		case len(c.Body) > maxReviewCommentChar:
			problems = append(problems, fmt.Sprintf("%s: %d characters; at most %d", where, len(c.Body), maxReviewCommentChar))
		}
		switch {
		case side != githubapp.SideRight && side != githubapp.SideLeft:
			problems = append(problems, fmt.Sprintf("%s: side is RIGHT or LEFT, not %q", where, c.Side))
		case !changed:
			problems = append(problems, fmt.Sprintf("%s: the pull request does not change %s (it changes %s)", where, c.Path, strings.Join(names, ", ")))
		case patch == "":
			problems = append(problems, fmt.Sprintf("%s: GitHub shows no diff of %s (binary or too large): say it in the review's body", where, c.Path))
		default:
			ranges := githubapp.DiffLines(patch)
			if !githubapp.InRanges(ranges[side], c.Line) {
				problems = append(problems, fmt.Sprintf("%s: line %d is not in the diff on side %s; lines there: %s", where, c.Line, side, spans(ranges)))
			}
		}
	}
	return problems
}

// spans writes a file's commentable ranges, RIGHT first.
func spans(ranges map[string][]githubapp.LineRange) string {
	var parts []string
	for _, side := range []string{githubapp.SideRight, githubapp.SideLeft} {
		for _, r := range ranges[side] {
			s := strconv.Itoa(r.From)
			if r.To != r.From {
				s += "-" + strconv.Itoa(r.To)
			}
			parts = append(parts, s+" "+side)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func reviewKey(t tickets.Ticket) string {
	return fmt.Sprintf("review:ticket:%d:pr:%d", t.ID, t.PullNumber)
}

// prReview posts the Ticket's one review, once: its body and each inline
// comment start with the team's agent line, and a retry after a crash
// finds a review that landed by its marker.
func (e *Executor) prReview(ctx context.Context, call session.Call, a prReviewArgs) (string, error) {
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, call.TicketID)
	if err != nil {
		return "", err
	}
	gh, pr, err := e.pull(ctx, t)
	if err != nil {
		return "", err
	}
	key := reviewKey(t)
	body, err := e.githubBody(ctx, key, a.Body)
	if err != nil {
		return "", err
	}
	line, err := e.agentLine(ctx)
	if err != nil {
		return "", err
	}
	rv := githubapp.NewReview{CommitID: pr.GetHead().GetSHA(), Body: body, Event: a.Event}
	if rv.Event == "" {
		rv.Event = githubapp.ReviewComment
	}
	for _, c := range a.Comments {
		rv.Comments = append(rv.Comments, githubapp.ReviewLine{Path: c.Path, Line: c.Line, Side: c.Side,
			Body: "_" + line + "_\n\n" + e.deps.Scrubber.Scrub(strings.TrimSpace(c.Body))})
	}
	o := tickets.Outgoing{Key: key, TicketID: t.ID, Source: tickets.SourceGitHub, Kind: "review",
		Target: t.Repo + "#pull:" + strconv.Itoa(t.PullNumber), Body: body}
	ref, err := e.write(ctx, o, func(ctx context.Context) (string, error) {
		posted, err := gh.CreateReview(ctx, t.PullNumber, rv)
		if err != nil {
			return "", err
		}
		return posted.GetHTMLURL(), nil
	}, func(ctx context.Context) (string, bool, error) {
		reviews, err := gh.ListReviews(ctx, t.PullNumber)
		if err != nil {
			return "", false, err
		}
		for _, r := range reviews {
			if strings.Contains(r.GetBody(), outbox.Marker(key)) {
				return r.GetHTMLURL(), true, nil
			}
		}
		return "", false, nil
	})
	if err != nil {
		return "", err
	}
	e.cfg.Logger.Info("review posted", "ticket", t.ID, "session", call.SessionID, "repo", t.Repo, "pr", t.PullNumber,
		"event", rv.Event, "comments", len(rv.Comments))
	return fmt.Sprintf("posted the review (%s, %d inline comments): %s. Replies in its threads come back to you.", rv.Event, len(rv.Comments), ref), nil
}
