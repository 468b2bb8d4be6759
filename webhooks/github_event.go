package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/superagent-dev/superagent/tickets"
)

// githubEvents are the X-GitHub-Event values ingestion processes; others
// are acknowledged and recorded as ignored.
var githubEvents = map[string]bool{}

// githubActions lists, per event, the actions that can make something; the
// rest are dropped after reading only the action, so an old or odd payload
// of an action nobody needs cannot fail. A nil set admits every action.
var githubActions = map[string]map[string]bool{
	"issues":                      set("opened", "edited", "closed", "reopened", "assigned", "unassigned", "labeled"),
	"issue_comment":               set("created", "edited"),
	"pull_request":                set("opened", "edited", "closed", "reopened", "ready_for_review", "converted_to_draft", "assigned", "unassigned", "review_requested"),
	"pull_request_review":         set("submitted"),
	"pull_request_review_comment": set("created", "edited"),
	"pull_request_review_thread":  set("resolved", "unresolved"),
	"check_run":                   set("completed"),
	"check_suite":                 set("completed"),
	"workflow_run":                set("completed"),
	"push":                        nil,
	"installation":                set("created", "new_permissions_accepted", "unsuspend", "suspend", "deleted"),
	"installation_repositories":   set("added", "removed"),
}

func init() {
	for e := range githubActions {
		githubEvents[e] = true
	}
}

func set(items ...string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, i := range items {
		m[i] = true
	}
	return m
}

// ghEvent is what one GitHub delivery means, decided from its payload alone:
// a card to make, a change to the installation list, or a reason to drop it.
type ghEvent struct {
	// Drop, when set, says why the delivery makes nothing.
	Drop string
	// InstallationID is the installation the event came through (0 if none).
	InstallationID int64
	// Install is set for installation and installation_repositories events.
	Install *installChange
	// Card is set when the event becomes a Trigger card.
	Card *ghCard
	// Repo is the repository the payload is about, with the facts the main
	// Session lists (set whether or not the event makes a card). Only the
	// fields wireRepository declares are filled.
	Repo *github.Repository
}

// ghCard is a card before the database has had its say (branch relevance,
// the Thread's history, the author's permission).
type ghCard struct {
	tickets.NewCard
	// Owner and Name split the repository for API calls.
	Owner, Name string
	// Branch is set for pushes and check failures outside a pull request:
	// the card is kept only when the branch matters (IsDefault, or a Ticket
	// tracks it).
	Branch    string
	IsDefault bool
}

// installChange updates the stored installations and repositories.
type installChange struct {
	ID           int64
	AccountLogin string
	AccountID    int64
	AccountType  string
	Selection    string
	// State is active, suspended or deleted; empty leaves it unchanged
	// (installation_repositories).
	State   string
	Added   []repoInfo
	Removed []repoInfo
}

type repoInfo struct {
	ID       int64
	FullName string
	Private  bool
}

// failedConclusions are check conclusions that make a check_failure card.
var failedConclusions = map[string]bool{"failure": true, "timed_out": true, "startup_failure": true}

// DefaultTriggerLabel is the label that, added to an issue, asks the bot
// for work (GitHubConfig.TriggerLabel).
const DefaultTriggerLabel = "superagent"

// parseGitHub turns a GitHub payload into a ghEvent, with the default
// trigger label (parseGitHubWith).
func parseGitHub(event string, body []byte, bot string) (ghEvent, error) {
	return parseGitHubWith(event, body, bot, DefaultTriggerLabel)
}

// actionOf reads a payload's top-level "action" without decoding the rest:
// GitHub writes it first, so an action that is not processed costs a few
// bytes of reading, not the whole payload (which the full decoding that
// follows for a processed one checks anyway).
func actionOf(body []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", errors.New("payload is not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", err
		}
		if key, _ := t.(string); strings.EqualFold(key, "action") {
			var action string
			if err := dec.Decode(&action); err != nil {
				return "", fmt.Errorf("reading action: %w", err)
			}
			return action, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", nil
}

// parseGitHubWith turns a GitHub payload into a ghEvent. bot is the App's
// slug: events its bot account sent are dropped, and mentions, assignments
// and review requests of it address the bot, as does adding label to an
// issue. It never panics on any input.
func parseGitHubWith(event string, body []byte, bot, label string) (ghEvent, error) {
	return parseGitHubDecoding(decodeGitHub, event, body, bot, label)
}

// parseGitHubDecoding is parseGitHubWith with the payload decoded by
// decode, which returns what github.ParseWebHook would, at least in every
// field read here; the tests pass github.ParseWebHook itself to compare.
func parseGitHubDecoding(decode func(event string, body []byte) (any, error), event string, body []byte, bot, label string) (ghEvent, error) {
	if !githubEvents[event] {
		return ghEvent{Drop: "event " + event + " is not processed"}, nil
	}
	if actions := githubActions[event]; actions != nil {
		action, err := actionOf(body)
		if err != nil {
			return ghEvent{}, fmt.Errorf("parsing %s payload: %w", event, err)
		}
		if !actions[action] {
			return ghEvent{Drop: event + "." + action + " is not processed"}, nil
		}
	}
	payload, err := decode(event, body)
	if err != nil {
		return ghEvent{}, fmt.Errorf("parsing %s payload: %w", event, err)
	}
	if what := missingObject(payload); what != "" {
		return ghEvent{}, fmt.Errorf("%s payload has no %s", eventAction(event, payload), what)
	}
	p := ghParser{bot: strings.ToLower(bot), label: label}
	switch e := payload.(type) {
	case *github.InstallationEvent:
		return p.installation(e), nil
	case *github.InstallationRepositoriesEvent:
		return p.installationRepositories(e), nil
	}
	var ev ghEvent
	switch e := payload.(type) {
	case *github.IssuesEvent:
		ev = p.issues(e)
	case *github.IssueCommentEvent:
		ev = p.issueComment(e)
	case *github.PullRequestEvent:
		ev = p.pullRequest(e)
	case *github.PullRequestReviewEvent:
		ev = p.review(e)
	case *github.PullRequestReviewCommentEvent:
		ev = p.reviewComment(e)
	case *github.PullRequestReviewThreadEvent:
		ev = p.reviewThread(e)
	case *github.CheckRunEvent:
		ev = p.checkRun(e)
	case *github.CheckSuiteEvent:
		ev = p.checkSuite(e)
	case *github.WorkflowRunEvent:
		ev = p.workflowRun(e)
	case *github.PushEvent:
		ev = p.push(e)
	default:
		return ghEvent{Drop: "event " + event + " is not processed"}, nil
	}
	if r, ok := payload.(interface{ GetRepo() *github.Repository }); ok && r.GetRepo().GetID() != 0 && r.GetRepo().GetDefaultBranch() != "" {
		ev.Repo = r.GetRepo()
	}
	if ev.Card != nil {
		if ev.Card.Thread.Repo == "" || ev.Card.Owner == "" || ev.Card.Name == "" {
			return ghEvent{Drop: "payload names no repository"}, nil
		}
		if p.isBot(ev.Card.Author.Login) {
			return ghEvent{Drop: "sent by this App's bot"}, nil
		}
	}
	return ev, nil
}

// missingObject names the object a payload is about when it is absent or
// null: a signed payload may still be hostile or broken, and the parsers
// below read those objects' fields.
func missingObject(payload any) string {
	type object struct {
		name    string
		present bool
	}
	var need []object
	switch e := payload.(type) {
	case *github.IssuesEvent:
		need = []object{{"issue", e.Issue != nil}}
	case *github.IssueCommentEvent:
		need = []object{{"issue", e.Issue != nil}, {"comment", e.Comment != nil}}
	case *github.PullRequestEvent:
		need = []object{{"pull_request", e.PullRequest != nil}}
	case *github.PullRequestReviewEvent:
		need = []object{{"review", e.Review != nil}, {"pull_request", e.PullRequest != nil}}
	case *github.PullRequestReviewCommentEvent:
		need = []object{{"comment", e.Comment != nil}, {"pull_request", e.PullRequest != nil}}
	case *github.PullRequestReviewThreadEvent:
		need = []object{{"pull_request", e.PullRequest != nil}}
	case *github.CheckRunEvent:
		need = []object{{"check_run", e.CheckRun != nil}}
	case *github.CheckSuiteEvent:
		need = []object{{"check_suite", e.CheckSuite != nil}}
	case *github.WorkflowRunEvent:
		need = []object{{"workflow_run", e.WorkflowRun != nil}}
	}
	for _, o := range need {
		if !o.present {
			return o.name
		}
	}
	return ""
}

// eventAction is "event.action", or the event alone when it has no action.
func eventAction(event string, payload any) string {
	if a, ok := payload.(interface{ GetAction() string }); ok && a.GetAction() != "" {
		return event + "." + a.GetAction()
	}
	return event
}

type ghParser struct {
	bot   string // lower-case slug
	label string // the trigger label
}

// isBot reports whether login is this App's bot account.
func (p ghParser) isBot(login string) bool {
	return p.bot != "" && strings.EqualFold(login, p.bot+"[bot]")
}

// isBotUser reports whether u is this App's bot (as assignee or reviewer).
func (p ghParser) isBotUser(u *github.User) bool {
	l := strings.ToLower(u.GetLogin())
	return p.bot != "" && (l == p.bot+"[bot]" || l == p.bot)
}

func author(u *github.User) tickets.Author {
	a := tickets.Author{Login: u.GetLogin(), Type: tickets.AuthorUser}
	if u.GetID() != 0 {
		a.ID = strconv.FormatInt(u.GetID(), 10)
	}
	if u.GetType() == "Bot" || strings.HasSuffix(a.Login, "[bot]") {
		a.Type = tickets.AuthorBot
	}
	return a
}

func splitRepo(full string) (owner, name string) {
	owner, name, _ = strings.Cut(full, "/")
	return owner, name
}

// ThreadKey returns the key of the conversation of issue or pull request
// number in repo (owner/name).
func ThreadKey(repo string, number int) string {
	return "github:" + strings.ToLower(repo) + "#" + strconv.Itoa(number)
}

// ReviewThreadKey returns the key of a pull request review thread, named
// by its first comment's id.
func ReviewThreadKey(repo string, number int, rootCommentID int64) string {
	return ThreadKey(repo, number) + "/review-thread/" + strconv.FormatInt(rootCommentID, 10)
}

// BranchKey returns the key of a branch's Thread (pushes and check
// failures outside pull requests).
func BranchKey(repo, branch string) string {
	return "github:" + strings.ToLower(repo) + "@" + branch
}

// base fills what every repository card shares.
func (p ghParser) base(kind string, repo *github.Repository, sender *github.User, inst *github.Installation) (ghEvent, *ghCard) {
	full := repo.GetFullName()
	owner, name := splitRepo(full)
	c := &ghCard{Owner: owner, Name: name}
	c.Source, c.Kind = tickets.SourceGitHub, kind
	c.Author = author(sender)
	c.Thread = tickets.Thread{Source: tickets.SourceGitHub, Repo: full}
	return ghEvent{InstallationID: inst.GetID(), Card: c}, c
}

func (c *ghCard) onIssue(number int, title string) {
	c.Thread.Key, c.Thread.Number, c.Thread.Title = ThreadKey(c.Thread.Repo, number), number, title
}

// address marks the card addressed for why, unless it already is.
func (c *ghCard) address(why string) {
	if !c.Addressed {
		c.Addressed, c.AddressedWhy = true, why
	}
}

// finish sets the text and derives mention and references from it.
func (p ghParser) finish(c *ghCard, text string) {
	c.Text = text
	if p.bot != "" && mentions(text, p.bot) {
		c.address("mention")
	}
	c.References = append(c.References, references(text, c.Thread.Repo)...)
	c.References = dedupeRefs(c.References, c.Thread.Repo, c.Thread.Number)
}

func titleAndBody(title, body string) string {
	if body == "" {
		return title
	}
	return title + "\n\n" + body
}

func (p ghParser) issues(e *github.IssuesEvent) ghEvent {
	action := e.GetAction()
	is := e.GetIssue()
	kinds := map[string]string{
		"opened": "issue_opened", "edited": "issue_edited", "closed": "issue_closed",
		"reopened": "issue_reopened", "assigned": "assigned", "unassigned": "unassigned", "labeled": "issue_labeled",
	}
	kind, ok := kinds[action]
	if !ok {
		return ghEvent{Drop: "issues." + action + " is not processed"}
	}
	if (action == "assigned" || action == "unassigned") && !p.isBotUser(e.GetAssignee()) {
		return ghEvent{Drop: "issues." + action + " concerns someone else"}
	}
	if action == "labeled" && (p.label == "" || !strings.EqualFold(e.GetLabel().GetName(), p.label)) {
		return ghEvent{Drop: "issues.labeled with a label that is not the trigger label"}
	}
	ev, c := p.base(kind, e.GetRepo(), e.GetSender(), e.GetInstallation())
	c.onIssue(is.GetNumber(), is.GetTitle())
	c.URL = is.GetHTMLURL()
	switch action {
	case "assigned":
		c.address("assignment")
	case "labeled":
		// The one who added the label asks; the gate checks them as for a
		// mention.
		c.address("label")
	}
	if action == "opened" {
		for _, a := range is.Assignees {
			if p.isBotUser(a) {
				c.address("assignment")
			}
		}
	}
	text := ""
	switch action {
	case "opened", "edited", "assigned", "labeled":
		text = titleAndBody(is.GetTitle(), is.GetBody())
	}
	p.finish(c, text)
	return ev
}

func (p ghParser) issueComment(e *github.IssueCommentEvent) ghEvent {
	kind := map[string]string{"created": "comment", "edited": "comment_edited"}[e.GetAction()]
	if kind == "" {
		return ghEvent{Drop: "issue_comment." + e.GetAction() + " is not processed"}
	}
	is := e.GetIssue()
	ev, c := p.base(kind, e.GetRepo(), e.GetSender(), e.GetInstallation())
	c.Author = author(e.GetComment().GetUser())
	if c.Author.Login == "" {
		c.Author = author(e.GetSender())
	}
	c.onIssue(is.GetNumber(), is.GetTitle())
	c.URL = e.GetComment().GetHTMLURL()
	p.finish(c, e.GetComment().GetBody())
	return ev
}

// pullThread points the card at a pull request's conversation and records
// its head branch when the branch lives in the same repository.
func (c *ghCard) onPull(pr *github.PullRequest) {
	c.onIssue(pr.GetNumber(), pr.GetTitle())
	if head := pr.GetHead(); head.GetRepo().GetFullName() == "" || strings.EqualFold(head.GetRepo().GetFullName(), c.Thread.Repo) {
		c.Thread.HeadRef = head.GetRef()
	}
}

func (p ghParser) pullRequest(e *github.PullRequestEvent) ghEvent {
	action := e.GetAction()
	pr := e.GetPullRequest()
	kinds := map[string]string{
		"opened": "pr_opened", "edited": "pr_edited", "closed": tickets.KindPullClosed, "reopened": "pr_reopened",
		"ready_for_review": "pr_ready", "converted_to_draft": "pr_draft",
		"assigned": "assigned", "unassigned": "unassigned", "review_requested": "review_requested",
	}
	kind, ok := kinds[action]
	if !ok {
		return ghEvent{Drop: "pull_request." + action + " is not processed"}
	}
	switch action {
	case "assigned", "unassigned":
		if !p.isBotUser(e.GetAssignee()) {
			return ghEvent{Drop: "pull_request." + action + " concerns someone else"}
		}
	case "review_requested":
		if !p.isBotUser(e.GetRequestedReviewer()) {
			return ghEvent{Drop: "pull_request.review_requested concerns someone else"}
		}
	case "closed":
		if pr.GetMerged() {
			kind = tickets.KindPullMerged
		}
	}
	ev, c := p.base(kind, e.GetRepo(), e.GetSender(), e.GetInstallation())
	c.onPull(pr)
	c.URL = pr.GetHTMLURL()
	switch action {
	case "assigned":
		c.address("assignment")
	case "review_requested":
		c.address("review_request")
	case "opened":
		for _, u := range pr.Assignees {
			if p.isBotUser(u) {
				c.address("assignment")
			}
		}
		for _, u := range pr.RequestedReviewers {
			if p.isBotUser(u) {
				c.address("review_request")
			}
		}
	}
	text := ""
	switch action {
	case "opened", "edited", "assigned", "review_requested":
		text = titleAndBody(pr.GetTitle(), pr.GetBody())
	}
	p.finish(c, text)
	if action == "opened" || action == "edited" {
		// A pull request that references an issue ("fixes #12", a link)
		// concerns the Tickets working on that issue: they may be
		// duplicating it.
		for _, r := range c.References {
			if r.Number > 0 && strings.EqualFold(r.Repo, c.Thread.Repo) {
				c.Related = append(c.Related, ThreadKey(r.Repo, r.Number))
			}
		}
	}
	return ev
}

func (p ghParser) review(e *github.PullRequestReviewEvent) ghEvent {
	if e.GetAction() != "submitted" {
		return ghEvent{Drop: "pull_request_review." + e.GetAction() + " is not processed"}
	}
	r := e.GetReview()
	kind := "review"
	switch strings.ToLower(r.GetState()) {
	case "approved":
		kind = "review_approved"
	case "changes_requested":
		kind = "review_changes_requested"
	case "commented":
		if strings.TrimSpace(r.GetBody()) == "" {
			return ghEvent{Drop: "empty commented review: its comments arrive on their own"}
		}
	}
	ev, c := p.base(kind, e.GetRepo(), e.GetSender(), e.GetInstallation())
	if u := r.GetUser(); u.GetLogin() != "" {
		c.Author = author(u)
	}
	c.onPull(e.GetPullRequest())
	c.URL = r.GetHTMLURL()
	p.finish(c, r.GetBody())
	return ev
}

func (p ghParser) reviewComment(e *github.PullRequestReviewCommentEvent) ghEvent {
	kind := map[string]string{"created": "review_comment", "edited": "review_comment_edited"}[e.GetAction()]
	if kind == "" {
		return ghEvent{Drop: "pull_request_review_comment." + e.GetAction() + " is not processed"}
	}
	cm := e.GetComment()
	pr := e.GetPullRequest()
	ev, c := p.base(kind, e.GetRepo(), e.GetSender(), e.GetInstallation())
	if u := cm.GetUser(); u.GetLogin() != "" {
		c.Author = author(u)
	}
	c.onPull(pr)
	root := cm.GetInReplyTo()
	if root == 0 {
		root = cm.GetID()
	}
	c.Thread.Key = ReviewThreadKey(c.Thread.Repo, pr.GetNumber(), root)
	c.Thread.HeadRef = "" // the pull request's own Thread tracks the branch
	c.URL = cm.GetHTMLURL()
	if path := cm.GetPath(); path != "" {
		ref := path
		if line := cm.GetLine(); line > 0 {
			ref += ":" + strconv.Itoa(line)
		}
		c.References = append(c.References, tickets.Reference{Ref: ref})
	}
	p.finish(c, cm.GetBody())
	return ev
}

func (p ghParser) reviewThread(e *github.PullRequestReviewThreadEvent) ghEvent {
	kind := map[string]string{"resolved": "review_thread_resolved", "unresolved": "review_thread_unresolved"}[e.GetAction()]
	if kind == "" {
		return ghEvent{Drop: "pull_request_review_thread." + e.GetAction() + " is not processed"}
	}
	th := e.GetThread()
	if th == nil || len(th.Comments) == 0 || th.Comments[0].GetID() == 0 {
		return ghEvent{Drop: "review thread without comments"}
	}
	pr := e.GetPullRequest()
	ev, c := p.base(kind, e.GetRepo(), e.GetSender(), e.GetInstallation())
	c.onPull(pr)
	root := th.Comments[0].GetInReplyTo()
	if root == 0 {
		root = th.Comments[0].GetID()
	}
	c.Thread.Key = ReviewThreadKey(c.Thread.Repo, pr.GetNumber(), root)
	c.Thread.HeadRef = ""
	c.URL = th.Comments[0].GetHTMLURL()
	p.finish(c, "")
	return ev
}

// checkFailure builds a check_failure card on the first pull request's
// Thread, or on the branch's Thread when there is none.
//
// Its author is the CI that reported the failure, not the event's sender:
// the sender of a workflow run is whoever pushed, possibly this App's bot,
// and a failure on the bot's own pull request must not be dropped as the
// bot talking to itself.
func (p ghParser) checkFailure(repo *github.Repository, app *github.App, inst *github.Installation,
	prs []*github.PullRequest, branch, url, text string) ghEvent {
	ev, c := p.base("check_failure", repo, nil, inst)
	c.Author = tickets.Author{Login: app.GetSlug(), Type: tickets.AuthorBot}
	if c.Author.Login == "" {
		c.Author.Login = app.GetName()
	}
	if app.GetID() != 0 {
		c.Author.ID = strconv.FormatInt(app.GetID(), 10)
	}
	c.URL = url
	sameRepo := func(r *github.Repository) bool {
		if r.GetID() != 0 && repo.GetID() != 0 {
			return r.GetID() == repo.GetID()
		}
		return strings.EqualFold(r.GetFullName(), c.Thread.Repo)
	}
	for _, pr := range prs {
		// The list can name pull requests of other repositories that share
		// the commit; only this repository's belong to its Threads.
		if !sameRepo(pr.GetBase().GetRepo()) {
			continue
		}
		if c.Thread.Key == "" {
			c.onIssue(pr.GetNumber(), "")
			if sameRepo(pr.GetHead().GetRepo()) {
				c.Thread.HeadRef = pr.GetHead().GetRef()
			}
		} else {
			c.References = append(c.References, tickets.Reference{Repo: c.Thread.Repo, Number: pr.GetNumber()})
		}
	}
	if c.Thread.Key == "" {
		if branch == "" {
			return ghEvent{Drop: "check failure on no branch or pull request"}
		}
		c.Thread.Key = BranchKey(c.Thread.Repo, branch)
		c.Branch = branch
		c.IsDefault = branch == repo.GetDefaultBranch()
	}
	p.finish(c, text)
	return ev
}

func (p ghParser) checkRun(e *github.CheckRunEvent) ghEvent {
	run := e.GetCheckRun()
	if e.GetAction() != "completed" || !failedConclusions[run.GetConclusion()] {
		return ghEvent{Drop: "check_run." + e.GetAction() + " (" + run.GetConclusion() + ") is not a failure"}
	}
	if run.GetApp().GetSlug() == "github-actions" {
		return ghEvent{Drop: "GitHub Actions check runs are reported by workflow_run"}
	}
	text := run.GetName() + ": " + run.GetConclusion()
	if t := run.GetOutput().GetTitle(); t != "" {
		text += "\n" + t
	}
	if s := run.GetOutput().GetSummary(); s != "" {
		text += "\n" + s
	}
	return p.checkFailure(e.GetRepo(), run.GetApp(), e.GetInstallation(), run.PullRequests,
		run.GetCheckSuite().GetHeadBranch(), run.GetHTMLURL(), text)
}

func (p ghParser) checkSuite(e *github.CheckSuiteEvent) ghEvent {
	s := e.GetCheckSuite()
	if e.GetAction() != "completed" || !failedConclusions[s.GetConclusion()] {
		return ghEvent{Drop: "check_suite." + e.GetAction() + " (" + s.GetConclusion() + ") is not a failure"}
	}
	if s.GetApp().GetSlug() == "github-actions" || s.GetLatestCheckRunsCount() > 0 {
		return ghEvent{Drop: "check suite failure is reported by its check runs or workflow run"}
	}
	text := s.GetApp().GetName() + ": " + s.GetConclusion()
	return p.checkFailure(e.GetRepo(), s.GetApp(), e.GetInstallation(), s.PullRequests, s.GetHeadBranch(), "", text)
}

func (p ghParser) workflowRun(e *github.WorkflowRunEvent) ghEvent {
	run := e.GetWorkflowRun()
	if e.GetAction() != "completed" || !failedConclusions[run.GetConclusion()] {
		return ghEvent{Drop: "workflow_run." + e.GetAction() + " (" + run.GetConclusion() + ") is not a failure"}
	}
	text := run.GetName() + ": " + run.GetConclusion()
	if t := run.GetDisplayTitle(); t != "" {
		text += "\n" + t
	}
	actions := &github.App{Slug: github.String("github-actions"), Name: github.String("GitHub Actions")}
	return p.checkFailure(e.GetRepo(), actions, e.GetInstallation(), run.PullRequests, run.GetHeadBranch(), run.GetHTMLURL(), text)
}

func (p ghParser) push(e *github.PushEvent) ghEvent {
	branch, ok := strings.CutPrefix(e.GetRef(), "refs/heads/")
	if !ok {
		return ghEvent{Drop: "push to " + e.GetRef() + " is not to a branch"}
	}
	if e.GetDeleted() {
		return ghEvent{Drop: "push deleted branch " + branch}
	}
	repo := e.GetRepo()
	full := repo.GetFullName()
	owner, name := splitRepo(full)
	c := &ghCard{Owner: owner, Name: name, Branch: branch, IsDefault: branch == repo.GetDefaultBranch()}
	c.Source, c.Kind = tickets.SourceGitHub, "push"
	c.Author = author(e.GetSender())
	c.Thread = tickets.Thread{Source: tickets.SourceGitHub, Repo: full, Key: BranchKey(full, branch)}
	c.URL = e.GetCompare()
	var b strings.Builder
	fmt.Fprintf(&b, "%d commit(s) to %s", len(e.Commits), branch)
	for i, cm := range e.Commits {
		if i == 20 {
			fmt.Fprintf(&b, "\n… %d more", len(e.Commits)-i)
			break
		}
		sha := cm.GetID()
		if len(sha) > 7 {
			sha = sha[:7]
		}
		msg, _, _ := strings.Cut(cm.GetMessage(), "\n")
		fmt.Fprintf(&b, "\n%s %s", sha, msg)
	}
	p.finish(c, b.String())
	return ghEvent{InstallationID: e.GetInstallation().GetID(), Card: c}
}

func (p ghParser) installation(e *github.InstallationEvent) ghEvent {
	in := e.GetInstallation()
	if in.GetID() == 0 {
		return ghEvent{Drop: "installation event without an installation"}
	}
	state := map[string]string{
		"created": "active", "new_permissions_accepted": "active", "unsuspend": "active",
		"suspend": "suspended", "deleted": "deleted",
	}[e.GetAction()]
	if state == "" {
		return ghEvent{Drop: "installation." + e.GetAction() + " is not processed"}
	}
	ch := &installChange{
		ID: in.GetID(), AccountLogin: in.GetAccount().GetLogin(), AccountID: in.GetAccount().GetID(),
		AccountType: in.GetAccount().GetType(), Selection: in.GetRepositorySelection(), State: state,
	}
	for _, r := range e.Repositories {
		info := repoInfo{ID: r.GetID(), FullName: r.GetFullName(), Private: r.GetPrivate()}
		if state == "deleted" {
			ch.Removed = append(ch.Removed, info)
		} else {
			ch.Added = append(ch.Added, info)
		}
	}
	return ghEvent{InstallationID: in.GetID(), Install: ch}
}

func (p ghParser) installationRepositories(e *github.InstallationRepositoriesEvent) ghEvent {
	in := e.GetInstallation()
	if in.GetID() == 0 {
		return ghEvent{Drop: "installation_repositories event without an installation"}
	}
	ch := &installChange{
		ID: in.GetID(), AccountLogin: in.GetAccount().GetLogin(), AccountID: in.GetAccount().GetID(),
		AccountType: in.GetAccount().GetType(), Selection: e.GetRepositorySelection(),
	}
	for _, r := range e.RepositoriesAdded {
		ch.Added = append(ch.Added, repoInfo{ID: r.GetID(), FullName: r.GetFullName(), Private: r.GetPrivate()})
	}
	for _, r := range e.RepositoriesRemoved {
		ch.Removed = append(ch.Removed, repoInfo{ID: r.GetID(), FullName: r.GetFullName(), Private: r.GetPrivate()})
	}
	return ghEvent{InstallationID: in.GetID(), Install: ch}
}
