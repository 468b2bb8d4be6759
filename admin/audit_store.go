package admin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// The actions the audit log records. Prompt saves are not among them: each
// is a version that names its actor.
const (
	actionSignIn      = "sign_in"
	actionSignOut     = "sign_out"
	actionPauseTicket = "pause_ticket"
	actionResume      = "resume_ticket"
	actionStopTicket  = "stop_ticket"
	actionContinue    = "continue_ticket"
	actionRetry       = "retry_ticket"
)

// auditEntry is one recorded change.
type auditEntry struct {
	ID        int64
	CreatedAt time.Time
	Actor     string
	Action    string
	Target    string
	Detail    string
}

// auditStore is the SQL of admin_audit.
type auditStore struct{}

func (auditStore) record(ctx context.Context, q db.Querier, e auditEntry) error {
	_, err := q.Exec(ctx, `INSERT INTO admin_audit (created_at, actor, action, target, detail) VALUES ($1, $2, $3, $4, $5)`,
		e.CreatedAt.UTC(), e.Actor, e.Action, e.Target, e.Detail)
	if err != nil {
		return fmt.Errorf("recording %s by %s: %w", e.Action, e.Actor, err)
	}
	return nil
}

// list returns the newest entries first.
func (auditStore) list(ctx context.Context, q db.Querier, limit int) ([]auditEntry, error) {
	rows, err := q.Query(ctx, `SELECT id, created_at, actor, action, target, detail FROM admin_audit
		ORDER BY id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("listing the audit log: %w", err)
	}
	defer rows.Close()
	var out []auditEntry
	for rows.Next() {
		var e auditEntry
		if err := rows.Scan(&e.ID, &e.CreatedAt, &e.Actor, &e.Action, &e.Target, &e.Detail); err != nil {
			return nil, fmt.Errorf("listing the audit log: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the audit log: %w", err)
	}
	return out, nil
}

// forTarget returns the newest entries about target with one of actions
// first.
func (auditStore) forTarget(ctx context.Context, q db.Querier, target string, actions []string, limit int) ([]auditEntry, error) {
	args := []any{target, limit}
	marks := make([]string, len(actions))
	for i, a := range actions {
		args = append(args, a)
		marks[i] = fmt.Sprintf("$%d", len(args))
	}
	rows, err := q.Query(ctx, `SELECT id, created_at, actor, action, target, detail FROM admin_audit
		WHERE target = $1 AND action IN (`+strings.Join(marks, ", ")+`) ORDER BY id DESC LIMIT $2`, args...)
	if err != nil {
		return nil, fmt.Errorf("listing the audit log of %s: %w", target, err)
	}
	defer rows.Close()
	var out []auditEntry
	for rows.Next() {
		var e auditEntry
		if err := rows.Scan(&e.ID, &e.CreatedAt, &e.Actor, &e.Action, &e.Target, &e.Detail); err != nil {
			return nil, fmt.Errorf("listing the audit log of %s: %w", target, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the audit log of %s: %w", target, err)
	}
	return out, nil
}
