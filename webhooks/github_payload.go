package webhooks

import (
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/google/go-github/v66/github"
)

// decodeGitHub decodes a payload of a processed event into the go-github
// type github.ParseWebHook gives for it, with only the fields the parsers
// (and githubStep, through ghEvent.Repo) read filled.
//
// go-github's types declare every field of a payload, each a pointer, so
// decoding a 15 KB payload into them allocates hundreds of objects; the
// wire types below declare only what is read. Their fields have the same
// names and Go types as go-github's (the conversions copy the pointers), so
// null, absence, duplicate keys and a wrong type read the same; a field
// nobody reads is skipped, though the whole document must still be valid
// JSON.
//
// The decoder is the JSON v2 prototype (go-json-experiment/json, the Go
// team's, already in the module graph through chromedp) with encoding/json's
// semantics (jsonv1.DefaultOptionsV1): it checks and decodes in one pass
// where encoding/json scans the document twice, which halves the cost again
// (BenchmarkParseGitHub). Its errors are its own (a SemanticError naming
// the refused value by its JSON pointer, or a SyntacticError), not
// encoding/json's: emulating those cost a quarter of the decoding. What is
// refused is the same.
func decodeGitHub(event string, body []byte) (any, error) {
	switch event {
	case "issues":
		return decodeAs(body, (*wireIssuesEvent).gh)
	case "issue_comment":
		return decodeAs(body, (*wireIssueCommentEvent).gh)
	case "pull_request":
		return decodeAs(body, (*wirePullRequestEvent).gh)
	case "pull_request_review":
		return decodeAs(body, (*wireReviewEvent).gh)
	case "pull_request_review_comment":
		return decodeAs(body, (*wireReviewCommentEvent).gh)
	case "pull_request_review_thread":
		return decodeAs(body, (*wireReviewThreadEvent).gh)
	case "check_run":
		return decodeAs(body, (*wireCheckRunEvent).gh)
	case "check_suite":
		return decodeAs(body, (*wireCheckSuiteEvent).gh)
	case "workflow_run":
		return decodeAs(body, (*wireWorkflowRunEvent).gh)
	case "push":
		return decodeAs(body, (*wirePushEvent).gh)
	case "installation":
		return decodeAs(body, (*wireInstallationEvent).gh)
	case "installation_repositories":
		return decodeAs(body, (*wireInstallationReposEvent).gh)
	}
	return nil, fmt.Errorf("unknown X-Github-Event in message: %v", event)
}

// decodeOptions are encoding/json's semantics with the decoder's own errors.
var decodeOptions = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv1.ReportErrorsWithLegacySemantics(false))

// decodeAs decodes body into a W and converts it. A JSON null gives a nil
// payload, as github.ParseWebHook does.
func decodeAs[W, G any](body []byte, gh func(*W) *G) (any, error) {
	var w *W
	if err := jsonv2.Unmarshal(body, &w, decodeOptions); err != nil {
		return nil, err
	}
	if w == nil {
		return nil, nil
	}
	return gh(w), nil
}

// ghList converts a list element by element, keeping nil and empty apart.
func ghList[W, G any](ws []*W, gh func(*W) *G) []*G {
	if ws == nil {
		return nil
	}
	out := make([]*G, len(ws))
	for i, w := range ws {
		out[i] = gh(w)
	}
	return out
}

// The shared objects. Each gh method is nil-safe, as a null or absent
// object must stay a nil pointer. The events spell out the fields they
// share (action, repository, sender, installation) rather than embed them:
// encoding/json would name the embedded type in a wrong type's error path.

type wireUser struct {
	Login *string `json:"login"`
	ID    *int64  `json:"id"`
	Type  *string `json:"type"`
}

func (w *wireUser) gh() *github.User {
	if w == nil {
		return nil
	}
	return &github.User{Login: w.Login, ID: w.ID, Type: w.Type}
}

// wireRepository serves the event's repository (githubStep records its
// description and default branch), a pull request's head and base
// repositories and an installation's lists (which read private).
type wireRepository struct {
	ID            *int64  `json:"id"`
	FullName      *string `json:"full_name"`
	DefaultBranch *string `json:"default_branch"`
	Description   *string `json:"description"`
	Private       *bool   `json:"private"`
}

func (w *wireRepository) gh() *github.Repository {
	if w == nil {
		return nil
	}
	return &github.Repository{ID: w.ID, FullName: w.FullName, DefaultBranch: w.DefaultBranch, Description: w.Description, Private: w.Private}
}

type wireInstallation struct {
	ID                  *int64    `json:"id"`
	Account             *wireUser `json:"account"`
	RepositorySelection *string   `json:"repository_selection"`
}

func (w *wireInstallation) gh() *github.Installation {
	if w == nil {
		return nil
	}
	return &github.Installation{ID: w.ID, Account: w.Account.gh(), RepositorySelection: w.RepositorySelection}
}

// issues and issue_comment

type wireIssue struct {
	Number    *int        `json:"number"`
	Title     *string     `json:"title"`
	Body      *string     `json:"body"`
	HTMLURL   *string     `json:"html_url"`
	Assignees []*wireUser `json:"assignees"`
}

func (w *wireIssue) gh() *github.Issue {
	if w == nil {
		return nil
	}
	return &github.Issue{Number: w.Number, Title: w.Title, Body: w.Body, HTMLURL: w.HTMLURL, Assignees: ghList(w.Assignees, (*wireUser).gh)}
}

type wireLabel struct {
	Name *string `json:"name"`
}

func (w *wireLabel) gh() *github.Label {
	if w == nil {
		return nil
	}
	return &github.Label{Name: w.Name}
}

type wireIssuesEvent struct {
	Action       *string           `json:"action"`
	Repo         *wireRepository   `json:"repository"`
	Sender       *wireUser         `json:"sender"`
	Installation *wireInstallation `json:"installation"`
	Issue        *wireIssue        `json:"issue"`
	Assignee     *wireUser         `json:"assignee"`
	Label        *wireLabel        `json:"label"`
}

func (w *wireIssuesEvent) gh() *github.IssuesEvent {
	return &github.IssuesEvent{
		Action: w.Action, Repo: w.Repo.gh(), Sender: w.Sender.gh(), Installation: w.Installation.gh(),
		Issue: w.Issue.gh(), Assignee: w.Assignee.gh(), Label: w.Label.gh(),
	}
}

type wireIssueComment struct {
	User    *wireUser `json:"user"`
	Body    *string   `json:"body"`
	HTMLURL *string   `json:"html_url"`
}

func (w *wireIssueComment) gh() *github.IssueComment {
	if w == nil {
		return nil
	}
	return &github.IssueComment{User: w.User.gh(), Body: w.Body, HTMLURL: w.HTMLURL}
}

type wireIssueCommentEvent struct {
	Action       *string           `json:"action"`
	Repo         *wireRepository   `json:"repository"`
	Sender       *wireUser         `json:"sender"`
	Installation *wireInstallation `json:"installation"`
	Issue        *wireIssue        `json:"issue"`
	Comment      *wireIssueComment `json:"comment"`
}

func (w *wireIssueCommentEvent) gh() *github.IssueCommentEvent {
	return &github.IssueCommentEvent{
		Action: w.Action, Repo: w.Repo.gh(), Sender: w.Sender.gh(), Installation: w.Installation.gh(),
		Issue: w.Issue.gh(), Comment: w.Comment.gh(),
	}
}

// pull requests, their reviews and review comments

type wireBranch struct {
	Ref  *string         `json:"ref"`
	Repo *wireRepository `json:"repo"`
}

func (w *wireBranch) gh() *github.PullRequestBranch {
	if w == nil {
		return nil
	}
	return &github.PullRequestBranch{Ref: w.Ref, Repo: w.Repo.gh()}
}

type wirePullRequest struct {
	Number             *int        `json:"number"`
	Title              *string     `json:"title"`
	Body               *string     `json:"body"`
	HTMLURL            *string     `json:"html_url"`
	Merged             *bool       `json:"merged"`
	Head               *wireBranch `json:"head"`
	Base               *wireBranch `json:"base"`
	Assignees          []*wireUser `json:"assignees"`
	RequestedReviewers []*wireUser `json:"requested_reviewers"`
}

func (w *wirePullRequest) gh() *github.PullRequest {
	if w == nil {
		return nil
	}
	return &github.PullRequest{
		Number: w.Number, Title: w.Title, Body: w.Body, HTMLURL: w.HTMLURL, Merged: w.Merged,
		Head: w.Head.gh(), Base: w.Base.gh(),
		Assignees: ghList(w.Assignees, (*wireUser).gh), RequestedReviewers: ghList(w.RequestedReviewers, (*wireUser).gh),
	}
}

type wirePullRequestEvent struct {
	Action            *string           `json:"action"`
	Repo              *wireRepository   `json:"repository"`
	Sender            *wireUser         `json:"sender"`
	Installation      *wireInstallation `json:"installation"`
	PullRequest       *wirePullRequest  `json:"pull_request"`
	Assignee          *wireUser         `json:"assignee"`
	RequestedReviewer *wireUser         `json:"requested_reviewer"`
}

func (w *wirePullRequestEvent) gh() *github.PullRequestEvent {
	return &github.PullRequestEvent{
		Action: w.Action, Repo: w.Repo.gh(), Sender: w.Sender.gh(), Installation: w.Installation.gh(),
		PullRequest: w.PullRequest.gh(), Assignee: w.Assignee.gh(), RequestedReviewer: w.RequestedReviewer.gh(),
	}
}

type wireReview struct {
	User    *wireUser `json:"user"`
	State   *string   `json:"state"`
	Body    *string   `json:"body"`
	HTMLURL *string   `json:"html_url"`
}

func (w *wireReview) gh() *github.PullRequestReview {
	if w == nil {
		return nil
	}
	return &github.PullRequestReview{User: w.User.gh(), State: w.State, Body: w.Body, HTMLURL: w.HTMLURL}
}

type wireReviewEvent struct {
	Action       *string           `json:"action"`
	Repo         *wireRepository   `json:"repository"`
	Sender       *wireUser         `json:"sender"`
	Installation *wireInstallation `json:"installation"`
	Review       *wireReview       `json:"review"`
	PullRequest  *wirePullRequest  `json:"pull_request"`
}

func (w *wireReviewEvent) gh() *github.PullRequestReviewEvent {
	return &github.PullRequestReviewEvent{
		Action: w.Action, Repo: w.Repo.gh(), Sender: w.Sender.gh(), Installation: w.Installation.gh(),
		Review: w.Review.gh(), PullRequest: w.PullRequest.gh(),
	}
}

type wireReviewComment struct {
	ID        *int64    `json:"id"`
	InReplyTo *int64    `json:"in_reply_to_id"`
	User      *wireUser `json:"user"`
	Body      *string   `json:"body"`
	HTMLURL   *string   `json:"html_url"`
	Path      *string   `json:"path"`
	Line      *int      `json:"line"`
}

func (w *wireReviewComment) gh() *github.PullRequestComment {
	if w == nil {
		return nil
	}
	return &github.PullRequestComment{
		ID: w.ID, InReplyTo: w.InReplyTo, User: w.User.gh(), Body: w.Body, HTMLURL: w.HTMLURL, Path: w.Path, Line: w.Line,
	}
}

type wireReviewCommentEvent struct {
	Action       *string            `json:"action"`
	Repo         *wireRepository    `json:"repository"`
	Sender       *wireUser          `json:"sender"`
	Installation *wireInstallation  `json:"installation"`
	Comment      *wireReviewComment `json:"comment"`
	PullRequest  *wirePullRequest   `json:"pull_request"`
}

func (w *wireReviewCommentEvent) gh() *github.PullRequestReviewCommentEvent {
	return &github.PullRequestReviewCommentEvent{
		Action: w.Action, Repo: w.Repo.gh(), Sender: w.Sender.gh(), Installation: w.Installation.gh(),
		Comment: w.Comment.gh(), PullRequest: w.PullRequest.gh(),
	}
}

type wireReviewThread struct {
	Comments []*wireReviewComment `json:"comments"`
}

func (w *wireReviewThread) gh() *github.PullRequestThread {
	if w == nil {
		return nil
	}
	return &github.PullRequestThread{Comments: ghList(w.Comments, (*wireReviewComment).gh)}
}

type wireReviewThreadEvent struct {
	Action       *string           `json:"action"`
	Repo         *wireRepository   `json:"repository"`
	Sender       *wireUser         `json:"sender"`
	Installation *wireInstallation `json:"installation"`
	Thread       *wireReviewThread `json:"thread"`
	PullRequest  *wirePullRequest  `json:"pull_request"`
}

func (w *wireReviewThreadEvent) gh() *github.PullRequestReviewThreadEvent {
	return &github.PullRequestReviewThreadEvent{
		Action: w.Action, Repo: w.Repo.gh(), Sender: w.Sender.gh(), Installation: w.Installation.gh(),
		Thread: w.Thread.gh(), PullRequest: w.PullRequest.gh(),
	}
}

// checks and workflow runs

type wireApp struct {
	ID   *int64  `json:"id"`
	Slug *string `json:"slug"`
	Name *string `json:"name"`
}

func (w *wireApp) gh() *github.App {
	if w == nil {
		return nil
	}
	return &github.App{ID: w.ID, Slug: w.Slug, Name: w.Name}
}

type wireCheckOutput struct {
	Title   *string `json:"title"`
	Summary *string `json:"summary"`
}

func (w *wireCheckOutput) gh() *github.CheckRunOutput {
	if w == nil {
		return nil
	}
	return &github.CheckRunOutput{Title: w.Title, Summary: w.Summary}
}

type wireCheckSuite struct {
	Conclusion           *string            `json:"conclusion"`
	App                  *wireApp           `json:"app"`
	HeadBranch           *string            `json:"head_branch"`
	LatestCheckRunsCount *int64             `json:"latest_check_runs_count"`
	PullRequests         []*wirePullRequest `json:"pull_requests"`
}

func (w *wireCheckSuite) gh() *github.CheckSuite {
	if w == nil {
		return nil
	}
	return &github.CheckSuite{
		Conclusion: w.Conclusion, App: w.App.gh(), HeadBranch: w.HeadBranch, LatestCheckRunsCount: w.LatestCheckRunsCount,
		PullRequests: ghList(w.PullRequests, (*wirePullRequest).gh),
	}
}

type wireCheckRun struct {
	Name         *string            `json:"name"`
	Conclusion   *string            `json:"conclusion"`
	HTMLURL      *string            `json:"html_url"`
	App          *wireApp           `json:"app"`
	Output       *wireCheckOutput   `json:"output"`
	CheckSuite   *wireCheckSuite    `json:"check_suite"`
	PullRequests []*wirePullRequest `json:"pull_requests"`
}

func (w *wireCheckRun) gh() *github.CheckRun {
	if w == nil {
		return nil
	}
	return &github.CheckRun{
		Name: w.Name, Conclusion: w.Conclusion, HTMLURL: w.HTMLURL, App: w.App.gh(), Output: w.Output.gh(),
		CheckSuite: w.CheckSuite.gh(), PullRequests: ghList(w.PullRequests, (*wirePullRequest).gh),
	}
}

type wireCheckRunEvent struct {
	Action       *string           `json:"action"`
	Repo         *wireRepository   `json:"repository"`
	Sender       *wireUser         `json:"sender"`
	Installation *wireInstallation `json:"installation"`
	CheckRun     *wireCheckRun     `json:"check_run"`
}

func (w *wireCheckRunEvent) gh() *github.CheckRunEvent {
	return &github.CheckRunEvent{
		Action: w.Action, Repo: w.Repo.gh(), Sender: w.Sender.gh(), Installation: w.Installation.gh(),
		CheckRun: w.CheckRun.gh(),
	}
}

type wireCheckSuiteEvent struct {
	Action       *string           `json:"action"`
	Repo         *wireRepository   `json:"repository"`
	Sender       *wireUser         `json:"sender"`
	Installation *wireInstallation `json:"installation"`
	CheckSuite   *wireCheckSuite   `json:"check_suite"`
}

func (w *wireCheckSuiteEvent) gh() *github.CheckSuiteEvent {
	return &github.CheckSuiteEvent{
		Action: w.Action, Repo: w.Repo.gh(), Sender: w.Sender.gh(), Installation: w.Installation.gh(),
		CheckSuite: w.CheckSuite.gh(),
	}
}

type wireWorkflowRun struct {
	Name         *string            `json:"name"`
	DisplayTitle *string            `json:"display_title"`
	Conclusion   *string            `json:"conclusion"`
	HeadBranch   *string            `json:"head_branch"`
	HTMLURL      *string            `json:"html_url"`
	PullRequests []*wirePullRequest `json:"pull_requests"`
}

func (w *wireWorkflowRun) gh() *github.WorkflowRun {
	if w == nil {
		return nil
	}
	return &github.WorkflowRun{
		Name: w.Name, DisplayTitle: w.DisplayTitle, Conclusion: w.Conclusion, HeadBranch: w.HeadBranch, HTMLURL: w.HTMLURL,
		PullRequests: ghList(w.PullRequests, (*wirePullRequest).gh),
	}
}

type wireWorkflowRunEvent struct {
	Action       *string           `json:"action"`
	Repo         *wireRepository   `json:"repository"`
	Sender       *wireUser         `json:"sender"`
	Installation *wireInstallation `json:"installation"`
	WorkflowRun  *wireWorkflowRun  `json:"workflow_run"`
}

func (w *wireWorkflowRunEvent) gh() *github.WorkflowRunEvent {
	return &github.WorkflowRunEvent{
		Action: w.Action, Repo: w.Repo.gh(), Sender: w.Sender.gh(), Installation: w.Installation.gh(),
		WorkflowRun: w.WorkflowRun.gh(),
	}
}

// push: its repository is go-github's PushEventRepository, which is not a
// Repository, so a push sets no ghEvent.Repo.

type wirePushRepository struct {
	FullName      *string `json:"full_name"`
	DefaultBranch *string `json:"default_branch"`
}

func (w *wirePushRepository) gh() *github.PushEventRepository {
	if w == nil {
		return nil
	}
	return &github.PushEventRepository{FullName: w.FullName, DefaultBranch: w.DefaultBranch}
}

type wireCommit struct {
	ID      *string `json:"id"`
	Message *string `json:"message"`
}

func (w *wireCommit) gh() *github.HeadCommit {
	if w == nil {
		return nil
	}
	return &github.HeadCommit{ID: w.ID, Message: w.Message}
}

type wirePushEvent struct {
	Ref          *string             `json:"ref"`
	Deleted      *bool               `json:"deleted"`
	Compare      *string             `json:"compare"`
	Commits      []*wireCommit       `json:"commits"`
	Repo         *wirePushRepository `json:"repository"`
	Sender       *wireUser           `json:"sender"`
	Installation *wireInstallation   `json:"installation"`
}

func (w *wirePushEvent) gh() *github.PushEvent {
	return &github.PushEvent{
		Ref: w.Ref, Deleted: w.Deleted, Compare: w.Compare, Commits: ghList(w.Commits, (*wireCommit).gh),
		Repo: w.Repo.gh(), Sender: w.Sender.gh(), Installation: w.Installation.gh(),
	}
}

// installations

type wireInstallationEvent struct {
	Action       *string           `json:"action"`
	Installation *wireInstallation `json:"installation"`
	Repositories []*wireRepository `json:"repositories"`
}

func (w *wireInstallationEvent) gh() *github.InstallationEvent {
	return &github.InstallationEvent{
		Action: w.Action, Installation: w.Installation.gh(), Repositories: ghList(w.Repositories, (*wireRepository).gh),
	}
}

type wireInstallationReposEvent struct {
	Action              *string           `json:"action"`
	Installation        *wireInstallation `json:"installation"`
	RepositorySelection *string           `json:"repository_selection"`
	RepositoriesAdded   []*wireRepository `json:"repositories_added"`
	RepositoriesRemoved []*wireRepository `json:"repositories_removed"`
}

func (w *wireInstallationReposEvent) gh() *github.InstallationRepositoriesEvent {
	return &github.InstallationRepositoriesEvent{
		Action: w.Action, Installation: w.Installation.gh(), RepositorySelection: w.RepositorySelection,
		RepositoriesAdded:   ghList(w.RepositoriesAdded, (*wireRepository).gh),
		RepositoriesRemoved: ghList(w.RepositoriesRemoved, (*wireRepository).gh),
	}
}
