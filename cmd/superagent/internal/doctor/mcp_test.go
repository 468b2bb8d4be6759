package doctor_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/cmd/superagent/internal/doctor"
	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/internal/db"
)

// The doctor lists each repository's MCP servers: the panel's, and the
// tools each offered when the repository's last Ticket started it, with
// the problems it found; it says the repository's file is read when a
// Ticket starts.
func TestMCPServers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	results, _, _ := run(t, e.cfg)
	requireResult(t, results, "MCP servers", doctor.OK, "no repository has MCP servers", "")

	ctx := context.Background()
	d, err := db.Open(ctx, e.cfg.DatabaseURL, db.Options{MaxConns: 1})
	require.NoError(t, err)
	st := repoenv.New(d, nil, nil)
	require.NoError(t, st.SetPanelMCP(ctx, d, "acme/web", `{"mcpServers": {"docs": {"url": "https://docs.example.com/mcp"}, "lint": {"command": "lint-mcp"}}}`, "ada"))
	require.NoError(t, st.RecordMCPSeen(ctx, d, "acme/web", []repoenv.MCPSeen{{Repo: "acme/web", Server: "facts", Source: repoenv.MCPFromRepository,
		Tools: []string{"mcp__facts__lookup"}, Problem: `tools not offered: "broken": malformed input schema`, TicketID: 4}}))
	require.NoError(t, d.Close())

	results, _, _ = run(t, e.cfg)
	requireResult(t, results, "MCP servers", doctor.Warn, "acme/web: docs (panel; not started by a Ticket yet); lint (panel; not started by a Ticket yet); "+
		`facts (repository, Ticket 4): mcp__facts__lookup; tools not offered: "broken"`, "Setup page")
	requireResult(t, results, "MCP servers", doctor.Warn, ".superagent/mcp.json is read, and its servers started, when a Ticket starts", "")
}
