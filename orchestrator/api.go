package orchestrator

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/tickets"
)

// Bounds of a Ticket asked for through the API.
const (
	MaxAPITitle = 200
	MaxAPIBody  = 20000
)

// githubLogin is the syntax of a GitHub account name.
var githubLogin = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)

// APIRequest is a Ticket asked for through POST /api/tickets: work in
// Repo for Requester, a GitHub login that must pass the same gate as a
// person mentioning the bot there.
type APIRequest struct {
	Repo      string `json:"repo"`
	Title     string `json:"title"`
	Body      string `json:"body"`
	Requester string `json:"requester"`
}

// InvalidRequestError lists every problem of an APIRequest; nothing was
// stored.
type InvalidRequestError struct{ Problems []string }

func (e *InvalidRequestError) Error() string { return strings.Join(e.Problems, "; ") }

// RefusedRequestError is the gate's refusal of an APIRequest's requester,
// in one sentence; nothing was stored.
type RefusedRequestError struct{ Reason string }

func (e *RefusedRequestError) Error() string { return e.Reason }

// OpenFromAPI opens the Ticket req asks for, on behalf of by (who called
// the API): it checks every field, then the requester's permission on
// the repository, and stores in one transaction the request as an
// addressed card of its own Thread, the explicit Ticket with its Mandate
// and the Executor's job. The Executor's replies under the request are
// kept on the Ticket's page, where the caller reads them.
func (o *Orchestrator) OpenFromAPI(ctx context.Context, req APIRequest, by string) (tickets.Ticket, error) {
	req.Repo, req.Requester = strings.TrimSpace(req.Repo), strings.TrimSpace(req.Requester)
	title := oneLine(req.Title)
	var problems []string
	switch {
	case req.Repo == "":
		problems = append(problems, "repo is required (owner/name)")
	case !repoName.MatchString(req.Repo):
		problems = append(problems, fmt.Sprintf("repo %q is not a repository name (owner/name)", req.Repo))
	}
	switch n := utf8.RuneCountInString(title); {
	case n == 0:
		problems = append(problems, "title is required")
	case n > MaxAPITitle:
		problems = append(problems, fmt.Sprintf("title is %d characters; at most %d", n, MaxAPITitle))
	}
	switch n := utf8.RuneCountInString(req.Body); {
	case strings.TrimSpace(req.Body) == "":
		problems = append(problems, "body is required: what to do")
	case n > MaxAPIBody:
		problems = append(problems, fmt.Sprintf("body is %d characters; at most %d", n, MaxAPIBody))
	}
	switch {
	case req.Requester == "":
		problems = append(problems, "requester is required (the GitHub login of the person who asks)")
	case !githubLogin.MatchString(req.Requester):
		problems = append(problems, fmt.Sprintf("requester %q is not a GitHub login", req.Requester))
	}
	var inst int64
	if req.Repo != "" && repoName.MatchString(req.Repo) {
		var err error
		if inst, err = githubapp.InstallationFor(ctx, o.deps.DB, req.Repo); err != nil {
			return tickets.Ticket{}, fmt.Errorf("checking repository %s: %w", req.Repo, err)
		}
		if inst == 0 {
			problems = append(problems, fmt.Sprintf("repo %s is unknown: the GitHub App is not installed on it", req.Repo))
		}
	}
	if len(problems) > 0 {
		return tickets.Ticket{}, &InvalidRequestError{Problems: problems}
	}
	// The permission is a network round trip: before the transaction.
	if o.deps.Permissions == nil {
		return tickets.Ticket{}, &RefusedRequestError{Reason: fmt.Sprintf("opening work in %s needs %s's GitHub permission there, which this service cannot read", req.Repo, req.Requester)}
	}
	owner, name, _ := strings.Cut(req.Repo, "/")
	level, err := o.deps.Permissions.Level(ctx, inst, owner, name, req.Requester)
	if err != nil {
		return tickets.Ticket{}, fmt.Errorf("reading %s's permission on %s: %w", req.Requester, req.Repo, err)
	}
	if !o.cfg.Gate.Allows(level) {
		o.cfg.Logger.Info("api ticket refused", "repo", req.Repo, "requester", req.Requester, "permission", level, "by", by)
		return tickets.Ticket{}, &RefusedRequestError{Reason: fmt.Sprintf("%s's permission on %s is %s; %s or higher is needed to open work there",
			req.Requester, req.Repo, level, o.cfg.Gate.need())}
	}
	var created tickets.Ticket
	err = o.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		st := o.deps.Tickets
		key := fmt.Sprintf("github:%s@api:%d", strings.ToLower(req.Repo), o.cfg.Now().UnixNano())
		c, err := st.Admit(ctx, tx, tickets.NewCard{Source: tickets.SourceGitHub, Kind: tickets.KindAPIRequest,
			Thread: tickets.Thread{Source: tickets.SourceGitHub, Key: key, Repo: req.Repo, Title: title},
			Author: tickets.Author{Login: req.Requester, Type: tickets.AuthorUser, Permission: level}, Addressed: true, AddressedWhy: "api",
			Text: title + "\n\n" + strings.TrimSpace(req.Body)}, 0)
		if err != nil {
			return err
		}
		author := c.Author
		created, err = st.CreateTicket(ctx, tx, tickets.Ticket{Title: title, Repo: req.Repo, SourceCardID: c.ID, Origin: tickets.OriginExplicit,
			Mandate: tickets.Mandate{RequestedBy: &author, Source: tickets.SourceGitHub, Repos: []string{req.Repo}, Actions: defaultActions}})
		if err != nil {
			return err
		}
		return o.place(ctx, tx, c, created, "asked through the API by "+by)
	})
	if err != nil {
		return tickets.Ticket{}, err
	}
	o.cfg.Logger.Info("ticket opened", "ticket", created.ID, "card", created.SourceCardID, "repo", created.Repo, "origin", created.Origin,
		"requester", req.Requester, "by", by, "via", "api")
	return created, nil
}
