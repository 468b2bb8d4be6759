package admin

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// draft is a form a save refused as stale, kept per session and page so
// that the person's work survives a reload and can be rebased.
type draft struct {
	Page         string
	BaseRevision int64
	Form         url.Values
	UpdatedAt    time.Time
}

// draftStore is the SQL of admin_drafts.
type draftStore struct{}

// put stores or replaces the draft of a page.
func (draftStore) put(ctx context.Context, q db.Querier, sessionSHA string, d draft) error {
	_, err := q.Exec(ctx, `INSERT INTO admin_drafts (session_sha256, page, base_revision, form, updated_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (session_sha256, page) DO UPDATE SET base_revision = excluded.base_revision,
			form = excluded.form, updated_at = excluded.updated_at`,
		sessionSHA, d.Page, d.BaseRevision, d.Form.Encode(), d.UpdatedAt.UTC())
	if err != nil {
		return fmt.Errorf("keeping draft of %s: %w", d.Page, err)
	}
	return nil
}

// get returns the draft of a page; ok is false when there is none.
func (draftStore) get(ctx context.Context, q db.Querier, sessionSHA, page string) (draft, bool, error) {
	d := draft{Page: page}
	var form string
	err := q.QueryRow(ctx, `SELECT base_revision, form, updated_at FROM admin_drafts
		WHERE session_sha256 = $1 AND page = $2`, sessionSHA, page).Scan(&d.BaseRevision, &form, &d.UpdatedAt)
	if errors.Is(err, db.ErrNoRows) {
		return draft{}, false, nil
	}
	if err != nil {
		return draft{}, false, fmt.Errorf("reading draft of %s: %w", page, err)
	}
	if d.Form, err = url.ParseQuery(form); err != nil {
		return draft{}, false, fmt.Errorf("reading draft of %s: %w", page, err)
	}
	return d, true, nil
}

// rebase moves a draft onto another base revision.
func (draftStore) rebase(ctx context.Context, q db.Querier, sessionSHA, page string, rev int64, now time.Time) error {
	if _, err := q.Exec(ctx, `UPDATE admin_drafts SET base_revision = $3, updated_at = $4
		WHERE session_sha256 = $1 AND page = $2`, sessionSHA, page, rev, now.UTC()); err != nil {
		return fmt.Errorf("rebasing draft of %s: %w", page, err)
	}
	return nil
}

// drop deletes the draft of a page, if any.
func (draftStore) drop(ctx context.Context, q db.Querier, sessionSHA, page string) error {
	if _, err := q.Exec(ctx, `DELETE FROM admin_drafts WHERE session_sha256 = $1 AND page = $2`, sessionSHA, page); err != nil {
		return fmt.Errorf("dropping draft of %s: %w", page, err)
	}
	return nil
}
