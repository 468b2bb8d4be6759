package setup

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v66/github"
)

// GitHubConfig configures the manifest flow. The zero value of each optional
// field is the documented default.
type GitHubConfig struct {
	// PublicURL is where GitHub reaches the service, e.g.
	// https://agent.example.com; webhooks go to PublicURL/webhooks/github
	// and the OAuth callback is PublicURL/oauth/github/callback. Required
	// (the command takes SUPERAGENT_PUBLIC_URL when -public-url is not
	// given).
	PublicURL string
	// DataDir receives github-app.env and github-app.pem. Required.
	DataDir string
	// AppName is the App's proposed name; GitHub lets the person change it
	// before creating, and refuses names already taken. Default "superagent".
	AppName string
	// Org registers the App under this organisation instead of the person's
	// own account. Default: the person's account.
	Org string
	// Workflows asks for workflows write, needed only if the agents may
	// change .github/workflows. Default false.
	Workflows bool
	// APIURL is the REST API root (SUPERAGENT_GITHUB_API_URL). Default
	// https://api.github.com.
	APIURL string
	// WebURL is GitHub's web root, where the manifest is posted. Default
	// https://github.com, or the API URL's scheme and host on GitHub
	// Enterprise Server.
	WebURL string
	// Addr is the local page's listen address. Default 127.0.0.1:8765; a
	// port of 0 picks a free one.
	Addr string
	// Overwrite replaces an App file already in DataDir. Default false.
	Overwrite bool
	// HTTPClient calls GitHub. Default: a client with a 30 second timeout.
	HTTPClient *http.Client
	// Rand makes the state value. Default crypto/rand.
	Rand io.Reader
	// Now tells the time for the file's header. Default time.Now.
	Now func() time.Time
	// Logger records failures. Default: discard.
	Logger *slog.Logger
}

// OAuthCallbackURL is where GitHub sends a person back after they sign in
// to the panel of the service at publicURL (admin's /oauth/github/callback).
func OAuthCallbackURL(publicURL string) string {
	return strings.TrimRight(publicURL, "/") + "/oauth/github/callback"
}

// GitHubCommand is the whole command that registers the App, for hints:
// the public URL comes from SUPERAGENT_PUBLIC_URL when that is set
// (publicURL), and must be given otherwise.
func GitHubCommand(publicURL string) string {
	if publicURL != "" {
		return "superagent setup github"
	}
	return "superagent setup github -public-url https://<public host>"
}

// DefaultSetupAddr is where the manifest page listens by default.
const DefaultSetupAddr = "127.0.0.1:8765"

var orgName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)

// GitHub runs the manifest flow once.
type GitHub struct {
	cfg   GitHubConfig
	state string
	gh    *github.Client

	mu     sync.Mutex
	used   bool // the state has been consumed by a callback
	result chan flowResult
}

type flowResult struct {
	app *GitHubApp
	err error
}

// NewGitHub checks cfg and prepares a flow with a fresh state value.
func NewGitHub(cfg GitHubConfig) (*GitHub, error) {
	var problems []string
	pub, err := url.Parse(cfg.PublicURL)
	switch {
	case cfg.PublicURL == "":
		problems = append(problems, "the public URL is required (where GitHub sends webhooks, e.g. https://agent.example.com): set SUPERAGENT_PUBLIC_URL or pass -public-url")
	case err != nil || (pub.Scheme != "https" && pub.Scheme != "http") || pub.Host == "":
		problems = append(problems, fmt.Sprintf("the public URL must be an http(s) URL, got %q", cfg.PublicURL))
	}
	if cfg.DataDir == "" {
		problems = append(problems, "the data directory is required")
	}
	if cfg.Org != "" && !orgName.MatchString(cfg.Org) {
		problems = append(problems, fmt.Sprintf("%q is not a GitHub organisation name", cfg.Org))
	}
	if cfg.AppName == "" {
		cfg.AppName = "superagent"
	}
	if cfg.APIURL == "" {
		cfg.APIURL = "https://api.github.com"
	}
	api, err := url.Parse(strings.TrimRight(cfg.APIURL, "/") + "/")
	if err != nil || (api.Scheme != "https" && api.Scheme != "http") || api.Host == "" {
		problems = append(problems, fmt.Sprintf("the API URL must be an http(s) URL, got %q", cfg.APIURL))
	}
	if cfg.WebURL == "" {
		cfg.WebURL = "https://github.com"
		if api != nil && !isGitHubDotCom(cfg.APIURL) {
			cfg.WebURL = api.Scheme + "://" + api.Host
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("setting up the GitHub App: %s", strings.Join(problems, "; "))
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultSetupAddr
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	buf := make([]byte, 32)
	if _, err := io.ReadFull(cfg.Rand, buf); err != nil {
		return nil, fmt.Errorf("setting up the GitHub App: making the state value: %w", err)
	}
	gh := github.NewClient(cfg.HTTPClient)
	gh.BaseURL = api
	return &GitHub{cfg: cfg, state: hex.EncodeToString(buf), gh: gh, result: make(chan flowResult, 1)}, nil
}

// Run listens on cfg.Addr and runs Serve.
func (g *GitHub) Run(ctx context.Context, out io.Writer) (*GitHubApp, error) {
	if !g.cfg.Overwrite {
		// Before anything is registered: an App whose key cannot be stored
		// would be left behind on GitHub.
		if err := checkNoAppFile(g.cfg.DataDir); err != nil {
			return nil, err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", g.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s for the setup page: %w (choose another port)", g.cfg.Addr, err)
	}
	return g.Serve(ctx, ln, out)
}

// Serve serves the setup page on ln until the App is registered and its
// credentials are stored, or ctx ends. It closes ln.
func (g *GitHub) Serve(ctx context.Context, ln net.Listener, out io.Writer) (*GitHubApp, error) {
	if !g.cfg.Overwrite {
		if err := checkNoAppFile(g.cfg.DataDir); err != nil {
			_ = ln.Close()
			return nil, err
		}
	}
	local := localBase(ln.Addr())
	srv := &http.Server{Handler: g.handler(local, ln.Addr()), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	fmt.Fprintf(out, "Open %s/ in a browser on this machine and press the button to register the GitHub App.\n", local)
	fmt.Fprintf(out, "(On a remote machine, forward the port first: ssh -L %s:%s <host>.)\n", portOf(ln.Addr()), strings.TrimPrefix(local, "http://"))

	var res flowResult
	select {
	case res = <-g.result:
	case <-ctx.Done():
		res.err = ctx.Err()
	case err := <-served:
		res.err = fmt.Errorf("serving the setup page: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if res.err != nil {
		return nil, res.err
	}
	g.printNextSteps(out, res.app)
	return res.app, nil
}

// localBase is the URL the browser uses for the page. A wildcard bind (in a
// container with a published port) is reached through the loopback address.
func localBase(addr net.Addr) string {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

func portOf(addr net.Addr) string {
	_, port, _ := net.SplitHostPort(addr.String())
	return port
}

// newAppURL is the GitHub page the manifest is posted to.
func (g *GitHub) newAppURL() string {
	base := strings.TrimRight(g.cfg.WebURL, "/")
	path := "/settings/apps/new"
	if g.cfg.Org != "" {
		path = "/organizations/" + url.PathEscape(g.cfg.Org) + "/settings/apps/new"
	}
	return base + path + "?state=" + url.QueryEscape(g.state)
}

// Manifest returns the manifest for a page served at local.
func (g *GitHub) Manifest(local string) Manifest {
	pub := strings.TrimRight(g.cfg.PublicURL, "/")
	return Manifest{
		Name:               g.cfg.AppName,
		URL:                pub,
		Description:        "Coding agents that take work from issues, pull requests and chat (superagent).",
		HookAttributes:     HookAttributes{URL: pub + "/webhooks/github", Active: true},
		RedirectURL:        local + "/callback",
		CallbackURLs:       []string{OAuthCallbackURL(pub)},
		Public:             false,
		DefaultPermissions: Permissions(g.cfg.Workflows),
		DefaultEvents:      Events(),
	}
}

func (g *GitHub) handler(local string, addr net.Addr) http.Handler {
	port := portOf(addr)
	allowed := map[string]bool{
		strings.TrimPrefix(local, "http://"): true,
		net.JoinHostPort("127.0.0.1", port):  true,
		net.JoinHostPort("localhost", port):  true,
		net.JoinHostPort("::1", port):        true,
		net.JoinHostPort(hostOf(addr), port): true,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { g.page(w, local) })
	mux.HandleFunc("GET /callback", g.callback)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A page on another site cannot reach this one through a DNS name
		// that resolves to the loopback address (DNS rebinding).
		if !allowed[r.Host] {
			http.Error(w, "unexpected Host header: open the address printed by superagent setup", http.StatusMisdirectedRequest)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "no-referrer")
		mux.ServeHTTP(w, r)
	})
}

func hostOf(addr net.Addr) string {
	host, _, _ := net.SplitHostPort(addr.String())
	return host
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Register the superagent GitHub App</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:42em;margin:3em auto;padding:0 1em}
button{font-size:1.1em;padding:.6em 1.2em}code{background:#f3f3f3;padding:0 .2em}</style></head>
<body>
<h1>Register the GitHub App</h1>
<p>The button takes you to GitHub to create a private App named <code>{{.Manifest.Name}}</code>
{{if .Org}}for the organisation <code>{{.Org}}</code>{{else}}for your account{{end}}.
GitHub sends its webhooks to <code>{{.Manifest.HookAttributes.URL}}</code>.</p>
<p>Repository permissions:{{range $k, $v := .Manifest.DefaultPermissions}} <code>{{$k}}: {{$v}}</code>{{end}}.<br>
Events:{{range .Manifest.DefaultEvents}} <code>{{.}}</code>{{end}}.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="manifest" value="{{.JSON}}">
<button type="submit">Create the GitHub App on GitHub</button>
</form>
<p>After you confirm, GitHub sends you back here and superagent stores the App's id, private key and
webhook secret in its data directory.</p>
</body></html>
`))

func (g *GitHub) page(w http.ResponseWriter, local string) {
	m := g.Manifest(local)
	js, err := json.Marshal(m)
	if err != nil {
		http.Error(w, "encoding the manifest failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = pageTemplate.Execute(w, map[string]any{
		"Manifest": m, "Org": g.cfg.Org, "Action": template.URL(g.newAppURL()), "JSON": string(js),
	})
}

func (g *GitHub) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state, code := q.Get("state"), q.Get("code")
	if subtle.ConstantTimeCompare([]byte(state), []byte(g.state)) != 1 {
		http.Error(w, "this callback does not carry the state this setup page issued: start again from the setup page", http.StatusForbidden)
		return
	}
	if code == "" {
		http.Error(w, "GitHub sent no code: start again from the setup page", http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	if g.used {
		g.mu.Unlock()
		http.Error(w, "this setup has already received its callback", http.StatusConflict)
		return
	}
	g.used = true
	g.mu.Unlock()

	app, err := g.complete(r.Context(), code)
	if err != nil {
		g.cfg.Logger.Error("completing the GitHub App manifest flow", "error", err)
		http.Error(w, "superagent could not finish the setup: "+err.Error()+"\n\nSee the terminal for details.", http.StatusBadGateway)
		g.result <- flowResult{err: err}
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "The GitHub App %q is registered and its credentials are stored.\n\nNext, install it on the repositories the agents may work in:\n%s/installations/new\n\nYou can close this tab; the terminal lists the remaining steps.\n", app.Slug, app.HTMLURL)
	g.result <- flowResult{app: app}
}

// complete exchanges the one-time code and stores the credentials.
func (g *GitHub) complete(ctx context.Context, code string) (*GitHubApp, error) {
	ac, _, err := g.gh.Apps.CompleteAppManifest(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("exchanging the manifest code with GitHub (codes expire after an hour and work once): %w", err)
	}
	app := &GitHubApp{
		ID:            ac.GetID(),
		Slug:          ac.GetSlug(),
		Name:          ac.GetName(),
		HTMLURL:       ac.GetHTMLURL(),
		Owner:         ac.GetOwner().GetLogin(),
		PrivateKeyPEM: []byte(ac.GetPEM()),
		WebhookSecret: ac.GetWebhookSecret(),
		ClientID:      ac.GetClientID(),
		ClientSecret:  ac.GetClientSecret(),
	}
	var missing []string
	if app.ID <= 0 {
		missing = append(missing, "id")
	}
	if len(app.PrivateKeyPEM) == 0 {
		missing = append(missing, "pem")
	}
	if app.WebhookSecret == "" {
		missing = append(missing, "webhook_secret")
	}

	if len(missing) > 0 {
		return nil, fmt.Errorf("GitHub's answer lacks %s", strings.Join(missing, ", "))
	}
	if app.HTMLURL == "" {
		app.HTMLURL = strings.TrimRight(g.cfg.WebURL, "/") + "/apps/" + app.Slug
	}
	site := AppSite{APIURL: g.cfg.APIURL, WebURL: g.cfg.WebURL, PublicURL: g.cfg.PublicURL}
	if err := WriteGitHubAppFile(g.cfg.DataDir, app, site, g.cfg.Overwrite, g.cfg.Now()); err != nil {
		return nil, errors.Join(
			fmt.Errorf("the App %q (id %d) was created on GitHub but its credentials could not be stored: %w", app.Slug, app.ID, err),
			errors.New("generate a new private key on the App's settings page and configure it by hand, or delete the App and run setup again"))
	}
	return app, nil
}

func (g *GitHub) printNextSteps(out io.Writer, app *GitHubApp) {
	owner := app.Owner
	if owner == "" {
		owner = "your account"
	}
	fmt.Fprintf(out, "\nRegistered the GitHub App %q (id %d), owned by %s: %s\n", app.Slug, app.ID, owner, app.HTMLURL)
	fmt.Fprintf(out, "Stored its id, private key, webhook secret and OAuth client in %s and %s (mode 0600).\n\n",
		joinPath(g.cfg.DataDir, GitHubAppEnvFile), joinPath(g.cfg.DataDir, GitHubAppKeyFile))
	fmt.Fprintf(out, "Next steps:\n")
	fmt.Fprintf(out, "  1. Install the App on the repositories the agents may work in:\n       %s/installations/new\n", app.HTMLURL)
	fmt.Fprintf(out, "  2. Make sure GitHub can reach %s/webhooks/github.\n", strings.TrimRight(g.cfg.PublicURL, "/"))
	fmt.Fprintf(out, "  3. Start or restart `superagent serve` with SUPERAGENT_DATA_DIR=%s. It reads %s when\n", g.cfg.DataDir, GitHubAppEnvFile)
	fmt.Fprintf(out, "     SUPERAGENT_GITHUB_APP_ID, SUPERAGENT_GITHUB_PRIVATE_KEY and SUPERAGENT_GITHUB_WEBHOOK_SECRET are unset.\n")
	if app.ClientID != "" && app.ClientSecret != "" {
		fmt.Fprintf(out, "  4. Sign in to the panel with GitHub at %s/admin/signin: set SUPERAGENT_ADMIN_GITHUB_LOGINS to the\n", strings.TrimRight(g.cfg.PublicURL, "/"))
		fmt.Fprintf(out, "     logins that may change settings (GitHub sends them back to %s).\n", OAuthCallbackURL(g.cfg.PublicURL))
	} else {
		// The App works without its OAuth client; only the sign-in waits.
		fmt.Fprintf(out, "  4. GitHub's answer carried no OAuth client, so signing in with GitHub is off: generate a client secret on\n")
		fmt.Fprintf(out, "     %s's settings page and set SUPERAGENT_GITHUB_CLIENT_ID and SUPERAGENT_GITHUB_CLIENT_SECRET.\n", app.Slug)
	}
	fmt.Fprintf(out, "  5. Run `superagent doctor` to check that the App can mint installation tokens.\n")
}

func joinPath(dir, name string) string {
	return strings.TrimRight(dir, "/") + "/" + name
}
