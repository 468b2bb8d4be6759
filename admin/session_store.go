package admin

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/people"
)

// What granted a panel session. Every request checks the grant again
// (Admin.liveSession): a session lasts only while what granted it holds.
const (
	// grantToken is a sign-in with the admin token; the session keeps a
	// slow keyed fingerprint of that token (tokenMark), never the token.
	grantToken = "token"
	// grantGitHub is a sign-in with GitHub; the session keeps the login,
	// and the person and role the sign-in found for it.
	grantGitHub = "github"
)

// panelSession is one signed-in browser.
type panelSession struct {
	// IDSHA256 is the hex SHA-256 of the cookie's id, the row's key.
	IDSHA256  string
	Actor     string
	CSRF      string
	CreatedAt time.Time
	// ExpiresAt is the session's cap, however busy it is; LastSeen is
	// when it was last used, for the idle limit.
	ExpiresAt time.Time
	LastSeen  time.Time
	// PersonID is the person who signed in with GitHub; 0 for the admin
	// token or a listed login nobody holds.
	PersonID int64
	// Role is people.RoleAdmin or people.RoleMember.
	Role string
	// Grant is grantToken or grantGitHub; Mark is the token's fingerprint
	// and Login the GitHub login.
	Grant, Mark, Login string

	// now is what the login resolves to at the lookup: the person who
	// holds it (0: nobody) and their role.
	nowPerson int64
	nowRole   string
	revoked   bool
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

// create stores a new session granted as who says (Grant, Mark or Login,
// PersonID, Role) and returns the cookie's id, which only the browser
// keeps.
func (sessionStore) create(ctx context.Context, q db.Querier, rnd io.Reader, who panelSession, now time.Time, ttl time.Duration) (string, panelSession, error) {
	id, err := randomToken(rnd, 32)
	if err != nil {
		return "", panelSession{}, fmt.Errorf("creating panel session: %w", err)
	}
	csrf, err := randomToken(rnd, 32)
	if err != nil {
		return "", panelSession{}, fmt.Errorf("creating panel session: %w", err)
	}
	now = now.UTC()
	s := who
	s.IDSHA256, s.CSRF, s.CreatedAt, s.LastSeen, s.ExpiresAt = hashID(id), csrf, now, now, now.Add(ttl)
	var person *int64
	if s.PersonID != 0 {
		person = &s.PersonID
	}
	_, err = q.Exec(ctx, `INSERT INTO admin_sessions (id_sha256, actor, csrf_token, created_at, expires_at, person_id, role,
		grant_kind, grant_mark, login, last_seen_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $4)`,
		s.IDSHA256, s.Actor, s.CSRF, now, s.ExpiresAt, person, s.Role, s.Grant, s.Mark, s.Login)
	if err != nil {
		return "", panelSession{}, fmt.Errorf("creating panel session: %w", err)
	}
	return id, s, nil
}

// lookup reads the session whose cookie id is id, with what its login
// resolves to now, in one statement. It does not judge it: see
// Admin.liveSession.
func (sessionStore) lookup(ctx context.Context, q db.Querier, id string) (panelSession, error) {
	s := panelSession{IDSHA256: hashID(id)}
	var revoked, seen sql.NullTime
	var person, nowPerson sql.NullInt64
	var nowRole sql.NullString
	err := q.QueryRow(ctx, `SELECT s.actor, s.csrf_token, s.created_at, s.expires_at, s.last_seen_at, s.revoked_at, s.person_id, s.role,
			s.grant_kind, s.grant_mark, s.login, p.id, p.role
		FROM admin_sessions s
		LEFT JOIN person_identities i ON s.login <> '' AND i.kind = $2 AND i.value = s.login
		LEFT JOIN people p ON p.id = i.person_id
		WHERE s.id_sha256 = $1`, s.IDSHA256, people.KindGitHub).
		Scan(&s.Actor, &s.CSRF, &s.CreatedAt, &s.ExpiresAt, &seen, &revoked, &person, &s.Role,
			&s.Grant, &s.Mark, &s.Login, &nowPerson, &nowRole)
	if errors.Is(err, db.ErrNoRows) {
		return panelSession{}, errNoSession
	}
	if err != nil {
		return panelSession{}, fmt.Errorf("reading panel session: %w", err)
	}
	s.revoked = revoked.Valid
	s.LastSeen = s.CreatedAt
	if seen.Valid {
		s.LastSeen = seen.Time
	}
	s.PersonID, s.nowPerson, s.nowRole = person.Int64, nowPerson.Int64, nowRole.String
	return s, nil
}

// touch records that the session was used at now.
func (sessionStore) touch(ctx context.Context, q db.Querier, idSHA256 string, now time.Time) error {
	if _, err := q.Exec(ctx, `UPDATE admin_sessions SET last_seen_at = $2 WHERE id_sha256 = $1`, idSHA256, now.UTC()); err != nil {
		return fmt.Errorf("recording a panel session's use: %w", err)
	}
	return nil
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

// purge deletes, with their drafts, the sessions past their cap at now
// and those unused since idleSince.
func (sessionStore) purge(ctx context.Context, d *db.DB, now, idleSince time.Time) error {
	const gone = `expires_at < $1 OR last_seen_at < $2 OR (last_seen_at IS NULL AND created_at < $2)`
	return d.InTx(ctx, func(tx *db.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM admin_drafts WHERE session_sha256 IN
			(SELECT id_sha256 FROM admin_sessions WHERE `+gone+`)`, now.UTC(), idleSince.UTC()); err != nil {
			return fmt.Errorf("purging expired panel sessions: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM admin_sessions WHERE `+gone, now.UTC(), idleSince.UTC()); err != nil {
			return fmt.Errorf("purging expired panel sessions: %w", err)
		}
		return nil
	})
}
