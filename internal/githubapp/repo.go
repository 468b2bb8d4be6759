package githubapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/google/go-github/v66/github"
)

// The go-github types the roles name. They are plain data: what GitHub
// answered, read through their Get methods. The client that fetched them
// stays in this package.
type (
	// PullRequest is a pull request as GitHub describes it.
	PullRequest = github.PullRequest
	// WorkflowJob is a GitHub Actions job.
	WorkflowJob = github.WorkflowJob
	// IssueComment is a comment on an issue's or pull request's conversation.
	IssueComment = github.IssueComment
	// PullRequestComment is a review comment.
	PullRequestComment = github.PullRequestComment
	// CommitFile is a file a pull request changes.
	CommitFile = github.CommitFile
)

// Repo is one repository as an installation reaches it: every call the
// roles make on GitHub goes through its methods, so the installation's
// pacing, its retries of rate limits and its token's scope apply to all of
// them. Errors are go-github's, which name the request and GitHub's
// answer; IsNotFound tells a 404.
type Repo struct {
	gh      *github.Client
	graphQL string
	owner   string
	name    string
	// Installation is the installation's id.
	Installation int64
}

// FullName is the repository's owner/name.
func (r *Repo) FullName() string { return r.owner + "/" + r.name }

// IsNotFound reports whether err is GitHub's 404 answer.
func IsNotFound(err error) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound
}

// Repository reads the repository itself (its clone URL, default branch…).
func (r *Repo) Repository(ctx context.Context) (*github.Repository, error) {
	repo, _, err := r.gh.Repositories.Get(ctx, r.owner, r.name)
	return repo, err
}

// User reads the account login.
func (r *Repo) User(ctx context.Context, login string) (*github.User, error) {
	u, _, err := r.gh.Users.Get(ctx, login)
	return u, err
}

// Issue reads issue (or pull request) number as an issue.
func (r *Repo) Issue(ctx context.Context, number int) (*github.Issue, error) {
	issue, _, err := r.gh.Issues.Get(ctx, r.owner, r.name, number)
	return issue, err
}

// PullRequest reads pull request number.
func (r *Repo) PullRequest(ctx context.Context, number int) (*PullRequest, error) {
	pr, _, err := r.gh.PullRequests.Get(ctx, r.owner, r.name, number)
	return pr, err
}

// NewPull is a pull request to open.
type NewPull struct {
	Title, Head, Base, Body string
	Draft                   bool
}

// CreatePull opens a pull request.
func (r *Repo) CreatePull(ctx context.Context, p NewPull) (*PullRequest, error) {
	pr, _, err := r.gh.PullRequests.Create(ctx, r.owner, r.name, &github.NewPullRequest{
		Title: github.String(p.Title), Head: github.String(p.Head), Base: github.String(p.Base),
		Body: github.String(p.Body), Draft: github.Bool(p.Draft),
	})
	return pr, err
}

// PullsFrom lists the pull requests, open or closed, whose head is branch
// of this repository.
func (r *Repo) PullsFrom(ctx context.Context, branch string) ([]*PullRequest, error) {
	prs, _, err := r.gh.PullRequests.List(ctx, r.owner, r.name, &github.PullRequestListOptions{State: "all", Head: r.owner + ":" + branch})
	return prs, err
}

// PullEdit changes a pull request; nil fields stay as they are.
type PullEdit struct {
	Title, Body, State *string
}

// EditPull changes pull request number.
func (r *Repo) EditPull(ctx context.Context, number int, e PullEdit) error {
	_, _, err := r.gh.PullRequests.Edit(ctx, r.owner, r.name, number, &github.PullRequest{Title: e.Title, Body: e.Body, State: e.State})
	return err
}

// MergePull merges pull request number if its head is still sha, and
// returns the merge commit.
func (r *Repo) MergePull(ctx context.Context, number int, sha string) (string, error) {
	res, _, err := r.gh.PullRequests.Merge(ctx, r.owner, r.name, number, "", &github.PullRequestOptions{SHA: sha})
	return res.GetSHA(), err
}

// Reviews lists the first hundred reviews of pull request number.
func (r *Repo) Reviews(ctx context.Context, number int) ([]*github.PullRequestReview, error) {
	reviews, _, err := r.gh.PullRequests.ListReviews(ctx, r.owner, r.name, number, &github.ListOptions{PerPage: 100})
	return reviews, err
}

// PullFiles lists up to limit files changed by pull request number,
// following GitHub's pages (100 files each; GitHub lists at most 3000).
func (r *Repo) PullFiles(ctx context.Context, number, limit int) ([]*CommitFile, error) {
	var out []*CommitFile
	opts := &github.ListOptions{PerPage: min(max(limit, 1), 100)}
	for len(out) < limit {
		files, resp, err := r.gh.PullRequests.ListFiles(ctx, r.owner, r.name, number, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the files of %s#%d: %w", r.FullName(), number, err)
		}
		out = append(out, files...)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out[:min(len(out), limit)], nil
}

// CheckRuns lists the first hundred check runs on ref, only those named
// name unless it is "".
func (r *Repo) CheckRuns(ctx context.Context, ref, name string) (*github.ListCheckRunsResults, error) {
	opts := &github.ListCheckRunsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	if name != "" {
		opts.CheckName = github.String(name)
	}
	runs, _, err := r.gh.Checks.ListCheckRunsForRef(ctx, r.owner, r.name, ref, opts)
	return runs, err
}

// CheckRunSpec is a check run to create or to update; empty fields are
// not sent.
type CheckRunSpec struct {
	Name, HeadSHA, ExternalID, DetailsURL string
	// Status is queued, in_progress or completed.
	Status string
	// Conclusion goes with the status completed.
	Conclusion  string
	CompletedAt time.Time
	// Title and Summary are the run's output.
	Title, Summary string
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return github.String(s)
}

func (s CheckRunSpec) output() *github.CheckRunOutput {
	return &github.CheckRunOutput{Title: github.String(s.Title), Summary: github.String(s.Summary)}
}

// CreateCheckRun creates a check run and returns its id.
func (r *Repo) CreateCheckRun(ctx context.Context, s CheckRunSpec) (int64, error) {
	run, _, err := r.gh.Checks.CreateCheckRun(ctx, r.owner, r.name, github.CreateCheckRunOptions{Name: s.Name, HeadSHA: s.HeadSHA,
		Status: optional(s.Status), Conclusion: optional(s.Conclusion), ExternalID: optional(s.ExternalID), DetailsURL: optional(s.DetailsURL),
		Output: s.output()})
	return run.GetID(), err
}

// UpdateCheckRun updates check run id.
func (r *Repo) UpdateCheckRun(ctx context.Context, id int64, s CheckRunSpec) error {
	opts := github.UpdateCheckRunOptions{Name: s.Name, Status: optional(s.Status), Conclusion: optional(s.Conclusion),
		ExternalID: optional(s.ExternalID), DetailsURL: optional(s.DetailsURL), Output: s.output()}
	if !s.CompletedAt.IsZero() {
		opts.CompletedAt = &github.Timestamp{Time: s.CompletedAt}
	}
	_, _, err := r.gh.Checks.UpdateCheckRun(ctx, r.owner, r.name, id, opts)
	return err
}

// WorkflowJobs lists the first hundred jobs of workflow run runID, each
// in its latest attempt.
func (r *Repo) WorkflowJobs(ctx context.Context, runID int64) ([]*WorkflowJob, error) {
	list, _, err := r.gh.Actions.ListWorkflowJobs(ctx, r.owner, r.name, runID, &github.ListWorkflowJobsOptions{Filter: "latest",
		ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil {
		return nil, err
	}
	return list.Jobs, nil
}

// JobLogs downloads up to limit bytes of a job's log: GitHub answers the
// job's logs URL with a redirect to a short-lived download that needs no
// token, so the download goes without one.
func (r *Repo) JobLogs(ctx context.Context, jobID, limit int64) (string, error) {
	u, _, err := r.gh.Actions.GetWorkflowJobLogs(ctx, r.owner, r.name, jobID, 3)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return "", err
	}
	return string(body), nil
}

// CreateComment writes body on the conversation of issue or pull request
// number.
func (r *Repo) CreateComment(ctx context.Context, number int, body string) (*IssueComment, error) {
	c, _, err := r.gh.Issues.CreateComment(ctx, r.owner, r.name, number, &github.IssueComment{Body: github.String(body)})
	return c, err
}

// EditComment replaces the body of comment id.
func (r *Repo) EditComment(ctx context.Context, id int64, body string) error {
	_, _, err := r.gh.Issues.EditComment(ctx, r.owner, r.name, id, &github.IssueComment{Body: github.String(body)})
	return err
}

// IssueComments lists up to limit comments of the conversation of issue
// or pull request number, oldest first.
func (r *Repo) IssueComments(ctx context.Context, number, limit int) ([]*IssueComment, error) {
	var out []*IssueComment
	err := r.eachIssueComment(ctx, number, min(max(limit, 1), 100), func(c *IssueComment) bool {
		out = append(out, c)
		return len(out) < limit
	})
	return out, err
}

// FindComment is the first comment of the conversation of number that
// match accepts, or nil; it reads GitHub's pages until one does.
func (r *Repo) FindComment(ctx context.Context, number int, match func(*IssueComment) bool) (*IssueComment, error) {
	var found *IssueComment
	err := r.eachIssueComment(ctx, number, 100, func(c *IssueComment) bool {
		if match(c) {
			found = c
		}
		return found == nil
	})
	return found, err
}

// eachIssueComment calls f on the comments of number in order, page by
// page, while it returns true.
func (r *Repo) eachIssueComment(ctx context.Context, number, perPage int, f func(*IssueComment) bool) error {
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: perPage}}
	for {
		cs, resp, err := r.gh.Issues.ListComments(ctx, r.owner, r.name, number, opts)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if !f(c) {
				return nil
			}
		}
		if resp.NextPage == 0 {
			return nil
		}
		opts.Page = resp.NextPage
	}
}

// ReviewComments lists every review comment of pull request number.
func (r *Repo) ReviewComments(ctx context.Context, number int) ([]*PullRequestComment, error) {
	var out []*PullRequestComment
	opts := &github.PullRequestListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		cs, resp, err := r.gh.PullRequests.ListComments(ctx, r.owner, r.name, number, opts)
		if err != nil {
			return nil, fmt.Errorf("listing review comments of %s#%d: %w", r.FullName(), number, err)
		}
		out = append(out, cs...)
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// ReplyToReviewComment writes body as a reply in the review thread whose
// first comment is root, on pull request number, and returns the reply.
// It uses GitHub's documented reply endpoint
// (POST /repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies),
// not go-github's CreateCommentInReplyTo: that posts {body, in_reply_to}
// to .../pulls/{n}/comments, which GitHub's description requires to carry
// commit_id and path as well. GitHub takes no reply to a reply: root must
// be the thread's first comment.
func (r *Repo) ReplyToReviewComment(ctx context.Context, number int, root int64, body string) (*PullRequestComment, error) {
	u := fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", url.PathEscape(r.owner), url.PathEscape(r.name), number, root)
	req, err := r.gh.NewRequest(http.MethodPost, u, map[string]string{"body": body})
	if err != nil {
		return nil, fmt.Errorf("replying to review comment %d: %w", root, err)
	}
	c := new(PullRequestComment)
	if _, err := r.gh.Do(ctx, req, c); err != nil {
		return nil, fmt.Errorf("replying to review comment %d: %w", root, err)
	}
	return c, nil
}

// ReactToIssue adds content (eyes, +1, …) to issue or pull request
// number and returns the reaction's id. GitHub keeps one reaction of a
// content per account, so sending it again is safe; so for the two below.
func (r *Repo) ReactToIssue(ctx context.Context, number int, content string) (int64, error) {
	re, _, err := r.gh.Reactions.CreateIssueReaction(ctx, r.owner, r.name, number, content)
	return re.GetID(), err
}

// ReactToIssueComment adds content to the conversation's comment id.
func (r *Repo) ReactToIssueComment(ctx context.Context, id int64, content string) (int64, error) {
	re, _, err := r.gh.Reactions.CreateIssueCommentReaction(ctx, r.owner, r.name, id, content)
	return re.GetID(), err
}

// ReactToReviewComment adds content to review comment id.
func (r *Repo) ReactToReviewComment(ctx context.Context, id int64, content string) (int64, error) {
	re, _, err := r.gh.Reactions.CreatePullRequestCommentReaction(ctx, r.owner, r.name, id, content)
	return re.GetID(), err
}
