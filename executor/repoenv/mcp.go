package repoenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// MCPPath is where a repository declares its MCP servers, on its default
// branch.
const MCPPath = ".superagent/mcp.json"

// Bounds of an MCP configuration.
const (
	MaxMCPConfig  = 64 << 10
	MaxMCPServers = 8
	maxMCPArgs    = 64
	maxMCPValue   = 4 << 10
	maxMCPEnv     = 64
)

// MCPServer is one server of an MCP configuration: a command with its
// arguments and environment (stdio), or a URL (streamable HTTP) with
// headers. Env and header values may name repository secrets as
// ${secret:NAME}; nothing else is expanded.
type MCPServer struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Stdio reports whether s is a stdio server (else an HTTP one).
func (s MCPServer) Stdio() bool { return s.Command != "" }

// MCPConfig is the mcpServers object teams write for other agents.
type MCPConfig struct {
	Servers map[string]MCPServer `json:"mcpServers"`
}

// Names returns the servers' names, sorted.
func (c MCPConfig) Names() []string { return slices.Sorted(maps.Keys(c.Servers)) }

var (
	mcpServerName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	// SecretRef is how an env or header value names a repository secret.
	SecretRef = regexp.MustCompile(`\$\{secret:([A-Za-z_][A-Za-z0-9_]{0,127})\}`)
	anyRef    = regexp.MustCompile(`\$\{[^}]*\}`)
)

// ParseMCP reads and checks an MCP configuration. The error lists every
// problem; an empty text is an empty configuration.
func ParseMCP(data []byte) (MCPConfig, error) {
	var c MCPConfig
	if len(bytes.TrimSpace(data)) == 0 {
		return c, nil
	}
	if len(data) > MaxMCPConfig {
		return c, &InvalidError{fmt.Sprintf("the MCP configuration is %d bytes, over the limit of %d", len(data), MaxMCPConfig)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return MCPConfig{}, &InvalidError{"the MCP configuration is not an object {\"mcpServers\": {name: {command, args, env} or {url, headers}}}: " + err.Error()}
	}
	var problems []string
	if len(c.Servers) > MaxMCPServers {
		problems = append(problems, fmt.Sprintf("%d servers, over the limit of %d", len(c.Servers), MaxMCPServers))
	}
	for _, name := range c.Names() {
		for _, p := range c.Servers[name].problems() {
			problems = append(problems, fmt.Sprintf("server %q: %s", name, p))
		}
		if !mcpServerName.MatchString(name) {
			problems = append(problems, fmt.Sprintf("server %q: a name is 1 to 32 letters, digits, _ or -", name))
		}
	}
	if len(problems) > 0 {
		return MCPConfig{}, &InvalidError{"the MCP configuration has problems: " + strings.Join(problems, "; ")}
	}
	return c, nil
}

func (s MCPServer) problems() []string {
	var p []string
	switch {
	case s.Command != "" && s.URL != "":
		p = append(p, "has both command and url; a server is one or the other")
	case s.Command == "" && s.URL == "":
		p = append(p, "needs a command (stdio) or a url (HTTP)")
	case s.Command != "":
		if len(s.Headers) > 0 {
			p = append(p, "headers are for HTTP servers")
		}
		if len(s.Args) > maxMCPArgs {
			p = append(p, fmt.Sprintf("more than %d args", maxMCPArgs))
		}
		for _, a := range append([]string{s.Command}, s.Args...) {
			if len(a) > maxMCPValue || strings.ContainsRune(a, 0) {
				p = append(p, fmt.Sprintf("an argument is over %d bytes or holds a NUL byte", maxMCPValue))
				break
			}
		}
	default:
		if len(s.Args) > 0 || len(s.Env) > 0 {
			p = append(p, "args and env are for stdio servers")
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" || u.User != nil {
			p = append(p, fmt.Sprintf("url %q is not an http(s) URL without credentials", s.URL))
		}
	}
	for _, kv := range []struct {
		what string
		m    map[string]string
	}{{"env", s.Env}, {"header", s.Headers}} {
		if len(kv.m) > maxMCPEnv {
			p = append(p, fmt.Sprintf("more than %d %s entries", maxMCPEnv, kv.what))
		}
		for _, k := range slices.Sorted(maps.Keys(kv.m)) {
			v := kv.m[k]
			if kv.what == "env" {
				if err := CheckName(k, nil); err != nil {
					p = append(p, "env "+err.Error())
				}
			} else if k == "" || strings.ContainsAny(k, ":\r\n ") {
				p = append(p, fmt.Sprintf("header %q is not a header name", k))
			}
			if len(v) > maxMCPValue || strings.ContainsAny(v, "\x00\r\n") {
				p = append(p, fmt.Sprintf("%s %s: the value is over %d bytes or holds a NUL or line break", kv.what, k, maxMCPValue))
			}
			if rest := SecretRef.ReplaceAllString(v, ""); anyRef.MatchString(rest) {
				p = append(p, fmt.Sprintf("%s %s: only ${secret:NAME} is expanded (a repository secret); the service's own environment never reaches a server", kv.what, k))
			}
		}
	}
	return p
}

// Expand replaces each ${secret:NAME} of v with the secret's value from
// secrets; it returns the names it did not find.
func Expand(v string, secrets map[string]string) (string, []string) {
	var missing []string
	out := SecretRef.ReplaceAllStringFunc(v, func(ref string) string {
		name := SecretRef.FindStringSubmatch(ref)[1]
		val, ok := secrets[name]
		if !ok {
			missing = append(missing, name)
		}
		return val
	})
	return out, missing
}

// MergeMCP is the configuration a Ticket uses: the repository file's
// servers and the panel's, the panel's winning where both name a server.
func MergeMCP(file, panel MCPConfig) MCPConfig {
	out := MCPConfig{Servers: map[string]MCPServer{}}
	maps.Copy(out.Servers, file.Servers)
	maps.Copy(out.Servers, panel.Servers)
	return out
}

// PanelMCP is a repository's MCP configuration as the panel saved it.
type PanelMCP struct {
	Repo      string    `json:"repo"`
	Config    string    `json:"config"`
	UpdatedAt time.Time `json:"updated_at"`
	UpdatedBy string    `json:"updated_by"`
}

// PanelMCP returns the panel's MCP configuration of repo, or every
// repository's when repo is "".
func (s *Store) PanelMCP(ctx context.Context, q db.Querier, repo string) ([]PanelMCP, error) {
	rows, err := q.Query(ctx, `SELECT repo, config, updated_at, updated_by FROM repo_mcp WHERE $1 = '' OR repo = $1 ORDER BY repo`, repo)
	if err != nil {
		return nil, fmt.Errorf("reading the MCP configuration: %w", err)
	}
	defer rows.Close()
	out := []PanelMCP{}
	for rows.Next() {
		var p PanelMCP
		if err := rows.Scan(&p.Repo, &p.Config, &p.UpdatedAt, &p.UpdatedBy); err != nil {
			return nil, fmt.Errorf("reading the MCP configuration: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// SetPanelMCP checks and saves repo's MCP configuration; an empty one
// (no servers) removes it.
func (s *Store) SetPanelMCP(ctx context.Context, q db.Querier, repo, config, actor string) error {
	if err := CheckRepo(repo); err != nil {
		return err
	}
	c, err := ParseMCP([]byte(config))
	if err != nil {
		return err
	}
	if len(c.Servers) == 0 {
		_, err = q.Exec(ctx, `DELETE FROM repo_mcp WHERE repo = $1`, repo)
	} else {
		_, err = q.Exec(ctx, `INSERT INTO repo_mcp (repo, config, updated_at, updated_by) VALUES ($1, $2, $3, $4)
			ON CONFLICT (repo) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
			repo, config, s.now().UTC(), actor)
	}
	if err != nil {
		return fmt.Errorf("saving the MCP configuration of %s: %w", repo, err)
	}
	return nil
}

// PanelMCPConfig returns repo's panel configuration, parsed.
func (s *Store) PanelMCPConfig(ctx context.Context, q db.Querier, repo string) (MCPConfig, error) {
	var config string
	err := q.QueryRow(ctx, `SELECT config FROM repo_mcp WHERE repo = $1`, repo).Scan(&config)
	if errors.Is(err, db.ErrNoRows) {
		return MCPConfig{}, nil
	}
	if err != nil {
		return MCPConfig{}, fmt.Errorf("reading the MCP configuration of %s: %w", repo, err)
	}
	return ParseMCP([]byte(config))
}

// Sources of an MCP server.
const (
	MCPFromRepository = "repository"
	MCPFromPanel      = "panel"
)

// MCPSeen is what a Ticket found when it started one server.
type MCPSeen struct {
	Repo   string `json:"repo"`
	Server string `json:"server"`
	// Source is MCPFromRepository or MCPFromPanel.
	Source string `json:"source"`
	// Tools are the names offered to the Executor (mcp__server__tool).
	Tools []string `json:"tools"`
	// Problem says why the server or some of its tools are not offered.
	Problem  string    `json:"problem,omitempty"`
	TicketID int64     `json:"ticket_id"`
	SeenAt   time.Time `json:"seen_at"`
}

// RecordMCPSeen replaces what is known of repo's servers with seen.
func (s *Store) RecordMCPSeen(ctx context.Context, q db.Querier, repo string, seen []MCPSeen) error {
	if _, err := q.Exec(ctx, `DELETE FROM repo_mcp_seen WHERE repo = $1`, repo); err != nil {
		return fmt.Errorf("recording the MCP servers of %s: %w", repo, err)
	}
	for _, m := range seen {
		tools, err := json.Marshal(m.Tools)
		if err != nil {
			return fmt.Errorf("recording the MCP servers of %s: %w", repo, err)
		}
		if m.SeenAt.IsZero() {
			m.SeenAt = s.now()
		}
		if _, err := q.Exec(ctx, `INSERT INTO repo_mcp_seen (repo, server, source, tools, problem, ticket_id, seen_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, repo, m.Server, m.Source, string(tools), m.Problem, m.TicketID, m.SeenAt.UTC()); err != nil {
			return fmt.Errorf("recording MCP server %s of %s: %w", m.Server, repo, err)
		}
	}
	return nil
}

// MCPSeenList returns what the last Ticket of repo (every repository's
// when repo is "") found of its servers.
func (s *Store) MCPSeenList(ctx context.Context, q db.Querier, repo string) ([]MCPSeen, error) {
	rows, err := q.Query(ctx, `SELECT repo, server, source, tools, problem, ticket_id, seen_at FROM repo_mcp_seen
		WHERE $1 = '' OR repo = $1 ORDER BY repo, server`, repo)
	if err != nil {
		return nil, fmt.Errorf("listing the MCP servers seen: %w", err)
	}
	defer rows.Close()
	out := []MCPSeen{}
	for rows.Next() {
		var m MCPSeen
		var tools string
		if err := rows.Scan(&m.Repo, &m.Server, &m.Source, &tools, &m.Problem, &m.TicketID, &m.SeenAt); err != nil {
			return nil, fmt.Errorf("listing the MCP servers seen: %w", err)
		}
		if err := json.Unmarshal([]byte(tools), &m.Tools); err != nil {
			return nil, fmt.Errorf("listing the MCP servers seen: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
