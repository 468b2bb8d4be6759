// Package github is a fake GitHub REST API for tests: an httptest server that
// speaks GitHub's wire format for the endpoints superagent calls, checks App
// JWTs and installation tokens, and records every request. Import it under
// an alias (fakegithub) beside go-github.
//
// It covers the App endpoints (GET /app, installation access tokens) and
// collaborator permissions, and reports a primary quota per installation in
// the X-RateLimit-* headers; ServeConversations adds reactions and issue
// comments; ServeRepositories (called by the first AddRepo or AddIssue) adds
// repositories served over git smart HTTP, pull requests, issues, reviews,
// check runs, users and a small GraphQL endpoint (see repos.go). Later
// features add routes with Handle, reusing Authorize, WriteJSON and the
// recorded requests. SignWebhook signs webhook deliveries sent to the
// service under test, and CheckWebhook holds their payloads to GitHub's
// webhook schemas.
//
// Every request the fake receives is matched to an operation of GitHub's
// REST description (testdata/api.github.com.json) and checked, and so is
// every answer it gives: a mismatch fails the test using the fake (see
// Expect, and contract.go). Answers start from GitHub's published examples
// with the fake's state laid over them (canned.go). SEMANTICS.md lists what
// the schemas cannot say: run and job ids, permission and role_name, event
// permissions, pagination, rate limits.
package github

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"

	"github.com/superagent-dev/superagent/internal/retry"
	"github.com/superagent-dev/superagent/internal/testkit/contract"
)

// Request is one recorded request.
type Request struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// Fault is a canned answer given instead of the real one. With Status 0
// the real answer is given (the request lands), after Delay.
type Fault struct {
	Status int
	Header http.Header
	Body   string
	// Delay holds the answer this long, or until the caller gives up: a
	// slow write whose answer its caller may never see.
	Delay time.Duration
}

// Server is a running fake.
type Server struct {
	// URL is the API root to configure clients with.
	URL string
	// AppID and Slug describe the App the fake pretends to be.
	AppID int64
	Slug  string

	// Reporter holds the contract violations (Expect, Violations).
	*contract.Reporter

	t   testing.TB
	srv *httptest.Server
	mux *http.ServeMux
	key *rsa.PrivateKey
	pem []byte

	mu       sync.Mutex
	requests []Request
	tokens   map[string]int64 // token → installation id
	// scopes holds the repositories (lower-case names, without the owner)
	// a token was restricted to when it was created; no entry: all.
	scopes map[string]map[string]bool
	// tokenPerms holds the permissions each token was created with.
	tokenPerms map[string]map[string]string
	// granted overrides the installations\' permissions (SetGranted).
	granted     map[string]string
	tokenCount  int
	permissions map[string]string // owner/repo:login → level
	customRoles map[string]string // custom role → its permission field
	faults      map[string][]Fault
	conv        *conversation
	st          *store
	users       users
	oauth       oauth
	manifest    manifestFlow
	used        map[int64]int  // installation → requests counted against its quota
	operations  map[string]int // operationId → requests
}

// RateLimit is the hourly primary quota the fake reports per installation
// in X-RateLimit-Limit, counting down X-RateLimit-Remaining with each
// request made with the installation's token.
const RateLimit = 5000

var keyOnce = sync.OnceValues(func() (*rsa.PrivateKey, error) {
	return rsa.GenerateKey(rand.Reader, 2048)
})

// New starts a fake with App id 1 and slug "superagent", closed when the
// test ends.
func New(t testing.TB) *Server {
	t.Helper()
	key, err := keyOnce()
	if err != nil {
		t.Fatalf("generating fake GitHub App key: %v", err)
	}
	s := &Server{
		Reporter:    contract.NewReporter(t, "fake GitHub"),
		t:           t,
		AppID:       1,
		Slug:        "superagent",
		mux:         http.NewServeMux(),
		key:         key,
		pem:         pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		tokens:      map[string]int64{},
		scopes:      map[string]map[string]bool{},
		tokenPerms:  map[string]map[string]string{},
		permissions: map[string]string{},
		customRoles: map[string]string{},
		faults:      map[string][]Fault{},
		used:        map[int64]int{},
		operations:  map[string]int{},
		conv:        &conversation{},
		st:          newStore(),
	}
	s.mux.HandleFunc("GET /app", s.getApp)
	s.mux.HandleFunc("GET /app/installations/{id}", s.getInstallation)
	s.mux.HandleFunc("POST /app/installations/{id}/access_tokens", s.createToken)
	s.mux.HandleFunc("GET /repos/{owner}/{repo}/collaborators/{user}/permission", s.getPermission)
	s.mux.HandleFunc("GET /login/oauth/authorize", s.authorize)
	s.mux.HandleFunc("POST /login/oauth/access_token", s.accessToken)
	s.mux.HandleFunc("GET /user", s.getAuthenticatedUser)
	s.mux.HandleFunc("POST /settings/apps/new", s.newApp)
	s.mux.HandleFunc("POST /organizations/{org}/settings/apps/new", s.newApp)
	s.mux.HandleFunc("POST /app-manifests/{code}/conversions", s.convertManifest)
	// GitHub answers an unknown route with its JSON error, not net/http's
	// text.
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { WriteError(w, http.StatusNotFound, "Not Found") })
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// PrivateKey is the App's private key (PEM) to configure clients with.
func (s *Server) PrivateKey() []byte { return s.pem }

// Handle adds a route (a net/http ServeMux pattern such as
// "POST /repos/{owner}/{repo}/issues/{number}/comments").
func (s *Server) Handle(pattern string, h http.HandlerFunc) { s.mux.HandleFunc(pattern, h) }

// SetPermission sets login's role on owner/repo (admin, maintain, write,
// triage, read, or a custom role added with AddCustomRole); others have
// "none".
func (s *Server) SetPermission(repo, login, level string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.permissions[repo+":"+strings.ToLower(login)] = level
}

// AddCustomRole defines an organization's custom repository role, name,
// inheriting base (read, triage, write or maintain); GitHub reports base's
// folded level as its permission.
func (s *Server) AddCustomRole(name, base string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	folded := map[string]string{"maintain": "write", "triage": "read"}[base]
	if folded == "" {
		folded = base
	}
	s.customRoles[name] = folded
}

// FailNext makes the next len(faults) requests to method and path (exact,
// e.g. "GET", "/app") get the faults in order.
func (s *Server) FailNext(method, path string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := method + " " + path
	s.faults[k] = append(s.faults[k], faults...)
}

// Requests returns every request recorded so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count returns how many requests went to method and path.
func (s *Server) Count(method, path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

// Pushes counts the git pushes to fullName that asked to update ref
// (e.g. "refs/heads/main"), whether or not git accepted them.
func (s *Server) Pushes(fullName, ref string) int {
	path := "/git/" + fullName + ".git/git-receive-pack"
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.Method == http.MethodPost && strings.EqualFold(r.Path, path) && slices.Contains(pushedRefs(r.Body), ref) {
			n++
		}
	}
	return n
}

// pushedRefs reads the ref names of a receive-pack request's commands:
// pkt-lines "<old> <new> <ref>", the first followed by NUL and the
// capabilities, up to the flush packet.
func pushedRefs(body []byte) []string {
	var refs []string
	for len(body) >= 4 {
		size, err := strconv.ParseUint(string(body[:4]), 16, 16)
		if err != nil || size == 0 || int(size) > len(body) || size < 4 {
			break
		}
		line := string(body[4:size])
		body = body[size:]
		line, _, _ = strings.Cut(line, "\x00")
		if f := strings.Fields(line); len(f) == 3 {
			refs = append(refs, f[2])
		}
	}
	return refs
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	k := r.Method + " " + r.URL.Path
	var fault *Fault
	if fs := s.faults[k]; len(fs) > 0 {
		fault = &fs[0]
		s.faults[k] = fs[1:]
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "token ")
	if inst, ok := s.tokens[tok]; ok {
		s.used[inst]++
		w.Header().Set("X-RateLimit-Limit", strconv.Itoa(RateLimit))
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(max(RateLimit-s.used[inst], 0)))
		w.Header().Set("X-RateLimit-Used", strconv.Itoa(s.used[inst]))
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
		w.Header().Set("X-RateLimit-Resource", "core")
	}
	s.mu.Unlock()
	c := s.checkRequest(r, body)
	if fault != nil && fault.Status == 0 {
		rec := httptest.NewRecorder()
		s.mux.ServeHTTP(rec, r)
		s.checkResponse(c, rec.Code, rec.Header(), rec.Body.Bytes())
		hold(r, fault.Delay)
		for name, vs := range rec.Header() {
			w.Header()[name] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		return
	}
	if fault != nil {
		// A planted answer is the test's to shape (an outage, a limit):
		// only the request is held to the contract.
		hold(r, fault.Delay)
		for name, vs := range fault.Header {
			w.Header()[name] = vs
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(fault.Status)
		_, _ = io.WriteString(w, fault.Body)
		return
	}
	if c == nil {
		s.mux.ServeHTTP(w, r)
		return
	}
	tw := &tee{ResponseWriter: w}
	s.mux.ServeHTTP(tw, r)
	s.checkResponse(c, tw.status, w.Header(), tw.body.Bytes())
}

// hold waits d or until the caller gives up.
func hold(r *http.Request, d time.Duration) {
	_ = retry.Sleep(r.Context(), d)
}

// WriteJSON answers with v as GitHub does.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError answers with GitHub's error shape.
func WriteError(w http.ResponseWriter, status int, message string) {
	WriteJSON(w, status, map[string]string{"message": message, "documentation_url": "https://docs.github.com/rest"})
}

// AuthorizeApp checks that r carries a valid App JWT, answering 401 if not.
func (s *Server) AuthorizeApp(w http.ResponseWriter, r *http.Request) bool {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok {
		claims := &jwt.RegisteredClaims{}
		_, err := jwt.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
			if _, ok := t.Method.(*jwt.SigningMethodRSA); !ok {
				return nil, fmt.Errorf("unexpected signing method %v", t.Header["alg"])
			}
			return &s.key.PublicKey, nil
		})
		if err == nil && claims.Issuer == strconv.FormatInt(s.AppID, 10) {
			return true
		}
	}
	WriteError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
	return false
}

// Authorize checks that r carries an installation token the fake issued and
// returns its installation id, answering 401 if not.
func (s *Server) Authorize(w http.ResponseWriter, r *http.Request) (int64, bool) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "token ")
	if !ok {
		tok, ok = strings.CutPrefix(h, "Bearer ")
	}
	s.mu.Lock()
	id, known := s.tokens[tok]
	scope := s.scopes[tok]
	s.mu.Unlock()
	if !ok || !known {
		WriteError(w, http.StatusUnauthorized, "Bad credentials")
		return 0, false
	}
	if name := r.PathValue("repo"); scope != nil && name != "" && !scope[strings.ToLower(name)] {
		WriteError(w, http.StatusForbidden, "Resource not accessible by integration")
		return 0, false
	}
	return id, true
}

// TokenScopes returns, for each installation token created with a list of
// repositories, that list (as the request named them).
func (s *Server) TokenScopes() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]string
	for _, r := range s.requests {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.Path, "/access_tokens") {
			continue
		}
		var body struct {
			Repositories []string `json:"repositories"`
		}
		if json.Unmarshal(r.Body, &body) == nil && body.Repositories != nil {
			out = append(out, body.Repositories)
		}
	}
	return out
}

// TokensIssued returns how many installation tokens the fake has issued.
func (s *Server) TokensIssued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenCount
}

// appPermissions are the permissions the fake App holds, as GET /app and
// installation tokens report them.
func appPermissions() map[string]any {
	return map[string]any{"contents": "write", "issues": "write", "pull_requests": "write", "checks": "write", "metadata": "read", "actions": "read"}
}

// appJSON is the App as GET /app answers it (integration), from the
// published example.
func (s *Server) appJSON() map[string]any {
	m := s.canned("integration")
	return overlay(m, map[string]any{
		"id": s.AppID, "slug": s.Slug, "name": s.Slug, "node_id": "A_fake", "client_id": "Iv1.fake" + strconv.FormatInt(s.AppID, 10),
		"owner":        s.orgJSON("superagent-dev", 1),
		"html_url":     "https://github.com/apps/" + s.Slug,
		"external_url": "https://superagent.example.com",
		"description":  "",
		"permissions":  appPermissions(),
		// What superagent's App manifest subscribes to.
		"events": []any{"issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment",
			"pull_request_review_thread", "check_run", "check_suite", "workflow_run", "push"},
	})
}

func (s *Server) getApp(w http.ResponseWriter, r *http.Request) {
	if !s.AuthorizeApp(w, r) {
		return
	}
	WriteJSON(w, http.StatusOK, s.appJSON())
}

// grantedPermissions is what the fake's installations allow (SetGranted).
func (s *Server) grantedPermissions() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.granted != nil {
		return maps.Clone(s.granted)
	}
	return map[string]string{"contents": "write", "issues": "write", "pull_requests": "write", "checks": "write", "actions": "read", "metadata": "read"}
}

// SetGranted sets the permissions every installation of the App has, as
// an owner accepted them (an installation made before the App asked for a
// new permission lacks it until the owner accepts).
func (s *Server) SetGranted(perms map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.granted = maps.Clone(perms)
}

func (s *Server) getInstallation(w http.ResponseWriter, r *http.Request) {
	if !s.AuthorizeApp(w, r) {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	// The published example, with this installation's facts over it.
	WriteJSON(w, http.StatusOK, overlay(s.canned("base-installation"), map[string]any{
		"id": id, "app_id": s.AppID, "app_slug": s.Slug, "target_id": id,
		"access_tokens_url": s.URL + "/app/installations/" + strconv.FormatInt(id, 10) + "/access_tokens",
		"permissions":       s.grantedPermissions(),
	}))
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	if !s.AuthorizeApp(w, r) {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	// The body may restrict the token to some of the installation's
	// repositories (by name) and permissions.
	var body struct {
		Repositories []string          `json:"repositories"`
		Permissions  map[string]string `json:"permissions"`
	}
	if r.ContentLength != 0 {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			WriteError(w, http.StatusBadRequest, "Problems parsing JSON")
			return
		}
	}
	perms := s.grantedPermissions()
	if body.Permissions != nil {
		for k, v := range body.Permissions {
			if granted, ok := perms[k]; !ok || (granted == "read" && v == "write") {
				WriteError(w, http.StatusUnprocessableEntity, "The permissions requested are not granted to this installation.")
				return
			}
		}
		perms = body.Permissions
	}
	s.mu.Lock()
	s.tokenCount++
	tok := fmt.Sprintf("ghs_fake%d_%d", id, s.tokenCount)
	s.tokens[tok] = id
	s.tokenPerms[tok] = perms
	selection := "all"
	if body.Repositories != nil {
		scope := map[string]bool{}
		for _, name := range body.Repositories {
			scope[strings.ToLower(name)] = true
		}
		s.scopes[tok] = scope
		selection = "selected"
	}
	s.mu.Unlock()
	m := s.canned("installation-token")
	delete(m, "repositories") // listed only for repository_selection "selected"
	WriteJSON(w, http.StatusCreated, overlay(m, map[string]any{
		"token":                tok,
		"expires_at":           time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		"permissions":          perms,
		"repository_selection": selection,
	}))
}

func (s *Server) getPermission(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.Authorize(w, r); !ok {
		return
	}
	repo := r.PathValue("owner") + "/" + r.PathValue("repo")
	user := r.PathValue("user")
	s.mu.Lock()
	level, ok := s.permissions[repo+":"+strings.ToLower(user)]
	s.mu.Unlock()
	if !ok {
		level = "none"
	}
	// As GitHub answers: permission folds maintain into write and triage
	// into read (and a custom role into its base role); role_name keeps
	// the role.
	role, permission := level, level
	switch level {
	case "maintain":
		permission = "write"
	case "triage":
		permission = "read"
	}
	if base, ok := s.customRoles[level]; ok {
		permission = base
	}
	m := s.canned("repository-collaborator-permission-response-if-user-has-admin-permissions")
	u := s.userJSON(user)
	u["permissions"] = map[string]any{"admin": permission == "admin", "maintain": role == "maintain",
		"push": permission == "admin" || permission == "write", "triage": role == "triage" || permission == "write" || permission == "admin",
		"pull": permission != "none"}
	u["role_name"] = role
	WriteJSON(w, http.StatusOK, overlay(m, map[string]any{"permission": permission, "role_name": role, "user": u}))
}
