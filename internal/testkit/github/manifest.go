package github

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/superagent-dev/superagent/internal/testkit/contract"
)

// Registering an App from a manifest
// (https://docs.github.com/apps/sharing-github-apps/registering-a-github-app-from-a-manifest):
// a page posts the manifest (form field "manifest") to
// github.com/settings/apps/new?state=… (or
// /organizations/{org}/settings/apps/new); the person confirms; GitHub
// redirects to the manifest's redirect_url with a one-time code and the
// state; the page's backend exchanges the code at POST
// /app-manifests/{code}/conversions (in the REST description) for the App's
// id, key, webhook secret and OAuth client. The web page is not REST and
// not in the description: the fake follows the prose (SEMANTICS.md). It
// confirms at once, and the App it registers is the fake's own (AppID,
// PrivateKey, ClientID, ClientSecret), so the credentials the exchange
// hands out authenticate against the fake.

// RegisteredManifest is what the fake's new-App page received.
type RegisteredManifest struct {
	Name           string `json:"name"`
	URL            string `json:"url"`
	HookAttributes struct {
		URL    string `json:"url"`
		Active bool   `json:"active"`
	} `json:"hook_attributes"`
	RedirectURL        string            `json:"redirect_url"`
	CallbackURLs       []string          `json:"callback_urls"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
	// Org is the organisation it was posted for; empty for a personal
	// account.
	Org string `json:"-"`
}

// ManifestWebhookSecret is the webhook secret the fake's manifest
// conversion hands out.
const ManifestWebhookSecret = "fake-manifest-webhook-secret-0123456789"

type manifestFlow struct {
	registered *RegisteredManifest
	codes      map[string]time.Time // code → expiry
}

// Manifest returns the manifest the App was registered with, nil before
// one was posted.
func (s *Server) Manifest() *RegisteredManifest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.manifest.registered
}

// newApp answers POST /settings/apps/new and
// /organizations/{org}/settings/apps/new: it registers the manifest and
// redirects to its redirect_url with a code and the state.
func (s *Server) newApp(w http.ResponseWriter, r *http.Request) {
	contract.Cover("github-web", "POST /settings/apps/new")
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	var m RegisteredManifest
	if err := json.Unmarshal([]byte(r.PostForm.Get("manifest")), &m); err != nil {
		http.Error(w, "Invalid GitHub App configuration: the manifest is not JSON", http.StatusUnprocessableEntity)
		return
	}
	redirect, err := url.Parse(m.RedirectURL)
	if err != nil || (redirect.Scheme != "http" && redirect.Scheme != "https") || m.HookAttributes.URL == "" || m.URL == "" {
		http.Error(w, "Invalid GitHub App configuration: url, hook_attributes.url and redirect_url are required", http.StatusUnprocessableEntity)
		return
	}
	if len(m.CallbackURLs) > 10 {
		http.Error(w, "Invalid GitHub App configuration: at most 10 callback_urls", http.StatusUnprocessableEntity)
		return
	}
	m.Org = r.PathValue("org")
	code := randomHex(10)
	s.mu.Lock()
	s.manifest.registered = &m
	if s.manifest.codes == nil {
		s.manifest.codes = map[string]time.Time{}
	}
	s.manifest.codes[code] = time.Now().Add(time.Hour)
	s.mu.Unlock()
	q := redirect.Query()
	q.Set("code", code)
	if st := r.URL.Query().Get("state"); st != "" {
		q.Set("state", st)
	}
	redirect.RawQuery = q.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// convertManifest answers POST /app-manifests/{code}/conversions: a code
// works once and for an hour. The answer is the published example with
// the fake App laid over it.
func (s *Server) convertManifest(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	s.mu.Lock()
	expires, ok := s.manifest.codes[code]
	delete(s.manifest.codes, code)
	m := s.manifest.registered
	s.mu.Unlock()
	if !ok || time.Now().After(expires) {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	perms := map[string]any{}
	for k, v := range m.DefaultPermissions {
		perms[k] = v
	}
	events := []any{}
	for _, e := range m.DefaultEvents {
		events = append(events, e)
	}
	owner := s.canned("integration-from-manifest", "owner")
	if m.Org != "" {
		owner = overlay(owner, map[string]any{"login": m.Org, "type": "Organization"})
	}
	now := time.Now().UTC().Format(time.RFC3339)
	WriteJSON(w, http.StatusCreated, overlay(s.canned("integration-from-manifest"), map[string]any{
		"id": s.AppID, "slug": s.Slug, "name": s.Slug, "node_id": "A_fake", "owner": owner,
		"description": "", "external_url": m.URL, "html_url": "https://github.com/apps/" + s.Slug,
		"created_at": now, "updated_at": now,
		"permissions": perms, "events": events,
		"client_id": s.ClientID(), "client_secret": ClientSecret,
		"webhook_secret": ManifestWebhookSecret, "pem": string(s.pem),
	}))
}

// callbackAllowed reports whether redirect is one of the callback URLs the
// App was registered with; an App registered by no manifest (the fake's
// default) takes any.
func (s *Server) callbackAllowed(redirect string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.manifest.registered == nil {
		return true
	}
	return slices.Contains(s.manifest.registered.CallbackURLs, redirect)
}
