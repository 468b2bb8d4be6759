package executor

import (
	"context"
	"fmt"
	"slices"

	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// localTools are the tools of an Executor whose repositories are local
// checkouts (Config.Local): the workspace, git, the Report and the
// team's prompts and skills. Pull requests, reviews, GitHub reads and
// messages to Threads need GitHub or Feishu, and are not offered.
var localTools = []string{ToolRunCommand, ToolReadFile, ToolWriteFile, ToolEditFile, ToolSearchCode, ToolGitStatus, ToolGitDiff,
	ToolGitCommit, ToolGitPush, ToolReport, ToolHumanAction, ToolPromptsRead, ToolSkillLoad}

// local reports whether the Executor works on local checkouts only.
func (e *Executor) local() bool { return len(e.cfg.Local) > 0 }

// localRemote is repo's local checkout, when it is one.
func (e *Executor) localRemote(repo string) (workspace.Remote, bool) {
	r, ok := e.cfg.Local[repo]
	return r, ok
}

// onlyLocal keeps the tools a local run offers.
func onlyLocal(tools []session.Tool) []session.Tool {
	return slices.DeleteFunc(tools, func(t session.Tool) bool { return !slices.Contains(localTools, t.Name) })
}

// localNote is the Environment fact of a local run.
const localNote = "a local run (superagent run) on a checkout of this machine: there is no GitHub and no chat here, " +
	"so there are no pull requests, comments or replies. git_push pushes the Ticket's branch into that checkout, where the person " +
	"who started the run reads it. Commit and push the change, then report done (or blocked, or waiting with one human_action question)."

// StartLocal gives a Ticket of a local run (Config.Local) its request:
// its Executor Session is created with request as its first message,
// and the request counts as confirmed, since the person who typed it
// started the run. Execute then works the Ticket.
func (e *Executor) StartLocal(ctx context.Context, ticketID int64, request string) (int64, error) {
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, ticketID)
	if err != nil {
		return 0, err
	}
	if _, ok := e.localRemote(t.Repo); !ok {
		return 0, fmt.Errorf("starting ticket %d: %s is not a local checkout of this run", ticketID, t.Repo)
	}
	if err := e.ensureExecution(ctx, e.deps.DB, ticketID); err != nil {
		return 0, err
	}
	sid, err := e.session(ctx, ticketID)
	if err != nil {
		return 0, err
	}
	text := fmt.Sprintf("host: a person asked, from a terminal, for ticket %d in %s (%s):\n\n%s", t.ID, t.Repo, localNote, request)
	err = e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		if _, err := e.sessions.Append(ctx, tx, sid, text); err != nil {
			return err
		}
		return e.setConfirmed(ctx, tx, ticketID)
	})
	if err != nil {
		return 0, err
	}
	e.cfg.Logger.Info("local run started", "ticket", ticketID, "session", sid, "repo", t.Repo)
	return sid, nil
}

// LocalBranch is the branch a local run's Ticket pushes to in its
// checkout.
func (e *Executor) LocalBranch(t tickets.Ticket) string { return e.workBranch(t) }
