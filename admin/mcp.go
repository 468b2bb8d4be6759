package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
)

// actionSetMCP is the audit action of a repository's MCP configuration;
// its detail is the servers' names (the configuration names secrets,
// never holds them).
const actionSetMCP = "set_repo_mcp"

// mcpSection is the setup page's MCP part: the panel's configuration of
// each repository, and what the last Ticket of each repository found.
type mcpSection struct {
	Panel []repoenv.PanelMCP
	Seen  []repoenv.MCPSeen
}

func (a *Admin) mcpSection(r *http.Request) (mcpSection, error) {
	var s mcpSection
	var err error
	if s.Panel, err = a.deps.RepoEnv.PanelMCP(r.Context(), a.db, ""); err != nil {
		return s, err
	}
	s.Seen, err = a.deps.RepoEnv.MCPSeenList(r.Context(), a.db, "")
	return s, err
}

func (a *Admin) setMCP(r *http.Request, repo, config, actor string) error {
	ctx := r.Context()
	c, err := repoenv.ParseMCP([]byte(config))
	if err != nil {
		return err
	}
	return a.db.InTx(ctx, func(tx *db.Tx) error {
		if err := a.deps.RepoEnv.SetPanelMCP(ctx, tx, repo, config, actor); err != nil {
			return err
		}
		detail := strings.Join(c.Names(), ",")
		if detail == "" {
			detail = "removed"
		}
		return a.audit.record(ctx, tx, auditEntry{CreatedAt: a.cfg.Now(), Actor: actor, Action: actionSetMCP, Target: repo, Detail: detail})
	})
}

// apiMCP answers GET /repos/{owner}/{name}/mcp: the panel's
// configuration (an empty object when none) and the servers the last
// Ticket found.
func (a *Admin) apiMCP(w http.ResponseWriter, r *http.Request) error {
	st, repo, err := a.apiRepo(r)
	if err != nil {
		return err
	}
	c, err := st.PanelMCPConfig(r.Context(), a.db, repo)
	if err != nil {
		return err
	}
	if c.Servers == nil {
		c.Servers = map[string]repoenv.MCPServer{}
	}
	seen, err := st.MCPSeenList(r.Context(), a.db, repo)
	if err != nil {
		return err
	}
	httpserver.WriteJSON(w, http.StatusOK, map[string]any{"config": c, "seen": seen})
	return nil
}

// apiPutMCP answers PUT /repos/{owner}/{name}/mcp with the mcpServers
// object as the body; one without servers removes the configuration.
func (a *Admin) apiPutMCP(w http.ResponseWriter, r *http.Request) error {
	_, repo, err := a.apiRepo(r)
	if err != nil {
		return err
	}
	var body repoenv.MCPConfig
	if err := httpserver.DecodeJSON(r, &body); err != nil {
		return err
	}
	config := ""
	if len(body.Servers) > 0 {
		raw, err := json.MarshalIndent(body, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding the MCP configuration: %w", err)
		}
		config = string(raw)
	}
	if err := apiRefusal(a.setMCP(r, repo, config, apiActor(r))); err != nil {
		return err
	}
	return a.apiMCP(w, r)
}

// apiRepo is the store and the repository of an /api/repos/{owner}/{name}
// request.
func (a *Admin) apiRepo(r *http.Request) (*repoenv.Store, string, error) {
	st, err := a.apiStore()
	if err != nil {
		return nil, "", err
	}
	repo, err := repoParam(r)
	return st, repo, err
}
