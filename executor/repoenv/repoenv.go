// Package repoenv stores what a repository's commands need beyond its
// code: the team's default setup script (used when the repository has no
// .superagent/setup.sh), the repository's secrets for tests, and each
// Ticket's last setup outcome. The panel and the API write the first two;
// the Executor reads them and writes the third.
//
// A secret's value is sealed at rest with secret.Box and never read back
// by the panel or the API; only SecretEnv opens it, for a sandboxed
// command's environment.
package repoenv

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/secret"
)

// Store is the SQL of setup_default, repo_secrets and ticket_setups.
type Store struct {
	d   *db.DB
	box *secret.Box
	now func() time.Time
}

// New returns a Store. Without a box (no SUPERAGENT_SECRETS_KEY) secrets
// can be neither saved nor read; the rest works.
func New(d *db.DB, box *secret.Box, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{d: d, box: box, now: now}
}

// MaxDefaultScript is the largest team default setup script.
const MaxDefaultScript = 256 << 10

// DefaultScript is the team's default setup script.
type DefaultScript struct {
	Script    string    `json:"script"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	UpdatedBy string    `json:"updated_by,omitempty"`
}

// Default returns the team's default setup script; an empty Script when
// none is set.
func (s *Store) Default(ctx context.Context, q db.Querier) (DefaultScript, error) {
	var d DefaultScript
	err := q.QueryRow(ctx, `SELECT script, updated_at, updated_by FROM setup_default WHERE id = 1`).Scan(&d.Script, &d.UpdatedAt, &d.UpdatedBy)
	if errors.Is(err, db.ErrNoRows) {
		return DefaultScript{}, nil
	}
	if err != nil {
		return d, fmt.Errorf("reading the default setup script: %w", err)
	}
	return d, nil
}

// SetDefault saves the team's default setup script; an empty script
// removes it.
func (s *Store) SetDefault(ctx context.Context, q db.Querier, script, actor string) error {
	if len(script) > MaxDefaultScript {
		return &InvalidError{fmt.Sprintf("the script is %d bytes, over the limit of %d", len(script), MaxDefaultScript)}
	}
	if strings.ContainsRune(script, 0) {
		return &InvalidError{"the script contains a NUL byte"}
	}
	script = strings.ReplaceAll(script, "\r\n", "\n")
	var err error
	if strings.TrimSpace(script) == "" {
		_, err = q.Exec(ctx, `DELETE FROM setup_default WHERE id = 1`)
	} else {
		_, err = q.Exec(ctx, `INSERT INTO setup_default (id, script, updated_at, updated_by) VALUES (1, $1, $2, $3)
			ON CONFLICT (id) DO UPDATE SET script = excluded.script, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
			script, s.now().UTC(), actor)
	}
	if err != nil {
		return fmt.Errorf("saving the default setup script: %w", err)
	}
	return nil
}

// InvalidError is bad input: the message says what to fix.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

// ErrNoKey is returned when secrets are used without a key.
var ErrNoKey = errors.New("repository secrets need SUPERAGENT_SECRETS_KEY (32 random bytes, e.g. `openssl rand -base64 32`), which seals them at rest")

var (
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	repoRe  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$`)
)

// reserved are names the sandbox sets or the dynamic loader and shells
// obey; a secret may not replace them.
var reserved = []string{"PATH", "HOME", "LANG", "TMPDIR", "PWD", "SHELL", "USER", "IFS", "ENV", "BASH_ENV",
	"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy"}

// reservedPrefixes are prefixes of such names.
var reservedPrefixes = []string{"GIT_", "LD_", "SUPERAGENT_"}

// CheckName reports why name cannot be a secret's name, or nil. extra
// are more reserved names (the setup cache's variables).
func CheckName(name string, extra []string) error {
	if !envName.MatchString(name) {
		return &InvalidError{fmt.Sprintf("%q is not an environment variable name (letters, digits and _, not starting with a digit, at most 128)", name)}
	}
	if slices.Contains(reserved, name) || slices.Contains(extra, name) {
		return &InvalidError{fmt.Sprintf("%s is set by the sandbox; choose another name", name)}
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return &InvalidError{fmt.Sprintf("names starting with %s are reserved; choose another name", p)}
		}
	}
	return nil
}

// CheckRepo reports why repo is not an owner/name, or nil.
func CheckRepo(repo string) error {
	if !repoRe.MatchString(repo) || strings.Contains(repo, "..") {
		return &InvalidError{fmt.Sprintf("%q is not a repository (owner/name)", repo)}
	}
	return nil
}

// MaxSecretValue is the longest secret value.
const MaxSecretValue = 32 << 10

// SecretInfo is what is shown of a secret: never its value.
type SecretInfo struct {
	Repo      string    `json:"repo"`
	Name      string    `json:"name"`
	UpdatedAt time.Time `json:"updated_at"`
	UpdatedBy string    `json:"updated_by"`
}

// Secrets lists repo's secrets by name, or every repository's when repo
// is "".
func (s *Store) Secrets(ctx context.Context, q db.Querier, repo string) ([]SecretInfo, error) {
	rows, err := q.Query(ctx, `SELECT repo, name, updated_at, updated_by FROM repo_secrets
		WHERE $1 = '' OR repo = $1 ORDER BY repo, name`, repo)
	if err != nil {
		return nil, fmt.Errorf("listing secrets: %w", err)
	}
	defer rows.Close()
	out := []SecretInfo{}
	for rows.Next() {
		var i SecretInfo
		if err := rows.Scan(&i.Repo, &i.Name, &i.UpdatedAt, &i.UpdatedBy); err != nil {
			return nil, fmt.Errorf("listing secrets: %w", err)
		}
		out = append(out, i)
	}
	return out, rows.Err()
}

// SetSecret validates and saves repo's secret name, sealed. extra are more
// reserved names (workspace.CacheEnvNames).
func (s *Store) SetSecret(ctx context.Context, q db.Querier, repo, name, value, actor string, extra []string) error {
	if err := CheckRepo(repo); err != nil {
		return err
	}
	if err := CheckName(name, extra); err != nil {
		return err
	}
	switch {
	case len(value) < secret.MinLength:
		// Shorter values are not scrubbed: they would redact ordinary words.
		return &InvalidError{fmt.Sprintf("the value must be at least %d characters, so that it can be scrubbed from every output", secret.MinLength)}
	case len(value) > MaxSecretValue:
		return &InvalidError{fmt.Sprintf("the value is over %d bytes", MaxSecretValue)}
	case strings.ContainsRune(value, 0):
		return &InvalidError{"the value contains a NUL byte"}
	}
	if s.box == nil {
		return ErrNoKey
	}
	_, err := q.Exec(ctx, `INSERT INTO repo_secrets (repo, name, sealed, updated_at, updated_by) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (repo, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
		repo, name, s.box.Seal(value, label(repo, name)), s.now().UTC(), actor)
	if err != nil {
		return fmt.Errorf("saving secret %s of %s: %w", name, repo, err)
	}
	return nil
}

// DeleteSecret removes repo's secret name; it reports whether there was
// one.
func (s *Store) DeleteSecret(ctx context.Context, q db.Querier, repo, name string) (bool, error) {
	n, err := q.Exec(ctx, `DELETE FROM repo_secrets WHERE repo = $1 AND name = $2`, repo, name)
	if err != nil {
		return false, fmt.Errorf("deleting secret %s of %s: %w", name, repo, err)
	}
	return n > 0, nil
}

func label(repo, name string) string { return "repo_secrets:" + repo + ":" + name }

// SecretEnv opens repo's secrets for a sandboxed command: "NAME=value"
// each, and the values (for the Scrubber).
func (s *Store) SecretEnv(ctx context.Context, q db.Querier, repo string) (env, values []string, err error) {
	rows, err := q.Query(ctx, `SELECT name, sealed FROM repo_secrets WHERE repo = $1 ORDER BY name`, repo)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the secrets of %s: %w", repo, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, sealed string
		if err := rows.Scan(&name, &sealed); err != nil {
			return nil, nil, fmt.Errorf("reading the secrets of %s: %w", repo, err)
		}
		if s.box == nil {
			return nil, nil, ErrNoKey
		}
		v, err := s.box.Open(sealed, label(repo, name))
		if err != nil {
			return nil, nil, fmt.Errorf("opening secret %s of %s (was SUPERAGENT_SECRETS_KEY changed?): %w", name, repo, err)
		}
		env = append(env, name+"="+v)
		values = append(values, v)
	}
	return env, values, rows.Err()
}

// Setup sources.
const (
	SourceRepository = "repository"
	SourceDefault    = "default"
)

// Outcome is a Ticket's last setup.
type Outcome struct {
	TicketID int64 `json:"ticket_id"`
	// Source is SourceRepository or SourceDefault.
	Source       string `json:"source"`
	ScriptSHA256 string `json:"script_sha256"`
	Cached       bool   `json:"cached"`
	OK           bool   `json:"ok"`
	ExitCode     int    `json:"exit_code"`
	TimedOut     bool   `json:"timed_out"`
	OverQuota    bool   `json:"over_quota"`
	// Tail is the end of the output, scrubbed.
	Tail     string        `json:"output_tail"`
	Duration time.Duration `json:"duration_ns"`
	RanAt    time.Time     `json:"ran_at"`
}

// Record saves o as its Ticket's last setup.
func (s *Store) Record(ctx context.Context, q db.Querier, o Outcome) error {
	if o.RanAt.IsZero() {
		o.RanAt = s.now()
	}
	_, err := q.Exec(ctx, `INSERT INTO ticket_setups (ticket_id, source, script_sha256, cached, ok, exit_code, timed_out, over_quota, output_tail, duration_ms, ran_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (ticket_id) DO UPDATE SET source = excluded.source, script_sha256 = excluded.script_sha256, cached = excluded.cached,
			ok = excluded.ok, exit_code = excluded.exit_code, timed_out = excluded.timed_out, over_quota = excluded.over_quota,
			output_tail = excluded.output_tail, duration_ms = excluded.duration_ms, ran_at = excluded.ran_at`,
		o.TicketID, o.Source, o.ScriptSHA256, o.Cached, o.OK, o.ExitCode, o.TimedOut, o.OverQuota, o.Tail, o.Duration.Milliseconds(), o.RanAt.UTC())
	if err != nil {
		return fmt.Errorf("recording the setup of ticket %d: %w", o.TicketID, err)
	}
	return nil
}

// Ticket returns the Ticket's last setup; ok is false when none ran.
func (s *Store) Ticket(ctx context.Context, q db.Querier, ticketID int64) (o Outcome, ok bool, err error) {
	var ms int64
	err = q.QueryRow(ctx, `SELECT ticket_id, source, script_sha256, cached, ok, exit_code, timed_out, over_quota, output_tail, duration_ms, ran_at
		FROM ticket_setups WHERE ticket_id = $1`, ticketID).Scan(&o.TicketID, &o.Source, &o.ScriptSHA256, &o.Cached, &o.OK, &o.ExitCode,
		&o.TimedOut, &o.OverQuota, &o.Tail, &ms, &o.RanAt)
	if errors.Is(err, db.ErrNoRows) {
		return Outcome{}, false, nil
	}
	if err != nil {
		return o, false, fmt.Errorf("reading the setup of ticket %d: %w", ticketID, err)
	}
	o.Duration = time.Duration(ms) * time.Millisecond
	return o, true, nil
}

// Describe says in one line what the setup did, for the Session's
// Environment and the Ticket page.
func (o Outcome) Describe() string {
	what := "the repository's " + ".superagent/setup.sh"
	if o.Source == SourceDefault {
		what = "the team's default setup script"
	}
	switch {
	case o.OK && o.Cached:
		return what + " succeeded earlier for this repository; its cache was reused (it did not run again)"
	case o.OK:
		return fmt.Sprintf("%s ran and succeeded in %s", what, o.Duration.Round(time.Millisecond))
	case o.TimedOut:
		return fmt.Sprintf("%s failed: it timed out after %s", what, o.Duration.Round(time.Second))
	case o.OverQuota:
		return what + " failed: its cache passed its disk quota"
	default:
		return fmt.Sprintf("%s failed: exit code %d after %s", what, o.ExitCode, o.Duration.Round(time.Millisecond))
	}
}
