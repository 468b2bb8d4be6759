package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// checkpointTools are the steps that may change the workspace's files: a
// checkpoint follows each of them.
var checkpointTools = map[string]bool{ToolRunCommand: true, ToolWriteFile: true, ToolEditFile: true, ToolGitCommit: true}

// checkpointed makes t checkpoint the Ticket's work in progress after it
// ran, before its result is recorded: a process killed after that finds
// the step's files in the checkpoint on whichever machine runs the Ticket
// next.
func (e *Executor) checkpointed(t session.Tool) session.Tool {
	if !checkpointTools[t.Name] {
		return t
	}
	handler := t.Handler
	t.Handler = func(ctx context.Context, call session.Call) (string, error) {
		out, err := handler(ctx, call)
		// A refused call changed nothing; a cancelled one (the lease was
		// lost, the process stops) leaves the checkpoint to the next holder.
		if refusal := (*session.Refusal)(nil); !errors.As(err, &refusal) && ctx.Err() == nil {
			if note := e.checkpoint(ctx, call.TicketID); note != "" && err == nil {
				out += "\n" + note
			}
		}
		return out, err
	}
	return t
}

// checkpoint pushes the Ticket's commits and working tree to its hidden
// ref when they changed since the last checkpoint. A failure is logged
// and the step goes on: the next step's checkpoint tries again. A
// checkpoint the host refuses (a secret in a file, a file too large) is
// also said to the model: the note returned goes after the step's result.
func (e *Executor) checkpoint(ctx context.Context, ticketID int64) string {
	ws, err := e.deps.Workspaces.Open(ticketID)
	if err != nil {
		return "" // no workspace, no work in it
	}
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, ticketID)
	if err != nil || t.Repo == "" || tickets.Ended(t.State) {
		return ""
	}
	// The repository's secrets join the Scrubber, whose every value the
	// checkpoint must not carry.
	e.secretEnv(ctx, t)
	cp, taken, err := ws.Checkpoint(ctx, func(ctx context.Context) (workspace.Remote, error) {
		r, err := e.wipRemote(ctx, t.Repo)
		if err != nil {
			return r, err
		}
		// Recorded before the push, so the end of the Ticket (or a sweep)
		// deletes a ref the push may have made before a crash.
		_, err = e.deps.DB.Exec(ctx, `UPDATE executions SET wip_repo = $2 WHERE ticket_id = $1 AND wip_repo <> $2`, t.ID, t.Repo)
		if err != nil {
			return r, fmt.Errorf("recording the checkpoint's repository: %w", err)
		}
		return r, nil
	}, e.deps.Scrubber)
	var leak *workspace.LeakError
	var refused *workspace.CheckpointRefusal
	switch {
	case errors.As(err, &leak):
		e.cfg.Logger.Warn("checkpoint refused: a secret in what it would push", "ticket", t.ID, "repo", t.Repo, "file", leak.Path, "kind", leak.Kind)
		return "host: " + leak.Error() + "."
	case errors.As(err, &refused):
		e.cfg.Logger.Warn("checkpoint refused", "ticket", t.ID, "repo", t.Repo, "reason", e.deps.Scrubber.Scrub(refused.Reason))
		return "host: " + e.deps.Scrubber.Scrub(refused.Error()) + "; the work stays only on this machine until it is fixed."
	case err != nil:
		e.cfg.Logger.Warn("checkpointing the work in progress", "ticket", t.ID, "repo", t.Repo,
			"error", e.deps.Scrubber.Scrub(err.Error()))
	case taken:
		e.cfg.Logger.Info("work checkpointed", "ticket", t.ID, "repo", t.Repo, "commit", cp.Commit, "head", cp.Head)
	}
	return ""
}

// restore brings the Ticket's workspace to its checkpoint when the
// workspace does not hold it yet (see workspace.Workspace.Restore); it
// reports whether it did.
func (e *Executor) restore(ctx context.Context, t tickets.Ticket, ws *workspace.Workspace) (bool, error) {
	var repo string
	err := e.deps.DB.QueryRow(ctx, `SELECT wip_repo FROM executions WHERE ticket_id = $1`, t.ID).Scan(&repo)
	if err != nil && !errors.Is(err, db.ErrNoRows) {
		return false, fmt.Errorf("reading the checkpoint of ticket %d: %w", t.ID, err)
	}
	if repo == "" {
		// No execution, or never checkpointed: nothing to bring back.
		return false, nil
	}
	r, err := e.wipRemote(ctx, repo)
	if err != nil {
		return false, fmt.Errorf("restoring the work of ticket %d: %w", t.ID, err)
	}
	res, err := ws.Restore(ctx, r, e.workBranch(t))
	if err != nil {
		return false, fmt.Errorf("restoring the work of ticket %d: %w", t.ID, err)
	}
	switch {
	case res.Applied:
		e.cfg.Logger.Info("work restored", "ticket", t.ID, "repo", repo, "commit", res.Commit, "head", res.Head)
	case res.SetAside:
		e.cfg.Logger.Info("work checkpoint set aside for the pushed branch", "ticket", t.ID, "repo", repo, "commit", res.Commit, "head", res.Head)
	}
	return res.Applied, nil
}

// wipRemote is the Ticket's repository (never a fork it works on) as git
// reaches it for the hidden ref, with a current token. The clone URL is
// read from GitHub once per repository and process.
func (e *Executor) wipRemote(ctx context.Context, repo string) (workspace.Remote, error) {
	if e.deps.GitHub == nil {
		return workspace.Remote{}, errNoGitHub
	}
	if v, ok := e.wipRemotes.Load(repo); ok {
		s, err := e.scoped(ctx, repo)
		if err != nil {
			return workspace.Remote{}, err
		}
		r := v.(workspace.Remote)
		if r.Token, err = s.Token(ctx); err != nil {
			return workspace.Remote{}, err
		}
		return r, nil
	}
	r, err := e.remote(ctx, repo)
	if err == nil {
		e.wipRemotes.Store(repo, workspace.Remote{URL: r.URL, BaseBranch: r.BaseBranch})
	}
	return r, err
}

// dropCheckpoint deletes an ended Ticket's hidden ref, if it has one, and
// then forgets it.
func (e *Executor) dropCheckpoint(ctx context.Context, ticketID int64, repo string) error {
	r, err := e.wipRemote(ctx, repo)
	if err != nil {
		return fmt.Errorf("deleting the checkpoint of ticket %d: %w", ticketID, err)
	}
	existed, err := e.deps.Workspaces.DeleteWIP(ctx, r, ticketID)
	if err != nil {
		return err // git's errors never carry the token
	}
	if _, err := e.deps.DB.Exec(ctx, `UPDATE executions SET wip_repo = '' WHERE ticket_id = $1 AND wip_repo = $2`, ticketID, repo); err != nil {
		return fmt.Errorf("forgetting the checkpoint of ticket %d: %w", ticketID, err)
	}
	if existed {
		e.cfg.Logger.Info("work checkpoint deleted", "ticket", ticketID, "repo", repo, "ref", workspace.WIPRef(ticketID))
	}
	return nil
}

// SweepCheckpoints deletes the hidden refs of Tickets that ended: those
// whose own job did not get to it (the process died, GitHub failed, or
// the main Session ended the Ticket while no Executor ran). The watchdog
// runs it; it returns how many it deleted and logs, rather than returns,
// a repository it cannot reach, so the others go on.
func (e *Executor) SweepCheckpoints(ctx context.Context) (int, error) {
	rows, err := e.deps.DB.Query(ctx, `SELECT x.ticket_id, x.wip_repo FROM executions x JOIN tickets t ON t.id = x.ticket_id
WHERE x.wip_repo <> '' AND t.state IN ($1, $2) ORDER BY x.ticket_id LIMIT 100`, tickets.TicketDone, tickets.TicketCancelled)
	if err != nil {
		return 0, fmt.Errorf("listing checkpoints of ended tickets: %w", err)
	}
	type ended struct {
		ticket int64
		repo   string
	}
	var found []ended
	for rows.Next() {
		var x ended
		if err := rows.Scan(&x.ticket, &x.repo); err != nil {
			rows.Close()
			return 0, fmt.Errorf("listing checkpoints of ended tickets: %w", err)
		}
		found = append(found, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("listing checkpoints of ended tickets: %w", err)
	}
	n := 0
	for _, x := range found {
		if err := e.dropCheckpoint(ctx, x.ticket, x.repo); err != nil {
			e.cfg.Logger.Warn("deleting the checkpoint of an ended ticket", "ticket", x.ticket, "repo", x.repo, "error", err)
			continue
		}
		n++
	}
	return n, nil
}
