package admin

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/people"
)

// panelSession is one signed-in browser.
type panelSession struct {
	// IDSHA256 is the hex SHA-256 of the cookie's id, the row's key.
	IDSHA256  string
	Actor     string
	CSRF      string
	ExpiresAt time.Time
	// PersonID is the person who signed in with GitHub; 0 for the admin
	// token.
	PersonID int64
	// Role is people.RoleAdmin or people.RoleMember.
	Role string
}

// admin reports whether the session may change prompts, policy, people
// and settings.
func (s panelSession) admin() bool { return s.Role == people.RoleAdmin }

// errNoSession is returned for a cookie that names no live session.
var errNoSession = errors.New("no such session, or it expired or was revoked")

// sessionStore is the SQL of admin_sessions.
type sessionStore struct{}

// randomToken returns n random bytes from r, base64url-encoded.
func randomToken(r io.Reader, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func hashID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// create stores a new session and returns the cookie's id, which only the
// browser keeps.
func (sessionStore) create(ctx context.Context, q db.Querier, rnd io.Reader, who panelSession, now time.Time, ttl time.Duration) (string, panelSession, error) {
	id, err := randomToken(rnd, 32)
	if err != nil {
		return "", panelSession{}, fmt.Errorf("creating panel session: %w", err)
	}
	csrf, err := randomToken(rnd, 32)
	if err != nil {
		return "", panelSession{}, fmt.Errorf("creating panel session: %w", err)
	}
	s := panelSession{IDSHA256: hashID(id), Actor: who.Actor, CSRF: csrf, ExpiresAt: now.Add(ttl).UTC(), PersonID: who.PersonID, Role: who.Role}
	var person *int64
	if s.PersonID != 0 {
		person = &s.PersonID
	}
	_, err = q.Exec(ctx, `INSERT INTO admin_sessions (id_sha256, actor, csrf_token, created_at, expires_at, person_id, role)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, s.IDSHA256, s.Actor, s.CSRF, now.UTC(), s.ExpiresAt, person, s.Role)
	if err != nil {
		return "", panelSession{}, fmt.Errorf("creating panel session: %w", err)
	}
	return id, s, nil
}

// lookup returns the live session whose cookie id is id.
func (sessionStore) lookup(ctx context.Context, q db.Querier, id string, now time.Time) (panelSession, error) {
	s := panelSession{IDSHA256: hashID(id)}
	var revoked *time.Time
	var person *int64
	err := q.QueryRow(ctx, `SELECT actor, csrf_token, expires_at, revoked_at, person_id, role FROM admin_sessions WHERE id_sha256 = $1`,
		s.IDSHA256).Scan(&s.Actor, &s.CSRF, &s.ExpiresAt, &revoked, &person, &s.Role)
	if errors.Is(err, db.ErrNoRows) {
		return panelSession{}, errNoSession
	}
	if err != nil {
		return panelSession{}, fmt.Errorf("reading panel session: %w", err)
	}
	if revoked != nil || !now.Before(s.ExpiresAt) {
		return panelSession{}, errNoSession
	}
	if person != nil {
		s.PersonID = *person
	}
	return s, nil
}

// revoke ends a session and drops its drafts.
func (sessionStore) revoke(ctx context.Context, d *db.DB, idSHA256 string, now time.Time) error {
	return d.InTx(ctx, func(tx *db.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE admin_sessions SET revoked_at = $2 WHERE id_sha256 = $1 AND revoked_at IS NULL`,
			idSHA256, now.UTC()); err != nil {
			return fmt.Errorf("revoking panel session: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM admin_drafts WHERE session_sha256 = $1`, idSHA256); err != nil {
			return fmt.Errorf("dropping drafts of a revoked session: %w", err)
		}
		return nil
	})
}

// purge deletes sessions that expired before cutoff, with their drafts.
func (sessionStore) purge(ctx context.Context, d *db.DB, cutoff time.Time) error {
	return d.InTx(ctx, func(tx *db.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM admin_drafts WHERE session_sha256 IN
			(SELECT id_sha256 FROM admin_sessions WHERE expires_at < $1)`, cutoff.UTC()); err != nil {
			return fmt.Errorf("purging expired panel sessions: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM admin_sessions WHERE expires_at < $1`, cutoff.UTC()); err != nil {
			return fmt.Errorf("purging expired panel sessions: %w", err)
		}
		return nil
	})
}
