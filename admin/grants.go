package admin

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/people"
)

// How long a panel session lasts.
const (
	// DefaultSessionTTL is a session's cap, counted from its sign-in, when
	// Config sets no SessionTTL: a working day.
	DefaultSessionTTL = 8 * time.Hour
	// DefaultSessionIdle ends a session unused this long when Config sets
	// no SessionIdle.
	DefaultSessionIdle = 2 * time.Hour
	// touchEvery is how stale a session's last use may be before a request
	// writes it again, so that reading pages costs no write each.
	touchEvery = time.Minute
)

// tokenMarkRounds is PBKDF2's iteration count for the admin token's
// fingerprint: tens of milliseconds, paid once per process.
const tokenMarkRounds = 100_000

// tokenMark is the fingerprint a token session keeps of the admin token:
// PBKDF2-HMAC-SHA-256 of the token, slow enough that a copy of the
// database does not let someone test guesses of the token quickly. It
// tells whether the token a session was granted with is still the one
// the service runs with, which survives a restart and not a rotation.
func tokenMark(token string) string {
	key, err := pbkdf2.Key(sha256.New, token, []byte("superagent panel session: admin token"), tokenMarkRounds, 32)
	if err != nil {
		panic("pbkdf2 refused its fixed parameters: " + err.Error())
	}
	return hex.EncodeToString(key)
}

// loginRole is the role GitHub login signs in with now: an admin when it
// is among AdminGitHubLogins, else the role of the person who holds it
// (held says whether anyone does); "" when it is neither.
func (a *Admin) loginRole(login string, held bool, personRole string) string {
	if slices.ContainsFunc(a.cfg.AdminGitHubLogins, func(l string) bool { return strings.EqualFold(l, login) }) {
		return people.RoleAdmin
	}
	if held {
		return personRole
	}
	return ""
}

// grantGone says why what granted s no longer holds, or "" while it
// does: the admin token changed, or the login now resolves to another
// person or role than it did at sign-in.
func (a *Admin) grantGone(s panelSession) string {
	switch s.Grant {
	case grantToken:
		if a.cfg.Token == "" || subtle.ConstantTimeCompare([]byte(s.Mark), []byte(a.mark())) != 1 {
			return "the admin token changed"
		}
		return ""
	case grantGitHub:
		role := a.loginRole(s.Login, s.nowPerson != 0, s.nowRole)
		switch {
		case role == "":
			return "@" + s.Login + " is no longer an admin login nor anyone's on the team"
		case s.nowPerson != s.PersonID:
			return "@" + s.Login + " now belongs to another person"
		case role != s.Role:
			return "@" + s.Login + " is now " + role
		}
		return ""
	}
	return "it predates grant checks"
}

// liveSession returns the session whose cookie id is id when it is live
// now: not revoked, within its cap and its idle limit, and what granted it
// still holds. A session whose grant no longer holds is revoked, so that
// it stays ended should the grant come back, and logged. touch records
// the use (a request does; a stream's poll does not, so an open page is
// not activity).
func (a *Admin) liveSession(ctx context.Context, id string, touch bool) (panelSession, error) {
	if id == "" {
		return panelSession{}, errNoSession
	}
	s, err := a.sessions.lookup(ctx, a.db, id)
	if err != nil {
		return panelSession{}, err
	}
	now := a.cfg.Now()
	if s.revoked || !now.Before(s.ExpiresAt) || !now.Before(s.LastSeen.Add(a.cfg.SessionIdle)) {
		return panelSession{}, errNoSession
	}
	if why := a.grantGone(s); why != "" {
		if err := a.sessions.revoke(ctx, a.db, s.IDSHA256, now); err != nil {
			return panelSession{}, err
		}
		a.cfg.Logger.Info("panel session ended", "actor", s.Actor, "grant", s.Grant, "reason", why)
		return panelSession{}, errNoSession
	}
	if touch && now.Sub(s.LastSeen) >= touchEvery {
		if err := a.sessions.touch(ctx, a.db, s.IDSHA256, now); err != nil {
			return panelSession{}, err
		}
		s.LastSeen = now
	}
	return s, nil
}

// isNoSession reports an error that only means "not signed in".
func isNoSession(err error) bool { return errors.Is(err, errNoSession) }
