package admin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/people"
)

// The GitHub App's user authorization serves two purposes: signing in to
// the panel, and a Feishu user proving their GitHub login. Each starts
// here with a signed state that names its purpose, expires after
// oauthTTL, and is bound to the browser that started it by a nonce
// cookie: a state handed to someone else's browser does nothing there.
//
// A Feishu user's link begins with Feishu's own sign-in: the link the bot
// sent them names their open_id, and only a browser signed in to Feishu as
// that open_id goes on to GitHub. Someone else who gets the link cannot
// lend the person their GitHub permission.

const (
	// oauthCookie holds the nonce of a flow in progress, for the Feishu
	// and GitHub callbacks under /oauth/. It is SameSite Lax: the redirect
	// back is a cross-site top-level navigation.
	oauthCookie = "superagent_oauth"
	oauthPath   = "/oauth/"
	oauthTTL    = 10 * time.Minute
	// LinkOfferTTL is how long a link the bot offers a Feishu user works.
	LinkOfferTTL = 24 * time.Hour

	purposeSignIn = "signin"
	purposeLink   = "link"
	purposeOffer  = "link-offer"
	// purposeFeishu is the Feishu sign-in that proves a link's person.
	purposeFeishu = "link-feishu"

	actionLinkGitHub = "person_link_github"
)

// LinkOfferURL is the link the bot offers the Feishu user openID to prove
// their GitHub login: base/oauth/github/link with a signed token that
// names them and lasts LinkOfferTTL. "" when base or oauth is missing.
func LinkOfferURL(base string, oauth *people.OAuth, openID string, now time.Time) string {
	if base == "" || !oauth.Enabled() || openID == "" {
		return ""
	}
	tok := people.NewSigner(oauth.ClientSecret).Sign(people.State{Purpose: purposeOffer, OpenID: openID, Expires: now.Add(LinkOfferTTL).Unix()})
	return strings.TrimRight(base, "/") + "/oauth/github/link?t=" + tok
}

func (a *Admin) oauthReady() error {
	if !a.cfg.OAuth.Enabled() || a.cfg.PublicURL == "" || a.deps.People == nil {
		return httpserver.Errorf(http.StatusNotFound, "Signing in with GitHub is not set up: it needs SUPERAGENT_GITHUB_CLIENT_ID, SUPERAGENT_GITHUB_CLIENT_SECRET and SUPERAGENT_PUBLIC_URL.")
	}
	return nil
}

func (a *Admin) signer() *people.Signer { return people.NewSigner(a.cfg.OAuth.ClientSecret) }

func (a *Admin) callbackURL() string {
	return strings.TrimRight(a.cfg.PublicURL, "/") + "/oauth/github/callback"
}

func (a *Admin) feishuCallbackURL() string {
	return strings.TrimRight(a.cfg.PublicURL, "/") + "/oauth/feishu/callback"
}

// linkReady says whether a Feishu user can link their GitHub login here:
// GitHub's sign-in and Feishu's.
func (a *Admin) linkReady() error {
	if err := a.oauthReady(); err != nil {
		return err
	}
	if a.deps.FeishuSignIn == nil {
		return httpserver.Errorf(http.StatusNotFound, "Linking a GitHub account needs the Feishu app (SUPERAGENT_FEISHU_APP_ID and SUPERAGENT_FEISHU_APP_SECRET).")
	}
	return nil
}

// setNonce starts a flow in this browser: a fresh nonce in the cookie,
// whose hash the flow's state carries.
func (a *Admin) setNonce(w http.ResponseWriter, r *http.Request, st *people.State) error {
	nonce, err := randomToken(a.cfg.Rand, 24)
	if err != nil {
		return err
	}
	st.Nonce, st.Expires = nonceHash(nonce), a.cfg.Now().Add(oauthTTL).Unix()
	http.SetCookie(w, &http.Cookie{Name: oauthCookie, Value: nonce, Path: oauthPath, MaxAge: int(oauthTTL.Seconds()),
		HttpOnly: true, Secure: a.cfg.SecureCookie || r.TLS != nil, SameSite: http.SameSiteLaxMode})
	return nil
}

// checkNonce reports whether the browser holds the nonce st was started
// with, and drops it: a callback is used once.
func (a *Admin) checkNonce(w http.ResponseWriter, r *http.Request, st people.State) bool {
	c, err := r.Cookie(oauthCookie)
	if err != nil || !tokensEqual(nonceHash(c.Value), st.Nonce) {
		return false
	}
	http.SetCookie(w, &http.Cookie{Name: oauthCookie, Value: "", Path: oauthPath, MaxAge: -1, HttpOnly: true,
		Secure: a.cfg.SecureCookie || r.TLS != nil, SameSite: http.SameSiteLaxMode})
	return true
}

func nonceHash(nonce string) string {
	sum := sha256.Sum256([]byte(nonce))
	return hex.EncodeToString(sum[:])
}

// toGitHub starts the web flow for st: a fresh nonce in a cookie, its
// hash in the signed state, and the browser sent to GitHub.
func (a *Admin) toGitHub(w http.ResponseWriter, r *http.Request, st people.State) error {
	if err := a.setNonce(w, r, &st); err != nil {
		return err
	}
	http.Redirect(w, r, a.cfg.OAuth.AuthorizeURL(a.signer().Sign(st), a.callbackURL()), http.StatusSeeOther)
	return nil
}

// getSignInGitHub sends the browser to GitHub to sign in.
func (a *Admin) getSignInGitHub(w http.ResponseWriter, r *http.Request) error {
	if err := a.oauthReady(); err != nil {
		return err
	}
	return a.toGitHub(w, r, people.State{Purpose: purposeSignIn, Next: safeNext(r.URL.Query().Get("next"))})
}

// linkData is the page that asks a Feishu user to confirm the link.
type linkData struct {
	Token, Name, Done, Login string
}

// getLink shows whom the offered link is for before anything happens, and
// that the person must sign in to Feishu as them.
func (a *Admin) getLink(w http.ResponseWriter, r *http.Request) error {
	if err := a.linkReady(); err != nil {
		return err
	}
	tok := r.URL.Query().Get("t")
	st, err := a.signer().Check(tok, purposeOffer, a.cfg.Now())
	if err != nil {
		return httpserver.Errorf(http.StatusBadRequest, "This link is not valid or has expired. Ask the bot again for a new one.")
	}
	name := st.OpenID
	if p, ok, err := a.deps.People.By(r.Context(), a.db, people.KindFeishuOpenID, st.OpenID); err != nil {
		return err
	} else if ok {
		name = p.Name
	}
	return a.render(w, r, http.StatusOK, "link.html", pageData{Title: "Link your GitHub account", Data: linkData{Token: tok, Name: name}})
}

// postLink starts the link for the Feishu user the token names with
// Feishu's sign-in, which must show that same user.
func (a *Admin) postLink(w http.ResponseWriter, r *http.Request) error {
	if err := a.linkReady(); err != nil {
		return err
	}
	offer, err := a.signer().Check(r.PostFormValue("t"), purposeOffer, a.cfg.Now())
	if err != nil {
		return httpserver.Errorf(http.StatusBadRequest, "This link is not valid or has expired. Ask the bot again for a new one.")
	}
	st := people.State{Purpose: purposeFeishu, OpenID: offer.OpenID}
	if err := a.setNonce(w, r, &st); err != nil {
		return err
	}
	http.Redirect(w, r, a.deps.FeishuSignIn.SignInURL(a.feishuCallbackURL(), a.signer().Sign(st)), http.StatusSeeOther)
	return nil
}

// getFeishuCallback finishes Feishu's sign-in: the state must be genuine,
// unexpired and started in this browser, and the person signed in to
// Feishu must be the one the link was for. Then GitHub's authorization
// follows, for that person.
func (a *Admin) getFeishuCallback(w http.ResponseWriter, r *http.Request) error {
	if err := a.linkReady(); err != nil {
		return err
	}
	q := r.URL.Query()
	if q.Get("error") != "" {
		return httpserver.Errorf(http.StatusForbidden, "Feishu did not sign you in (%s); nothing was changed.", strings.Join(strings.Fields(q.Get("error")), " "))
	}
	st, err := a.signer().Check(q.Get("state"), purposeFeishu, a.cfg.Now())
	if err != nil || !a.checkNonce(w, r, st) {
		return httpserver.Errorf(http.StatusBadRequest, "This sign-in did not start in this browser or took too long. Open the link the bot sent you again; nothing was changed.")
	}
	who, err := a.deps.FeishuSignIn.SignedInUser(r.Context(), q.Get("code"))
	if err != nil {
		a.cfg.Logger.Warn("feishu sign-in failed", "open_id", st.OpenID, "error", err)
		return httpserver.Errorf(http.StatusBadGateway, "Feishu did not confirm who you are. Open the link again; nothing was changed.")
	}
	if who.OpenID != st.OpenID {
		a.cfg.Logger.Info("github link refused", "open_id", st.OpenID, "signed_in", who.OpenID, "reason", "another Feishu user completed the link")
		return httpserver.Errorf(http.StatusForbidden, "You are signed in to Feishu as %s, but this link is for someone else: only they can link their GitHub account. Nothing was changed.", nameOr(who.Name, who.OpenID))
	}
	return a.toGitHub(w, r, people.State{Purpose: purposeLink, OpenID: st.OpenID})
}

func nameOr(name, id string) string {
	if name != "" {
		return name
	}
	return id
}

// getOAuthCallback finishes a flow: the state must be genuine, unexpired
// and started in this browser; the code becomes the GitHub login.
func (a *Admin) getOAuthCallback(w http.ResponseWriter, r *http.Request) error {
	if err := a.oauthReady(); err != nil {
		return err
	}
	q := r.URL.Query()
	if q.Get("error") != "" {
		return httpserver.Errorf(http.StatusForbidden, "GitHub did not authorize the app (%s); nothing was changed.", strings.Join(strings.Fields(q.Get("error")), " "))
	}
	raw, now := q.Get("state"), a.cfg.Now()
	st, err := a.signer().Check(raw, purposeSignIn, now)
	if errors.Is(err, people.ErrBadState) {
		st, err = a.signer().Check(raw, purposeLink, now)
	}
	if err != nil || !a.checkNonce(w, r, st) {
		return httpserver.Errorf(http.StatusBadRequest, "This sign-in did not start in this browser or took too long. Start again; nothing was changed.")
	}
	login, err := a.cfg.OAuth.Login(r.Context(), q.Get("code"), a.callbackURL())
	if err != nil {
		a.cfg.Logger.Warn("github oauth failed", "purpose", st.Purpose, "error", err)
		return httpserver.Errorf(http.StatusBadGateway, "GitHub did not confirm who you are. Start again; nothing was changed.")
	}
	if st.Purpose == purposeLink {
		return a.finishLink(w, r, st.OpenID, login)
	}
	return a.finishSignIn(w, r, login, st.Next)
}

// finishSignIn signs in the person who holds login: an admin if their
// record says so or the login is among AdminGitHubLogins, else a member.
// A login nobody holds and no setting names is refused.
func (a *Admin) finishSignIn(w http.ResponseWriter, r *http.Request, login, next string) error {
	p, ok, err := a.deps.People.By(r.Context(), a.db, people.KindGitHub, login)
	if err != nil {
		return err
	}
	who := panelSession{Actor: "@" + login, Role: a.loginRole(login, ok, p.Role), Grant: grantGitHub, Login: login}
	if who.Role == "" {
		a.cfg.Logger.Info("panel sign-in refused", "login", login, "reason", "no person holds the login")
		return httpserver.Errorf(http.StatusForbidden, "The GitHub account @%s is not linked to anyone on this team. Ask an admin to add it on the People page; nothing was changed.", login)
	}
	if ok {
		who.Actor, who.PersonID = p.Name+" (@"+login+")", p.ID
	}
	return a.startSession(w, r, who, "github", next)
}

// finishLink records that the Feishu user openID holds login.
func (a *Admin) finishLink(w http.ResponseWriter, r *http.Request, openID, login string) error {
	ctx := r.Context()
	p, err := a.deps.People.LinkGitHub(ctx, openID, login, "")
	var inv *people.InvalidError
	if errors.As(err, &inv) {
		a.cfg.Logger.Info("github link refused", "open_id", openID, "login", login, "reason", inv.Error())
		return httpserver.Errorf(http.StatusConflict, "%s. Nothing was changed.", inv.Error())
	}
	if err != nil {
		return err
	}
	if err := a.audit.record(ctx, a.db, auditEntry{CreatedAt: a.cfg.Now(), Actor: p.Name + " (@" + login + ")", Action: actionLinkGitHub,
		Target: "person:" + strconv.FormatInt(p.ID, 10), Detail: "feishu " + openID + " (signed in to Feishu) proved github " + login}); err != nil {
		return err
	}
	a.cfg.Logger.Info("github login linked", "person", p.ID, "open_id", openID, "login", login)
	return a.render(w, r, http.StatusOK, "link.html", pageData{Title: "GitHub account linked", Data: linkData{Name: p.Name, Done: "yes", Login: login}})
}
