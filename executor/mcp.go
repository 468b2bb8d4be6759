package executor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// Bounds of a repository's MCP servers in one Executor job.
const (
	// MaxMCPTools is how many MCP tools one job offers, over all servers.
	MaxMCPTools = 64
	// DefaultMCPTimeout is the default of Config.MCPTimeout.
	DefaultMCPTimeout = 60 * time.Second
	// MaxMCPMessage is the largest message a server may send; a longer
	// one cuts the server off.
	MaxMCPMessage = 1 << 20
	// MaxMCPBytes is what one server may send in one job in all.
	MaxMCPBytes = 32 << 20
	// maxMCPResult is how much of a result the model reads, in
	// characters.
	maxMCPResult = 16 << 10
	// maxMCPDescription is how much of a tool's description it reads.
	maxMCPDescription = 1 << 10
	// mcpPrefix begins the name of every MCP tool.
	mcpPrefix = "mcp__"
)

// mcpServers are the MCP servers one Executor job started; they end with
// the job.
type mcpServers struct {
	servers []*mcpServer
}

// close ends every server.
func (s *mcpServers) close() {
	if s == nil {
		return
	}
	for _, srv := range s.servers {
		srv.close()
	}
}

// tools are the servers' tools, as the Executor offers them.
func (s *mcpServers) tools() []session.Tool {
	if s == nil {
		return nil
	}
	var out []session.Tool
	for _, srv := range s.servers {
		out = append(out, srv.tools...)
	}
	return out
}

// startMCP starts the MCP servers of the Ticket's repository (its
// .superagent/mcp.json on the default branch and the panel's, the
// panel's winning by name) and lists their tools. A server that cannot be
// started or listed is left out, and the Session is told why; what each
// server offered is recorded for the panel and doctor.
func (e *Executor) startMCP(ctx context.Context, t tickets.Ticket, sid int64) (*mcpServers, error) {
	ws, err := e.deps.Workspaces.Open(t.ID)
	if err != nil {
		return nil, err
	}
	var problems []string
	var file repoenv.MCPConfig
	data, ok, err := ws.BaseFile(ctx, repoenv.MCPPath, repoenv.MaxMCPConfig)
	switch {
	case errors.Is(err, workspace.ErrTooLarge):
		problems = append(problems, fmt.Sprintf("%s is over %d bytes and was not read", repoenv.MCPPath, repoenv.MaxMCPConfig))
	case err != nil:
		return nil, err
	case ok:
		if file, err = repoenv.ParseMCP(data); err != nil {
			problems = append(problems, repoenv.MCPPath+" was not used: "+err.Error())
		}
	}
	panel, err := e.deps.RepoEnv.PanelMCPConfig(ctx, e.deps.DB, t.Repo)
	if err != nil {
		var invalid *repoenv.InvalidError
		if !errors.As(err, &invalid) {
			return nil, err
		}
		problems = append(problems, "the panel's MCP configuration was not used: "+err.Error())
	}
	cfg := repoenv.MergeMCP(file, panel)
	if len(cfg.Servers) == 0 && len(problems) == 0 {
		return nil, nil
	}
	secrets := map[string]string{}
	if len(cfg.Servers) > 0 {
		env, values, err := e.deps.RepoEnv.SecretEnv(ctx, e.deps.DB, t.Repo)
		if err != nil {
			e.cfg.Logger.Warn("starting MCP servers without the repository's secrets", "ticket", t.ID, "repo", t.Repo, "error", err)
		}
		e.deps.Scrubber.Add(values...)
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			secrets[k] = v
		}
	}
	set := &mcpServers{}
	var seen []repoenv.MCPSeen
	budget := MaxMCPTools
	for _, name := range cfg.Names() {
		source := repoenv.MCPFromRepository
		if _, ok := panel.Servers[name]; ok {
			source = repoenv.MCPFromPanel
		}
		srv, problem := e.startServer(ctx, t, ws, name, cfg.Servers[name], secrets, &budget)
		m := repoenv.MCPSeen{Repo: t.Repo, Server: name, Source: source, Tools: []string{}, Problem: problem, TicketID: t.ID}
		if srv != nil {
			set.servers = append(set.servers, srv)
			for _, tool := range srv.tools {
				m.Tools = append(m.Tools, tool.Name)
			}
			e.cfg.Logger.Info("mcp server started", "ticket", t.ID, "session", sid, "repo", t.Repo, "server", name,
				"source", source, "tools", len(srv.tools))
		}
		if problem != "" {
			e.cfg.Logger.Warn("mcp server problem", "ticket", t.ID, "session", sid, "repo", t.Repo, "server", name,
				"source", source, "problem", problem)
			problems = append(problems, fmt.Sprintf("MCP server %q (%s): %s", name, source, problem))
		}
		seen = append(seen, m)
	}
	if err := e.deps.RepoEnv.RecordMCPSeen(ctx, e.deps.DB, t.Repo, seen); err != nil {
		set.close()
		return nil, err
	}
	if len(problems) > 0 {
		note := "host: the repository's MCP servers: " + e.deps.Scrubber.Scrub(strings.Join(problems, "; ")) + "."
		if _, err := e.sessions.Append(ctx, e.deps.DB, sid, note); err != nil {
			set.close()
			return nil, err
		}
	}
	return set, nil
}

// startServer starts one server and lists its tools, taking at most
// *budget of them. A nil server comes with the reason.
func (e *Executor) startServer(ctx context.Context, t tickets.Ticket, ws *workspace.Workspace, name string, cfg repoenv.MCPServer,
	secrets map[string]string, budget *int) (*mcpServer, string) {
	var missing []string
	expand := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			var miss []string
			out[k], miss = repoenv.Expand(v, secrets)
			missing = append(missing, miss...)
		}
		return out
	}
	env, headers := expand(cfg.Env), expand(cfg.Headers)
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, "not started: the repository has no secret named " + strings.Join(slices.Compact(missing), ", ")
	}
	srv := &mcpServer{name: name, timeout: e.cfg.MCPTimeout, scrub: e.deps.Scrubber.Scrub}
	var transport mcp.Transport
	if cfg.Stdio() {
		// The setup cache as commands see it, and only the variables the
		// server's env names: not every secret the commands get.
		cache := ""
		if o, ok, err := e.deps.RepoEnv.Ticket(ctx, e.deps.DB, t.ID); err != nil {
			return nil, "not started: " + err.Error()
		} else if ok && o.OK {
			cache = ws.SetupCache(t.Repo)
		}
		view := ws.With(cache, nil)
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(env)) {
			kv = append(kv, k+"="+env[k])
		}
		// The server lives as long as the job, not as long as this call.
		proc, err := view.Start(context.WithoutCancel(ctx), append([]string{cfg.Command}, cfg.Args...), kv)
		if err != nil {
			return nil, "not started: " + err.Error()
		}
		srv.proc = proc
		srv.out = &cappedReader{r: proc.Stdout, maxLine: MaxMCPMessage, maxTotal: MaxMCPBytes, onOver: func() { _ = proc.Close() }}
		transport = &mcp.IOTransport{Reader: srv.out, Writer: proc.Stdin, MaxLineLength: MaxMCPMessage + 1}
	} else {
		tr, why := e.egressTransport(t.ID, cfg.URL)
		if why != "" {
			return nil, "not started: " + why
		}
		srv.out = &cappedReader{maxLine: -1, maxTotal: MaxMCPBytes}
		srv.httpTr = tr
		transport = &mcp.StreamableClientTransport{Endpoint: cfg.URL, MaxRetries: -1, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: &mcpHTTP{base: tr, headers: headers, counted: srv.out}, Timeout: e.cfg.MCPTimeout,
				// Its headers may carry a secret meant for this URL only.
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "superagent", Version: "1"}, nil)
	sctx, cancel := context.WithTimeout(ctx, e.cfg.MCPTimeout)
	defer cancel()
	cs, err := client.Connect(sctx, transport, nil)
	if err != nil {
		srv.close()
		return nil, "not started: " + srv.failure(ctx, sctx, err)
	}
	srv.cs = cs
	tools, skipped, err := srv.list(sctx, budget)
	if err != nil {
		srv.close()
		return nil, "its tools could not be listed: " + srv.failure(ctx, sctx, err)
	}
	srv.tools = tools
	var problem string
	if len(skipped) > 0 {
		problem = "tools not offered: " + strings.Join(skipped, "; ")
	}
	return srv, problem
}

// egressTransport is how the service reaches an HTTP server for the
// Ticket: only through the sandbox's egress list, with its checks.
func (e *Executor) egressTransport(ticketID int64, raw string) (*http.Transport, string) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "its url does not parse"
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return nil, "its url's port does not parse"
		}
	}
	tr, err := e.deps.Workspaces.EgressTransport(ticketID)
	if errors.Is(err, workspace.ErrNoEgressList) {
		return nil, "HTTP MCP servers are reached only through the sandbox's egress list (SUPERAGENT_SANDBOX_EGRESS), and this deployment has none"
	}
	if err != nil {
		return nil, err.Error()
	}
	if !e.deps.Workspaces.EgressAllows(u.Hostname(), port) {
		return nil, fmt.Sprintf("%s is not in the sandbox's egress list (SUPERAGENT_SANDBOX_EGRESS)", net.JoinHostPort(u.Hostname(), strconv.Itoa(port)))
	}
	return tr, ""
}

// mcpHTTP adds a server's headers to each request and counts what comes
// back against its byte cap.
type mcpHTTP struct {
	base    http.RoundTripper
	headers map[string]string
	counted *cappedReader
}

func (m *mcpHTTP) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range m.headers {
		r.Header.Set(k, v)
	}
	res, err := m.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	res.Body = &countedBody{ReadCloser: res.Body, c: m.counted}
	return res, nil
}

var mcpNameChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// mcpToolName is the name the Executor offers a server's tool under: the
// server's and the tool's names with other characters made _, at most
// 64 characters in all.
func mcpToolName(server, tool string) string {
	name := mcpPrefix + mcpNameChars.ReplaceAllString(server, "_") + "__" + mcpNameChars.ReplaceAllString(tool, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}
