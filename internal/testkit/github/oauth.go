package github

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/superagent-dev/superagent/internal/testkit/contract"
	"github.com/superagent-dev/superagent/internal/testkit/signinpage"
)

// The App's user authorization, the OAuth web flow
// (https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-user-access-token-for-a-github-app#using-the-web-application-flow-to-generate-a-user-access-token).
// These two routes live on github.com, not the REST API, and are not in
// GitHub's OpenAPI description: SEMANTICS.md describes what the fake
// follows. GET /user, which the user token then reads, is in the contract.

// ClientSecret is the fake App's client secret; ClientID its client id
// (as GET /app reports it).
const ClientSecret = "fake-client-secret"

// ClientID is the fake App's client id.
func (s *Server) ClientID() string { return "Iv1.fake" + strconv.FormatInt(s.AppID, 10) }

// oauth holds the person signed in to the fake's github.com, the codes
// it gave and the user tokens they became.
type oauth struct {
	mu     sync.Mutex
	user   string               // the login signed in to github.com in the browser
	codes  map[string]oauthCode // code → what it was given for
	tokens map[string]string    // user token → login
}

type oauthCode struct {
	login, clientID, redirect string
	expires                   time.Time
}

// SignInBrowser makes login the person signed in to the fake's github.com:
// the authorize page approves for them. Empty signs them out (the page
// then answers as GitHub's sign-in form would, without a redirect).
func (s *Server) SignInBrowser(login string) {
	s.oauth.mu.Lock()
	defer s.oauth.mu.Unlock()
	s.oauth.user = login
}

// UserTokens returns how many user access tokens the fake has issued.
func (s *Server) UserTokens() int {
	s.oauth.mu.Lock()
	defer s.oauth.mu.Unlock()
	return len(s.oauth.tokens)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// authorize answers GET /login/oauth/authorize. GitHub shows the person a
// page to authorize the App (skipped once they have); on approval it
// redirects to redirect_uri with code and state. The fake approves at
// once for the browser's person.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	contract.Cover("github-web", "GET /login/oauth/authorize")
	q := r.URL.Query()
	if q.Get("client_id") != s.ClientID() {
		http.Error(w, "The client_id is not valid.", http.StatusNotFound)
		return
	}
	redirect := q.Get("redirect_uri")
	u, ok := signinpage.RedirectURL(redirect)
	if !ok || !s.callbackAllowed(redirect) {
		http.Error(w, "The redirect_uri MUST match the registered callback URL for this application.", http.StatusBadRequest)
		return
	}
	s.oauth.mu.Lock()
	login := s.oauth.user
	code := randomHex(10)
	if login != "" {
		if s.oauth.codes == nil {
			s.oauth.codes = map[string]oauthCode{}
		}
		s.oauth.codes[code] = oauthCode{login: login, clientID: q.Get("client_id"), redirect: redirect, expires: time.Now().Add(10 * time.Minute)}
	}
	s.oauth.mu.Unlock()
	signinpage.Answer(w, r, u, login != "", code, "GitHub")
}

// accessToken answers POST /login/oauth/access_token: client_id,
// client_secret, code and redirect_uri as a form. GitHub answers 200 even
// for a refusal, with an error field; JSON when asked with Accept:
// application/json, else a form-encoded body. A code works once and for
// ten minutes.
func (s *Server) accessToken(w http.ResponseWriter, r *http.Request) {
	contract.Cover("github-web", "POST /login/oauth/access_token")
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	answer := func(v map[string]any) {
		if strings.Contains(r.Header.Get("Accept"), "application/json") {
			WriteJSON(w, http.StatusOK, v)
			return
		}
		form := url.Values{}
		for k, x := range v {
			form.Set(k, toString(x))
		}
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		_, _ = w.Write([]byte(form.Encode()))
	}
	refuse := func(code, text string) {
		answer(map[string]any{"error": code, "error_description": text,
			"error_uri": "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#" + strings.ReplaceAll(code, "_", "-")})
	}
	if r.PostForm.Get("client_id") != s.ClientID() || r.PostForm.Get("client_secret") != ClientSecret {
		refuse("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.")
		return
	}
	s.oauth.mu.Lock()
	c, ok := s.oauth.codes[r.PostForm.Get("code")]
	delete(s.oauth.codes, r.PostForm.Get("code"))
	s.oauth.mu.Unlock()
	if !ok || time.Now().After(c.expires) {
		refuse("bad_verification_code", "The code passed is incorrect or expired.")
		return
	}
	if rd := r.PostForm.Get("redirect_uri"); rd != "" && rd != c.redirect {
		refuse("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.")
		return
	}
	tok := "ghu_" + randomHex(18)
	s.oauth.mu.Lock()
	if s.oauth.tokens == nil {
		s.oauth.tokens = map[string]string{}
	}
	s.oauth.tokens[tok] = c.login
	s.oauth.mu.Unlock()
	answer(map[string]any{"access_token": tok, "expires_in": 28800, "refresh_token": "ghr_" + randomHex(30),
		"refresh_token_expires_in": 15897600, "scope": "", "token_type": "bearer"})
}

// getAuthenticatedUser answers GET /user for a user access token with the
// person as a private-user, from the published example.
func (s *Server) getAuthenticatedUser(w http.ResponseWriter, r *http.Request) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "token "); ok {
		tok = t
	}
	s.oauth.mu.Lock()
	login, ok := s.oauth.tokens[tok]
	s.oauth.mu.Unlock()
	if !ok {
		WriteError(w, http.StatusUnauthorized, "Requires authentication")
		return
	}
	u := s.userFrom(s.canned("private-user-response-with-public-profile-information"), login)
	WriteJSON(w, http.StatusOK, u)
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	}
	return ""
}
