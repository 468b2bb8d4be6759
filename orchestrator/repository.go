package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// repoName is the shape of owner/name.
var repoName = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)

// MayWorkIn reports why the author of card c may not have work done in
// repo (owner/name) at this moment, or nil: the one place where the gate
// meets a Ticket's target repository. The App must be installed there;
// only a person's request reaches a repository; a GitHub author needs the
// gate's permission on repo, read from GitHub now; a Feishu author must
// pass the gate where they asked and FeishuRequesterMayOpen for repo. The
// model's choice of repository never widens what the person may do. A refusal is a *session.Refusal, whose
// reason the model reads; any other error is a failure to check.
func (o *Orchestrator) MayWorkIn(ctx context.Context, q db.Querier, c tickets.Card, repo string) error {
	if !repoName.MatchString(repo) {
		return session.Refuse("%q is not a repository name (owner/name)", repo)
	}
	inst, err := githubapp.InstallationFor(ctx, q, repo)
	if err != nil {
		return fmt.Errorf("checking repository %s: %w", repo, err)
	}
	if inst == 0 {
		return session.Refuse("the GitHub App is not installed on %s", repo)
	}
	if c.Author.Type != tickets.AuthorUser {
		return session.Refuse("only a person's request can have work done in %s", repo)
	}
	switch c.Source {
	case tickets.SourceGitHub:
		if o.deps.Permissions == nil {
			return session.Refuse("%s asked in %s; work in %s needs their permission there, which this service cannot read", c.Author.Login, c.Thread.Repo, repo)
		}
		owner, name, _ := strings.Cut(repo, "/")
		level, err := o.deps.Permissions.Level(ctx, inst, owner, name, c.Author.Login)
		if err != nil {
			return fmt.Errorf("reading %s's permission on %s: %w", c.Author.Login, repo, err)
		}
		if !o.cfg.Gate.Allows(level) {
			return session.Refuse("%s's permission on %s is %s; %s or higher is needed to open work there", c.Author.Login, repo, level, o.cfg.Gate.need())
		}
		return nil
	case tickets.SourceFeishu:
		if err := o.cfg.Gate.Author(c); err != nil {
			return session.Refuse("%s may not have work done in %s: %s", tickets.Actor(c), repo, err)
		}
		var r *refusal
		if err := o.FeishuRequesterMayOpen(ctx, c, repo); errors.As(err, &r) {
			return session.Refuse("%s", r.reason)
		} else if err != nil {
			return err
		}
		return nil
	}
	return session.Refuse("unknown source %q", c.Source)
}

// RequesterMayWorkIn reports why Ticket t, which has no repository yet,
// may not be given repo now, or nil. The gate is applied to the Ticket's
// requester as they asked (MayWorkIn on the source card), at this moment,
// not as it stood when the Ticket opened. An inferred Ticket has no
// requester: no person's authority can carry it into a repository. Both
// ways of setting a repository use it: the main Session's attach decision
// and the Executor's repository_set (executor.Config.MayWorkIn).
func (o *Orchestrator) RequesterMayWorkIn(ctx context.Context, t tickets.Ticket, repo string) error {
	repo = strings.TrimSpace(repo)
	if t.Mandate.RequestedBy == nil {
		return session.Refuse("ticket %d was not asked for by a person (it is %s), so no repository can be set on anyone's authority", t.ID, t.Origin)
	}
	c := tickets.Card{Source: t.Mandate.Source, Thread: tickets.Thread{Source: t.Mandate.Source}}
	if t.SourceCardID != 0 {
		src, err := o.deps.Tickets.Card(ctx, o.deps.DB, t.SourceCardID)
		if err != nil {
			return err
		}
		c = src
	}
	c.Author = *t.Mandate.RequestedBy
	return o.MayWorkIn(ctx, o.deps.DB, c, repo)
}

// asRefusal turns a session refusal into a routing refusal, which
// orchestrator_route answers as "refused: <reason>".
func asRefusal(err error) error {
	var r *session.Refusal
	if errors.As(err, &r) {
		return refuse("%s", r.Reason)
	}
	return err
}

// gateAttachRepo applies the gate to an attach decision that names a
// repository, before the decision's transaction: reading a permission
// from GitHub is a network round trip. A Ticket that already has a
// repository is left to setRepoOnAttach.
func (o *Orchestrator) gateAttachRepo(ctx context.Context, d Decision) error {
	t, err := o.deps.Tickets.Ticket(ctx, o.deps.DB, d.Ticket)
	if err != nil || t.Repo != "" {
		return nil //nolint:nilerr // attach refuses a Ticket that is not there
	}
	repo := strings.TrimSpace(d.Repo)
	if err := o.RequesterMayWorkIn(ctx, t, repo); err != nil {
		var r *session.Refusal
		if errors.As(err, &r) {
			o.cfg.Logger.Info("ticket repository refused", "ticket", t.ID, "repo", repo, "by", "main session", "card", d.Candidate, "reason", r.Reason)
		}
		return asRefusal(err)
	}
	return nil
}

// setRepoOnAttach gives the Ticket the repository an attach decision
// names, once gateAttachRepo let it through. It reports whether it set
// one; naming the repository the Ticket already works in changes nothing,
// naming another is refused.
func (o *Orchestrator) setRepoOnAttach(ctx context.Context, tx *db.Tx, t tickets.Ticket, d Decision) (bool, error) {
	repo := strings.TrimSpace(d.Repo)
	switch {
	case repo == "":
		return false, nil
	case strings.EqualFold(t.Repo, repo):
		return false, nil
	case t.Repo != "":
		return false, refuse("ticket %d already works in %s; a Ticket's repository is set once", t.ID, t.Repo)
	}
	if _, err := o.deps.Tickets.SetRepository(ctx, tx, t.ID, repo); err != nil {
		if errors.Is(err, tickets.ErrHasRepository) || errors.Is(err, tickets.ErrEnded) {
			return false, refuse("%s", err)
		}
		return false, err
	}
	if err := o.wake.ShowCard(ctx, tx, t.ID); err != nil {
		return false, err
	}
	tx.AfterCommit(func() {
		o.cfg.Logger.Info("ticket repository set", "ticket", t.ID, "repo", repo, "by", "main session", "card", d.Candidate)
	})
	return true, nil
}
