package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/superagent-dev/superagent/executor/repoenv"
)

// mcpServers lists each repository's MCP servers: those saved in the
// panel, and the tools each server offered when the repository's last
// Ticket started it. Listing tools otherwise means starting the servers
// in a Ticket's sandbox, which the doctor does not do; a repository's
// .superagent/mcp.json is read only when a Ticket starts.
func (d *doctor) mcpServers(ctx context.Context) Result {
	if d.db == nil {
		return skip("not checked: the database is unreachable")
	}
	st := repoenv.New(d.db, nil, nil)
	panel, err := st.PanelMCP(ctx, d.db, "")
	if err != nil {
		return warn("run `superagent migrate`", "cannot read the MCP servers: %v", err)
	}
	seen, err := st.MCPSeenList(ctx, d.db, "")
	if err != nil {
		return warn("run `superagent migrate`", "cannot read the MCP servers: %v", err)
	}
	repos := map[string][]string{}
	for _, p := range panel {
		c, err := repoenv.ParseMCP([]byte(p.Config))
		if err != nil {
			return warn("fix the repository's MCP servers on the panel's Setup page", "%s: %v", p.Repo, err)
		}
		for _, name := range c.Names() {
			if !slices.ContainsFunc(seen, func(s repoenv.MCPSeen) bool { return s.Repo == p.Repo && s.Server == name }) {
				repos[p.Repo] = append(repos[p.Repo], name+" (panel; not started by a Ticket yet)")
			}
		}
	}
	problems := 0
	for _, s := range seen {
		line := fmt.Sprintf("%s (%s, Ticket %d): ", s.Server, s.Source, s.TicketID)
		if len(s.Tools) > 0 {
			line += strings.Join(s.Tools, ", ")
		} else {
			line += "no tools"
		}
		if s.Problem != "" {
			problems++
			line += "; " + s.Problem
		}
		repos[s.Repo] = append(repos[s.Repo], line)
	}
	const note = "a repository's .superagent/mcp.json is read, and its servers started, when a Ticket starts"
	if len(repos) == 0 {
		return ok("no repository has MCP servers in the panel or started by a Ticket; %s", note)
	}
	var parts []string
	for _, repo := range slices.Sorted(maps.Keys(repos)) {
		parts = append(parts, repo+": "+strings.Join(repos[repo], "; "))
	}
	msg := strings.Join(parts, " | ") + " (" + note + ")"
	if problems > 0 {
		return warn("see the repository's last Ticket page and the panel's Setup page", "%s", msg)
	}
	return ok("%s", msg)
}
