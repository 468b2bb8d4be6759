package admin

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/people"
)

// CookieName is the panel's session cookie. Its path is "/" so that the
// JSON API under /api accepts it too.
const CookieName = "superagent_session"

// CSRFHeader carries the session's CSRF token on scripted requests: every
// non-read /api request authenticated by the cookie, and the panel's own
// fetches. Forms send it as the field "csrf".
const CSRFHeader = "X-CSRF-Token"

// csrfField is the name of the hidden form field with the CSRF token.
const csrfField = "csrf"

// TokenActor is the name the activity log records for changes made with
// the admin token, in the panel or on /api: nobody names themselves.
const TokenActor = "admin token"

type sessionKey struct{}

// currentSession is the signed-in session of a request that passed
// requireSession.
func currentSession(ctx context.Context) panelSession {
	s, _ := ctx.Value(sessionKey{}).(panelSession)
	return s
}

// CookieAuthenticator recognises /api requests made with the panel's
// session cookie. A request that could change something (any method but
// GET, HEAD and OPTIONS) must also carry the session's CSRF token in the
// X-CSRF-Token header, so that a cross-site form cannot use the cookie.
type CookieAuthenticator struct {
	a *Admin
}

var _ httpserver.Authenticator = (*CookieAuthenticator)(nil)

// Authenticate returns the session's person (or "admin token") for a live
// session. A member's session reads, and steers Tickets; it does not
// authenticate any other change.
func (c *CookieAuthenticator) Authenticate(r *http.Request) (string, bool) {
	s, ok := c.a.sessionOf(r)
	if !ok {
		return "", false
	}
	if !safeMethod(r.Method) && !tokensEqual(r.Header.Get(CSRFHeader), s.CSRF) {
		return "", false
	}
	if !safeMethod(r.Method) && !s.admin() && !steering(r.URL.Path) {
		return "", false
	}
	return s.Actor, true
}

// steering reports whether path is a Ticket control a member may use:
// pause, resume, stop, continue or retry a Ticket, or sign out.
func steering(path string) bool {
	if path == "/admin/signout" {
		return true
	}
	for _, prefix := range []string{"/admin/tickets/", "/api/tickets/"} {
		if rest, ok := strings.CutPrefix(path, prefix); ok && rest != "" {
			return true
		}
	}
	return false
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func tokensEqual(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// sessionOf returns the live session named by the request's cookie (see
// liveSession), recording its use.
func (a *Admin) sessionOf(r *http.Request) (panelSession, bool) {
	s, err := a.liveSession(r.Context(), cookieID(r), true)
	if err != nil {
		if !isNoSession(err) {
			a.cfg.Logger.Error("reading panel session", "error", err)
		}
		return panelSession{}, false
	}
	return s, true
}

// cookieID is the session id the request's cookie carries, or "".
func cookieID(r *http.Request) string {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return ""
	}
	return c.Value
}

// requireSession lets signed-in requests through with their session and
// actor in the context. Others are sent to sign in (pages) or refused. A
// POST must carry the session's CSRF token as a form field or header.
func (a *Admin) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok := a.sessionOf(r)
		if !ok {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/admin/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			a.handle(func(http.ResponseWriter, *http.Request) error {
				return httpserver.Errorf(http.StatusUnauthorized, "Your session has ended. Sign in again; nothing was changed.")
			})(w, r)
			return
		}
		ctx := context.WithValue(r.Context(), sessionKey{}, s)
		ctx = httpserver.WithActor(ctx, s.Actor)
		r = r.WithContext(ctx)
		if !safeMethod(r.Method) && !strings.HasPrefix(r.URL.Path, "/admin/jobs/") {
			token := r.Header.Get(CSRFHeader)
			if token == "" {
				token = r.PostFormValue(csrfField)
			}
			if !tokensEqual(token, s.CSRF) {
				a.handle(func(http.ResponseWriter, *http.Request) error {
					return httpserver.Errorf(http.StatusForbidden, "This form is out of date or did not come from the panel (its security token does not match). Reload the page and try again; nothing was changed.")
				})(w, r)
				return
			}
		}
		if !s.admin() && !safeMethod(r.Method) && !steering(r.URL.Path) {
			a.handle(func(http.ResponseWriter, *http.Request) error {
				return httpserver.Errorf(http.StatusForbidden, "Only an admin can change this; members see the panel and steer Tickets. Nothing was changed.")
			})(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// signInData is the sign-in page.
type signInData struct {
	Next  string
	Error string
	Ended bool
	// GitHub shows the "Sign in with GitHub" button.
	GitHub bool
}

func (a *Admin) getSignIn(w http.ResponseWriter, r *http.Request) error {
	if _, ok := a.sessionOf(r); ok {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return nil
	}
	return a.render(w, r, http.StatusOK, "signin.html", pageData{
		Title: "Sign in",
		Data: signInData{Next: safeNext(r.URL.Query().Get("next")), Ended: r.URL.Query().Get("signed_out") != "",
			GitHub: a.cfg.OAuth.Enabled()},
	})
}

func (a *Admin) postSignIn(w http.ResponseWriter, r *http.Request) error {
	next := safeNext(r.PostFormValue("next"))
	token := r.PostFormValue("token")
	now := a.cfg.Now()
	// The token is checked before the limit: the right one always signs
	// in, and only wrong ones are counted or refused.
	if a.cfg.Token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(a.cfg.Token)) != 1 {
		if ok, wait := a.limit.Fail(httpserver.ClientAddress(r), now); !ok {
			httpserver.SetRetryAfter(w, wait)
			return a.render(w, r, http.StatusTooManyRequests, "signin.html", pageData{
				Title: "Sign in",
				Data: signInData{Next: next, GitHub: a.cfg.OAuth.Enabled(), Error: fmt.Sprintf(
					"Too many wrong tokens from your address. Wait %s and try again.", minutesText(wait))},
			})
		}
		return a.render(w, r, http.StatusUnauthorized, "signin.html", pageData{
			Title: "Sign in",
			Data:  signInData{Next: next, GitHub: a.cfg.OAuth.Enabled(), Error: "That is not the admin token."},
		})
	}
	return a.startSession(w, r, panelSession{Actor: TokenActor, Role: people.RoleAdmin, Grant: grantToken, Mark: a.mark()}, "admin token", next)
}

// startSession signs who in: a new session, its audit entry (how names
// the way they signed in) and the cookie, then on to next.
func (a *Admin) startSession(w http.ResponseWriter, r *http.Request, who panelSession, how, next string) error {
	now := a.cfg.Now()
	// Expired sessions are few; dropping them here needs no background job.
	if err := a.sessions.purge(r.Context(), a.db, now, now.Add(-a.cfg.SessionIdle)); err != nil {
		return err
	}
	id, s, err := a.sessions.create(r.Context(), a.db, a.cfg.Rand, who, now, a.cfg.SessionTTL)
	if err != nil {
		return err
	}
	if err := a.audit.record(r.Context(), a.db, auditEntry{CreatedAt: now, Actor: who.Actor, Action: actionSignIn, Detail: how + ", " + who.Role}); err != nil {
		return err
	}
	a.cfg.Logger.Info("panel sign-in", "actor", who.Actor, "role", who.Role, "how", how)
	http.SetCookie(w, &http.Cookie{
		Name:     CookieName,
		Value:    id,
		Path:     "/",
		Expires:  s.ExpiresAt,
		MaxAge:   int(a.cfg.SessionTTL.Seconds()),
		HttpOnly: true,
		Secure:   a.cfg.SecureCookie || r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

func (a *Admin) postSignOut(w http.ResponseWriter, r *http.Request) error {
	s := currentSession(r.Context())
	now := a.cfg.Now()
	if err := a.sessions.revoke(r.Context(), a.db, s.IDSHA256, now); err != nil {
		return err
	}
	if err := a.audit.record(r.Context(), a.db, auditEntry{CreatedAt: now, Actor: s.Actor, Action: actionSignOut}); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: a.cfg.SecureCookie || r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, "/admin/signin?signed_out=1", http.StatusSeeOther)
	return nil
}

// minutesText says how long wait is, in words, rounded up to a minute.
func minutesText(wait time.Duration) string {
	if m := int((wait + time.Minute - 1) / time.Minute); m > 1 {
		return fmt.Sprintf("%d minutes", m)
	}
	return "a minute"
}

// safeNext keeps a post-sign-in redirect inside the panel.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/admin/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/admin/"
	}
	return next
}
