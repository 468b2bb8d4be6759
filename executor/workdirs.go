package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// workedIn records a directory the Ticket's Session worked in, so that
// the AGENTS.md files on the way down to it join the prompt. The list is
// kept with the execution, so a restarted process keeps the chain.
func (e *Executor) workedIn(ctx context.Context, ticketID int64, dir string) {
	// Only a directory that resolves inside the workspace through os.Root
	// is kept. The tools call this before they check the path themselves;
	// a path they would refuse (outside, through a symlink leading out, not
	// there yet) has no AGENTS.md of the repository to offer.
	ws, err := e.deps.Workspaces.Open(ticketID)
	if err != nil {
		return
	}
	if dir, err = ws.InsideDir(dir); err != nil || dir == "." {
		return
	}
	dirs, err := e.workedDirs(ctx, ticketID)
	if err == nil && !slices.Contains(dirs, dir) {
		dirs = append(dirs[1:], dir) // without the root
		slices.Sort(dirs)
		var raw []byte
		if raw, err = json.Marshal(dirs); err == nil {
			_, err = e.deps.DB.Exec(ctx, `UPDATE executions SET work_dirs = $2 WHERE ticket_id = $1`, ticketID, string(raw))
		}
	}
	if err != nil {
		// The chain is guidance for the prompt; the tool call goes on.
		e.cfg.Logger.Error("recording a directory the executor worked in", "ticket", ticketID, "error", err)
	}
}

// workedDirs lists the root and the directories the Ticket's Sessions
// worked in, sorted, so that the prompt is the same from one request to
// the next.
func (e *Executor) workedDirs(ctx context.Context, ticketID int64) ([]string, error) {
	var raw string
	if err := e.deps.DB.QueryRow(ctx, `SELECT work_dirs FROM executions WHERE ticket_id = $1`, ticketID).Scan(&raw); err != nil {
		return nil, fmt.Errorf("reading the directories ticket %d worked in: %w", ticketID, err)
	}
	var dirs []string
	if err := json.Unmarshal([]byte(raw), &dirs); err != nil {
		return nil, fmt.Errorf("decoding the directories ticket %d worked in: %w", ticketID, err)
	}
	return append([]string{"."}, dirs...), nil
}
