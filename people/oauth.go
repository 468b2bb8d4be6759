package people

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultWebURL is where GitHub's OAuth web flow lives.
const DefaultWebURL = "https://github.com"

// OAuth is the GitHub App's user authorization (the OAuth web flow): send
// the person to WebURL/login/oauth/authorize, receive a code on the
// callback, exchange it at WebURL/login/oauth/access_token, and read who
// they are from APIURL/user. The App's own client id and secret serve; no
// other app is registered. The user token is used for that one read and
// never stored.
type OAuth struct {
	ClientID, ClientSecret string
	// WebURL is GitHub's web host (DefaultWebURL); APIURL its REST API
	// (https://api.github.com/).
	WebURL, APIURL string
	// HTTP is the client for the exchange and the read. Default: one with
	// a 15 s timeout.
	HTTP *http.Client
}

// Enabled reports whether the client id and secret are set.
func (o *OAuth) Enabled() bool { return o != nil && o.ClientID != "" && o.ClientSecret != "" }

func (o *OAuth) web() string {
	if o.WebURL == "" {
		return DefaultWebURL
	}
	return strings.TrimRight(o.WebURL, "/")
}

func (o *OAuth) api() string {
	if o.APIURL == "" {
		return "https://api.github.com"
	}
	return strings.TrimRight(o.APIURL, "/")
}

func (o *OAuth) client() *http.Client {
	if o.HTTP != nil {
		return o.HTTP
	}
	return &http.Client{Timeout: 15 * time.Second}
}

// AuthorizeURL is where the person's browser goes to authorize the App.
func (o *OAuth) AuthorizeURL(state, redirectURI string) string {
	q := url.Values{"client_id": {o.ClientID}, "redirect_uri": {redirectURI}, "state": {state}, "allow_signup": {"false"}}
	return o.web() + "/login/oauth/authorize?" + q.Encode()
}

// Login exchanges the callback's code for a user token and returns the
// GitHub login it belongs to.
func (o *OAuth) Login(ctx context.Context, code, redirectURI string) (string, error) {
	form := url.Values{"client_id": {o.ClientID}, "client_secret": {o.ClientSecret}, "code": {code}, "redirect_uri": {redirectURI}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.web()+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("exchanging the GitHub code: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	var tok struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := o.do(req, &tok); err != nil {
		return "", fmt.Errorf("exchanging the GitHub code: %w", err)
	}
	if tok.Error != "" || tok.AccessToken == "" {
		return "", fmt.Errorf("exchanging the GitHub code: GitHub said %s (%s)", tok.Error, tok.Description)
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, o.api()+"/user", nil)
	if err != nil {
		return "", fmt.Errorf("reading the GitHub user: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	var user struct {
		Login string `json:"login"`
	}
	if err := o.do(req, &user); err != nil {
		return "", fmt.Errorf("reading the GitHub user: %w", err)
	}
	if !ValidLogin(user.Login) {
		return "", fmt.Errorf("reading the GitHub user: GitHub gave no login")
	}
	return strings.ToLower(user.Login), nil
}

func (o *OAuth) do(req *http.Request, v any) error {
	res, err := o.client().Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GitHub answered %s", res.Status)
	}
	return json.Unmarshal(body, v)
}

// State is what a signed OAuth state (or link token) carries.
type State struct {
	// Purpose is "signin" (the panel) or "link" (a Feishu user proving
	// their GitHub login).
	Purpose string `json:"p"`
	// OpenID is the Feishu user a link is for.
	OpenID string `json:"o,omitempty"`
	// Next is the panel page to return to after sign-in.
	Next string `json:"n,omitempty"`
	// Nonce binds the state to the browser that started the flow (a
	// cookie holds it), so a state cannot be planted in another's browser.
	Nonce string `json:"c,omitempty"`
	// Expires is a Unix time.
	Expires int64 `json:"e"`
}

// Signer signs and checks states with a key derived from a secret only
// the service knows.
type Signer struct{ key []byte }

// NewSigner derives the signing key from secret (the App's client secret)
// and a label, so the key serves nothing else.
func NewSigner(secret string) *Signer {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("superagent oauth state v1"))
	return &Signer{key: m.Sum(nil)}
}

// Sign returns st as a URL-safe token.
func (s *Signer) Sign(st State) string {
	body, _ := json.Marshal(st)
	enc := base64.RawURLEncoding.EncodeToString(body)
	return enc + "." + base64.RawURLEncoding.EncodeToString(s.mac(enc))
}

func (s *Signer) mac(enc string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(enc))
	return m.Sum(nil)
}

// ErrBadState is returned for a state that is forged, damaged or expired.
var ErrBadState = errors.New("the link is not valid or has expired")

// Check returns the state in token if its signature holds, it serves
// purpose and it has not expired at now.
func (s *Signer) Check(token, purpose string, now time.Time) (State, error) {
	enc, sig, ok := strings.Cut(token, ".")
	if !ok {
		return State{}, ErrBadState
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(enc)) {
		return State{}, ErrBadState
	}
	body, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return State{}, ErrBadState
	}
	var st State
	if err := json.Unmarshal(body, &st); err != nil || st.Purpose != purpose || now.Unix() >= st.Expires {
		return State{}, ErrBadState
	}
	return st, nil
}
