package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// ToolRepositorySet sets the repository of a Ticket that has none.
const ToolRepositorySet = "repository_set"

type repositorySetArgs struct {
	Repo    string `json:"repo" jsonschema_description:"owner/name, as the Environment's installed repositories spell it"`
	Message int64  `json:"message" jsonschema_description:"the card id of the person's message that settles which repository: their answer to your question, or the request itself"`
}

// repositorySet gives a Ticket without a repository the one a person
// named, once: the requester must pass the gate there at this moment
// (Config.MayWorkIn); then the workspace is cloned and set up, so the
// rest of the Session works in it. A refusal changes nothing and is kept
// with the call in the transcript.
func (e *Executor) repositorySet(ctx context.Context, call session.Call, a repositorySetArgs) (string, error) {
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, call.TicketID)
	if err != nil {
		return "", err
	}
	if t.Stop != nil {
		return "", held(t)
	}
	c, err := e.messageOf(ctx, call.TicketID, a.Message)
	if err != nil {
		return "", err
	}
	if c.Author.Type != tickets.AuthorUser {
		return "", session.Refuse("card %d is not a person's message; the repository is the one a person named", c.ID)
	}
	repo, err := e.installedName(ctx, strings.TrimSpace(a.Repo))
	if err != nil {
		return "", err
	}
	switch {
	case t.Repo != "" && strings.EqualFold(t.Repo, repo):
		// A retried call: the repository is set; the workspace is made
		// ready again if it is not.
		return e.workIn(ctx, t, call.SessionID)
	case t.Repo != "":
		return "", session.Refuse("this Ticket already works in %s; a Ticket's repository is set once and never changed", t.Repo)
	case e.cfg.MayWorkIn == nil:
		return "", session.Refuse("this service cannot check whether the requester may have work done in %s; report the Ticket blocked", repo)
	}
	if err := e.cfg.MayWorkIn(ctx, t, repo); err != nil {
		var r *session.Refusal
		if errors.As(err, &r) {
			e.cfg.Logger.Info("ticket repository refused", "ticket", t.ID, "session", call.SessionID, "repo", repo, "by", "executor", "card", c.ID, "reason", r.Reason)
		}
		return "", err
	}
	err = e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		if t, err = e.deps.Tickets.SetRepository(ctx, tx, t.ID, repo); err != nil {
			if errors.Is(err, tickets.ErrHasRepository) || errors.Is(err, tickets.ErrEnded) {
				return session.Refuse("%s", err)
			}
			return err
		}
		if e.deps.Feishu == nil {
			return nil
		}
		return e.deps.Wake.ShowCard(ctx, tx, t.ID)
	})
	if err != nil {
		return "", err
	}
	e.cfg.Logger.Info("ticket repository set", "ticket", t.ID, "session", call.SessionID, "repo", repo, "by", "executor", "card", c.ID)
	return e.workIn(ctx, t, call.SessionID)
}

// installedName is repo as the installation spells it, so the Ticket
// names it as GitHub does; a name that is no installed repository is
// refused here, with the ones the App is installed on nearby.
func (e *Executor) installedName(ctx context.Context, repo string) (string, error) {
	if repo == "" {
		return "", session.Refuse("name the repository (owner/name)")
	}
	found, _, err := githubapp.Repositories(ctx, e.deps.DB, repo, maxRepoFacts)
	if err != nil {
		return "", err
	}
	for _, r := range found {
		if strings.EqualFold(r.FullName, repo) {
			return r.FullName, nil
		}
	}
	return "", session.Refuse("the GitHub App is not installed on %s; the installed repositories are in the Environment section", repo)
}

// workIn prepares the workspace of a Ticket that has just been given its
// repository (clone, branch, setup) and tells the Session what it has.
func (e *Executor) workIn(ctx context.Context, t tickets.Ticket, sid int64) (string, error) {
	if _, _, err := e.prepare(ctx, t); err != nil {
		return "", err
	}
	note, err := e.runSetup(ctx, t, sid)
	if err != nil {
		return "", err
	}
	out := fmt.Sprintf("the Ticket now works in %s, the only repository of its Mandate; your workspace is a clone of it on branch %s, "+
		"and the workspace and GitHub tools work from now on.", t.Repo, e.workBranch(t))
	if note != "" {
		out += "\n" + note
	}
	return out, nil
}
