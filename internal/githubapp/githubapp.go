// Package githubapp authenticates superagent as a GitHub App: it signs App
// JWTs, exchanges them for installation tokens (through ghinstallation) and
// hands out go-github clients per installation, all against a configurable
// API root so that GitHub Enterprise and the test fake work alike. It also
// retries HTTP 429 answers, which go-github v66 does not treat as rate
// limits, paces each installation's content-creating requests below
// GitHub's secondary limits, and exports metrics of all of it.
package githubapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/retry"
)

// DefaultBaseURL is the REST API root of github.com.
const DefaultBaseURL = "https://api.github.com"

// Config configures a Client. The zero value of each optional field is the
// documented default.
type Config struct {
	// AppID is the GitHub App's id. Required.
	AppID int64
	// PrivateKey is the App's RSA private key in PEM form. Required.
	PrivateKey []byte
	// BaseURL is the REST API root: https://api.github.com (the default) or
	// https://<host>/api/v3 on GitHub Enterprise Server.
	BaseURL string
	// Transport carries the requests. Default http.DefaultTransport.
	Transport http.RoundTripper
	// MaxRetries bounds the retries of one request answered 429. Default 3.
	MaxRetries int
	// MaxRetryWait is the longest wait for one retry; a request asked to wait
	// longer gets the 429 answer. Default one minute.
	MaxRetryWait time.Duration
	// Wait pauses between retries and for write pacing. Default: a timer
	// that ends early with ctx's error when ctx ends.
	Wait func(ctx context.Context, d time.Duration) error
	// Now is the clock of the write pacing and of rate-limit reset times.
	// Default time.Now.
	Now func() time.Time
	// WritesPerMinute and WritesPerHour pace each installation's
	// content-creating requests (POST, PATCH, PUT, DELETE) with token
	// buckets, below GitHub's secondary limits of about 80 a minute and
	// 500 an hour. Reads are not paced. Default 80 and 500; negative turns
	// that budget off.
	WritesPerMinute int
	WritesPerHour   int
	// SharedPacing, when set, keeps the write budgets in this database, so
	// that every process using it paces one installation's writes
	// together. Default: each process keeps its own, in memory (right for
	// one process, as on SQLite).
	SharedPacing *db.DB
	// Registerer receives the superagent_github_* metrics. Default: none.
	// Clients sharing a Registerer share the metrics.
	Registerer prometheus.Registerer
}

// Client makes authenticated GitHub clients for one App.
type Client struct {
	cfg     Config
	base    *url.URL
	apps    *ghinstallation.AppsTransport
	retry   http.RoundTripper
	metrics *metrics
	app     *github.Client
	mu      sync.Mutex
	perInst map[int64]*installation
	scoped  map[string]*Scoped
}

type installation struct {
	tr     *ghinstallation.Transport
	client *github.Client
	writes pacer
}

// New checks the configuration and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.AppID <= 0 {
		return nil, errors.New("creating GitHub App client: no App id")
	}
	if len(cfg.PrivateKey) == 0 {
		return nil, errors.New("creating GitHub App client: no private key")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/") + "/")
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("creating GitHub App client: API URL %q is not an http(s) URL", cfg.BaseURL)
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 3
	}
	if cfg.MaxRetryWait == 0 {
		cfg.MaxRetryWait = time.Minute
	}
	if cfg.Wait == nil {
		cfg.Wait = retry.Sleep
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WritesPerMinute == 0 {
		cfg.WritesPerMinute = 80
	}
	if cfg.WritesPerHour == 0 {
		cfg.WritesPerHour = 500
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("creating GitHub App client: %w", err)
	}
	retrying := &retryTransport{next: cfg.Transport, now: cfg.Now, metrics: m,
		policy: retry.Policy{Retries: cfg.MaxRetries, MaxWait: cfg.MaxRetryWait, Sleep: cfg.Wait}}
	apps, err := ghinstallation.NewAppsTransport(retrying, cfg.AppID, cfg.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("creating GitHub App client: reading private key: %w", err)
	}
	apps.BaseURL = strings.TrimRight(base.String(), "/")
	c := &Client{cfg: cfg, base: base, apps: apps, retry: retrying, metrics: m, perInst: map[int64]*installation{}, scoped: map[string]*Scoped{}}
	c.app = c.newGitHub(apps)
	return c, nil
}

func (c *Client) newGitHub(tr http.RoundTripper) *github.Client {
	gh := github.NewClient(&http.Client{Transport: tr})
	u := *c.base
	gh.BaseURL = &u
	up := *c.base
	gh.UploadURL = &up
	return gh
}

// BaseURL is the REST API root the clients use, ending in a slash.
func (c *Client) BaseURL() string { return c.base.String() }

// AppID is the App's id.
func (c *Client) AppID() int64 { return c.cfg.AppID }

// App returns a client authenticated as the App itself (JWT), for the
// /app endpoints.
func (c *Client) App() *github.Client { return c.app }

// Installation returns a client authenticated as the installation; tokens
// are fetched on first use and refreshed before they expire.
func (c *Client) Installation(id int64) *github.Client {
	return c.installation(id).client
}

func (c *Client) installation(id int64) *installation {
	c.mu.Lock()
	defer c.mu.Unlock()
	if in, ok := c.perInst[id]; ok {
		return in
	}
	tr := ghinstallation.NewFromAppsTransport(c.apps, id)
	tr.BaseURL = c.apps.BaseURL
	// Without options ghinstallation posts the body "null", which GitHub's
	// description of POST .../access_tokens does not allow (an object).
	tr.InstallationTokenOptions = &github.InstallationTokenOptions{}
	writes := c.newPacer(id)
	top := &installationTransport{label: formatInstallation(id), next: tr, wait: c.cfg.Wait, metrics: c.metrics, writes: writes}
	in := &installation{tr: tr, client: c.newGitHub(top), writes: writes}
	c.perInst[id] = in
	return in
}

// InstallationToken returns a current installation access token, for git
// over HTTPS. Never show it to a model or write it to a transcript.
func (c *Client) InstallationToken(ctx context.Context, id int64) (string, error) {
	tok, err := c.installation(id).tr.Token(ctx)
	if err != nil {
		return "", fmt.Errorf("getting token of installation %d: %w", id, err)
	}
	return tok, nil
}

// Slug reads the App's slug (its bot account is "<slug>[bot]").
func (c *Client) Slug(ctx context.Context) (string, error) {
	app, _, err := c.app.Apps.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("reading the GitHub App: %w", err)
	}
	return app.GetSlug(), nil
}

// Permission reads login's role on owner/repo through the installation:
// admin, maintain, write, triage, read or none (a non-collaborator).
// GitHub's permission field folds maintain into write and triage into
// read; role_name carries the role itself, or the name of an
// organization's custom role, which then reads as the permission field's
// base level.
func (c *Client) Permission(ctx context.Context, installationID int64, owner, repo, login string) (string, error) {
	level, resp, err := c.Installation(installationID).Repositories.GetPermissionLevel(ctx, owner, repo, login)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return "none", nil
		}
		return "", fmt.Errorf("reading permission of %s on %s/%s: %w", login, owner, repo, err)
	}
	if r := level.GetRoleName(); repositoryRoles[r] {
		return r, nil
	}
	if p := level.GetPermission(); p != "" {
		return p, nil
	}
	return "none", nil
}

// repositoryRoles are GitHub's built-in repository roles.
var repositoryRoles = map[string]bool{"admin": true, "maintain": true, "write": true, "triage": true, "read": true, "none": true}
