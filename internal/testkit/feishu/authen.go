package feishu

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/superagent-dev/superagent/internal/testkit/signinpage"
)

// Feishu's web sign-in (user authorization), the way a web page learns
// which Feishu user is at the browser:
//
//   - GET /open-apis/authen/v1/authorize (on accounts.feishu.cn) is a page:
//     the person signs in and approves, and the browser is sent to
//     redirect_uri with code and state
//     (https://open.feishu.cn/document/common-capabilities/sso/api/obtain-oauth-code).
//     It is not an Open API call and is outside the contract.
//   - POST /open-apis/authen/v1/oidc/access_token, with the app's
//     app_access_token, exchanges the code (once, within five minutes) for
//     a user_access_token.
//   - GET /open-apis/authen/v1/user_info, with that user token, says who
//     the person is (open_id, union_id, name).

// AppToken is the app access token the fake hands out and requires.
const AppToken = "a-fake"

// AuthorizePath is the sign-in page's path.
const AuthorizePath = "/open-apis/authen/v1/authorize"

const (
	appTokenPath  = "/open-apis/auth/v3/app_access_token/internal"
	userTokenPath = "/open-apis/authen/v1/oidc/access_token"
	userInfoPath  = "/open-apis/authen/v1/user_info"
)

// authen holds the person signed in to Feishu in the browser, the codes
// the page gave and the user tokens they became.
type authen struct {
	mu     sync.Mutex
	user   string              // open_id of the browser's Feishu user
	codes  map[string]authCode // code → whom, until when
	tokens map[string]string   // user_access_token → open_id
}

type authCode struct {
	openID  string
	expires time.Time
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SignInBrowser makes openID the person signed in to Feishu in the
// browser: the authorize page approves for them. Empty signs them out
// (the page then shows Feishu's sign-in form, without a redirect).
func (s *Server) SignInBrowser(openID string) {
	s.authen.mu.Lock()
	defer s.authen.mu.Unlock()
	s.authen.user = openID
}

// UserTokens returns how many user access tokens the fake has issued.
func (s *Server) UserTokens() int {
	s.authen.mu.Lock()
	defer s.authen.mu.Unlock()
	return len(s.authen.tokens)
}

// serveAuthen answers the sign-in's requests, which use no tenant token;
// false when r is none of them.
func (s *Server) serveAuthen(w http.ResponseWriter, r *http.Request, req Request) bool {
	switch {
	case r.URL.Path == AuthorizePath && r.Method == http.MethodGet:
		s.authorize(w, r)
	case r.URL.Path == appTokenPath && r.Method == http.MethodPost:
		if str(req.Body, "app_id") != AppID || str(req.Body, "app_secret") == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"code": 10003, "msg": "invalid param"})
			return true
		}
		writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "ok", "app_access_token": AppToken, "expire": 7200})
	case r.URL.Path == userTokenPath && r.Method == http.MethodPost:
		s.userToken(w, r, req)
	case r.URL.Path == userInfoPath && r.Method == http.MethodGet:
		s.userInfo(w, r)
	default:
		return false
	}
	return true
}

// authorize is the sign-in page. Feishu checks that the client_id is an
// app and the redirect_uri one of its registered redirect URLs (the fake
// takes any http(s) URL); on approval the browser goes to redirect_uri
// with code and state.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	u, ok := signinpage.RedirectURL(q.Get("redirect_uri"))
	switch {
	case q.Get("client_id") != AppID:
		http.Error(w, "Feishu: the app (client_id) does not exist", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code":
		http.Error(w, "Feishu: response_type must be code", http.StatusBadRequest)
		return
	case !ok:
		http.Error(w, "Feishu: the redirect URL is not one of the app's (error 20029)", http.StatusBadRequest)
		return
	}
	s.authen.mu.Lock()
	who := s.authen.user
	code := randomHex(16)
	if who != "" {
		if s.authen.codes == nil {
			s.authen.codes = map[string]authCode{}
		}
		s.authen.codes[code] = authCode{openID: who, expires: time.Now().Add(5 * time.Minute)}
	}
	s.authen.mu.Unlock()
	signinpage.Answer(w, r, u, who != "", code, "Feishu")
}

// userToken exchanges a code for a user_access_token; a code works once.
func (s *Server) userToken(w http.ResponseWriter, r *http.Request, req Request) {
	if r.Header.Get("Authorization") != "Bearer "+AppToken {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"code": 99991663, "msg": "Invalid access token for authorization."})
		return
	}
	code := str(req.Body, "code")
	s.authen.mu.Lock()
	c, ok := s.authen.codes[code]
	delete(s.authen.codes, code)
	tok := "u-" + randomHex(16)
	if ok && time.Now().Before(c.expires) {
		if s.authen.tokens == nil {
			s.authen.tokens = map[string]string{}
		}
		s.authen.tokens[tok] = c.openID
	}
	s.authen.mu.Unlock()
	if !ok || !time.Now().Before(c.expires) || str(req.Body, "grant_type") != "authorization_code" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 20007, "msg": "invalid code: it was used, expired or never given"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": map[string]any{
		"access_token": tok, "token_type": "Bearer", "expires_in": 7200,
		"refresh_token": "ur-" + randomHex(16), "refresh_expires_in": 2592000, "scope": "",
	}})
}

// userInfo says who a user_access_token belongs to.
func (s *Server) userInfo(w http.ResponseWriter, r *http.Request) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.authen.mu.Lock()
	openID, ok := s.authen.tokens[tok]
	s.authen.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"code": 99991668, "msg": "Invalid access token for authorization. Please make a request with token attached."})
		return
	}
	s.mu.Lock()
	u := s.users[openID]
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": map[string]any{
		"name": u.Name, "en_name": u.EnName, "avatar_url": "https://example.invalid/avatar.png",
		"open_id": openID, "union_id": "on_" + strings.TrimPrefix(openID, "ou_"), "tenant_key": "fake_tenant",
	}})
}
