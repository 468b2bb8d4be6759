package executor

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/session"
)

// execution is a Ticket's Executor state: its Session and whether it has
// confirmed the request.
type execution struct {
	TicketID  int64
	SessionID int64
	Confirmed bool
}

func (e *Executor) ensureExecution(ctx context.Context, q db.Querier, ticketID int64) error {
	now := e.cfg.Now().UTC()
	_, err := q.Exec(ctx, `INSERT INTO executions (ticket_id, created_at, updated_at) VALUES ($1, $2, $2)
ON CONFLICT (ticket_id) DO NOTHING`, ticketID, now)
	if err != nil {
		return fmt.Errorf("preparing the execution of ticket %d: %w", ticketID, err)
	}
	return nil
}

func (e *Executor) execution(ctx context.Context, q db.Querier, ticketID int64) (execution, error) {
	x := execution{TicketID: ticketID}
	var (
		sid       sql.NullInt64
		confirmed sql.NullTime
	)
	err := q.QueryRow(ctx, `SELECT session_id, confirmed_at FROM executions WHERE ticket_id = $1`, ticketID).Scan(&sid, &confirmed)
	if errors.Is(err, db.ErrNoRows) {
		return x, nil
	}
	if err != nil {
		return x, fmt.Errorf("reading the execution of ticket %d: %w", ticketID, err)
	}
	x.SessionID, x.Confirmed = sid.Int64, confirmed.Valid
	return x, nil
}

// acquire takes the Ticket's lease for holder, or reports that another
// holder has it. A holder that has it renews it.
func (e *Executor) acquire(ctx context.Context, ticketID int64, holder string) (bool, error) {
	if err := e.ensureExecution(ctx, e.deps.DB, ticketID); err != nil {
		return false, err
	}
	now := e.cfg.Now().UTC()
	n, err := e.deps.DB.Exec(ctx, `UPDATE executions SET holder = $2, lease_until = $3, updated_at = $4
WHERE ticket_id = $1 AND (holder = '' OR holder = $2 OR lease_until IS NULL OR lease_until < $4)`,
		ticketID, holder, now.Add(e.cfg.LeaseTTL), now)
	if err != nil {
		return false, fmt.Errorf("taking the lease of ticket %d: %w", ticketID, err)
	}
	return n == 1, nil
}

// renew extends the lease while holder still has it.
func (e *Executor) renew(ctx context.Context, ticketID int64, holder string) (bool, error) {
	now := e.cfg.Now().UTC()
	n, err := e.deps.DB.Exec(ctx, `UPDATE executions SET lease_until = $3 WHERE ticket_id = $1 AND holder = $2`,
		ticketID, holder, now.Add(e.cfg.LeaseTTL))
	if err != nil {
		return false, fmt.Errorf("renewing the lease of ticket %d: %w", ticketID, err)
	}
	return n == 1, nil
}

func (e *Executor) release(ctx context.Context, ticketID int64, holder string) {
	if _, err := e.deps.DB.Exec(ctx, `UPDATE executions SET holder = '', lease_until = NULL WHERE ticket_id = $1 AND holder = $2`,
		ticketID, holder); err != nil {
		e.cfg.Logger.Error("releasing an executor lease", "ticket", ticketID, "error", err)
	}
}

// session returns the Ticket's Executor Session, creating it once.
func (e *Executor) session(ctx context.Context, ticketID int64) (int64, error) {
	var sid int64
	err := e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		x, err := e.execution(ctx, tx, ticketID)
		if err != nil {
			return err
		}
		if x.SessionID != 0 {
			sid = x.SessionID
			return nil
		}
		s, err := e.sessions.Create(ctx, tx, session.RoleExecutor, ticketID)
		if err != nil {
			return err
		}
		sid = s.ID
		_, err = tx.Exec(ctx, `UPDATE executions SET session_id = $2, updated_at = $3 WHERE ticket_id = $1`, ticketID, sid, e.cfg.Now().UTC())
		if err != nil {
			return fmt.Errorf("recording the session of ticket %d: %w", ticketID, err)
		}
		return nil
	})
	return sid, err
}

func (e *Executor) setConfirmed(ctx context.Context, q db.Querier, ticketID int64) error {
	if err := e.ensureExecution(ctx, q, ticketID); err != nil {
		return err
	}
	_, err := q.Exec(ctx, `UPDATE executions SET confirmed_at = COALESCE(confirmed_at, $2), updated_at = $2 WHERE ticket_id = $1`,
		ticketID, e.cfg.Now().UTC())
	if err != nil {
		return fmt.Errorf("recording the confirmation of ticket %d: %w", ticketID, err)
	}
	return nil
}

// bump adds one to a Ticket's counter and returns the new count.
func (e *Executor) bump(ctx context.Context, q db.Querier, ticketID int64, name string) (int64, error) {
	var n int64
	err := q.QueryRow(ctx, `INSERT INTO executor_counters (ticket_id, name, count) VALUES ($1, $2, 1)
ON CONFLICT (ticket_id, name) DO UPDATE SET count = executor_counters.count + 1 RETURNING count`, ticketID, name).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting %s of ticket %d: %w", name, ticketID, err)
	}
	return n, nil
}
