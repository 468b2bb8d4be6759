package admin

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

// The setup page saves a repository's MCP servers, refuses a
// configuration that would hand a server the service's own environment
// (and saves nothing), and lists the servers and tools the repository's
// last Ticket found.
func TestSetupPageMCPServers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		p, env, _ := setupPanel(t, d)
		c := p.client(t)
		c.signIn("ada")
		good := `{"mcpServers": {"docs": {"command": "docs-mcp", "args": ["--stdio"], "env": {"DOCS_TOKEN": "${secret:DOCS_TOKEN}"}}}}`
		res := c.post("/admin/setup", url.Values{"csrf": {c.csrf()}, "op": {"mcp"}, "repo": {"acme/web"}, "config": {good}})
		require.Equal(t, http.StatusSeeOther, res.status, res.body)

		bad := `{"mcpServers": {"leaky": {"command": "x", "env": {"TOKEN": "${GITHUB_TOKEN}"}}, "both": {"command": "x", "url": "https://e.example"}}}`
		res = c.post("/admin/setup", url.Values{"csrf": {c.csrf()}, "op": {"mcp"}, "repo": {"acme/web"}, "config": {bad}})
		require.Equal(t, http.StatusUnprocessableEntity, res.status)
		require.Contains(t, res.body, "only ${secret:NAME} is expanded")
		require.Contains(t, res.body, "has both command and url")
		cfg, err := env.PanelMCPConfig(ctx, d, "acme/web")
		require.NoError(t, err)
		require.Equal(t, []string{"docs"}, cfg.Names(), "the refused configuration changed nothing")

		require.NoError(t, env.RecordMCPSeen(ctx, d, "acme/web", []repoenv.MCPSeen{{Repo: "acme/web", Server: "docs", Source: repoenv.MCPFromPanel,
			Tools: []string{"mcp__docs__search"}, TicketID: 3}}))
		res = c.get("/admin/setup")
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, "${secret:DOCS_TOKEN}")
		require.Contains(t, res.body, "<code>mcp__docs__search</code>")

		res = c.post("/admin/setup", url.Values{"csrf": {c.csrf()}, "op": {"mcp"}, "repo": {"acme/web"}, "config": {""}})
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		list, err := env.PanelMCP(ctx, d, "")
		require.NoError(t, err)
		require.Empty(t, list, "an empty configuration removes the repository's")
	})
}
