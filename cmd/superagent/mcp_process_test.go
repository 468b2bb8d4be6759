package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/internal/testkit/mcpbuild"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// mcpCaller plays an Executor that first calls the repository's MCP
// tools, one each, in order, then fixes the README as readmeFixer does.
func mcpCaller(calls ...string) func(fakeopenai.Request) fakeopenai.Reply {
	return func(req fakeopenai.Request) fakeopenai.Reply {
		made := 0
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				if strings.HasPrefix(c.Name, "mcp__") {
					made++
				}
			}
		}
		if made < len(calls) {
			name, args, _ := strings.Cut(calls[made], " ")
			return fakeopenai.Calls(fakeopenai.Call("", name, args))
		}
		return readmeFixer(req)
	}
}

// waitOneInReview waits until p has one Ticket, in review.
func waitOneInReview(t *testing.T, p *proc, token string) {
	t.Helper()
	waitFor(t, 3*time.Minute, "the Ticket to be in review", func() bool {
		var list struct {
			Tickets []struct {
				State string `json:"state"`
			} `json:"tickets"`
		}
		getJSON(t, "http://"+p.addr+"/api/tickets", token, &list)
		return len(list.Tickets) == 1 && list.Tickets[0].State == "in_review"
	})
}

// Through the binary, sandbox on: the repository's .superagent/mcp.json
// names a stdio MCP server built in the test (and a server that hangs and
// one that floods); the panel adds another over /api. The Executor is
// offered their tools as mcp__<server>__<tool>; the answer of one reaches
// the model, with the repository secret the configuration names, and the
// server that hangs and the one that floods are cut off and named in the
// tool result. The API lists the servers and the tools the Ticket found.
func TestMCPServersThroughTheBinary(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	bin := mcpbuild.Build(t)
	const value = "mcp-BINARY-SECRET-0c7d21"
	databases(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		gh.AddRepo(t, helloRepo, "main", map[string]string{
			"README.md": "# Hello World\n\nThis projetc says hello.\n",
			"test.sh":   "#!/bin/sh\nif grep -q projetc README.md; then echo 'typo still there'; exit 1; fi\necho ok\n",
			".superagent/mcp.json": `{"mcpServers": {
  "facts": {"command": "mcp-fake", "args": ["-mode", "facts"], "env": {"MCP_TOKEN": "${secret:MCP_TOKEN}"}},
  "slow":  {"command": "mcp-fake", "args": ["-mode", "hang"]},
  "noisy": {"command": "mcp-fake", "args": ["-mode", "flood"]}
}}`,
		})
		gh.SetPermission(helloRepo, "Codertocat", "write")
		model := scriptedModel(t, mcpCaller(`mcp__facts__lookup {"topic":"life"}`, `mcp__slow__wait {}`, `mcp__noisy__dump {}`,
			`mcp__panel__lookup {"topic":"the panel"}`))
		const secret, token = "mcp-webhook-secret", "mcp-admin-token-0123456789"
		p, _ := serveFor(t, dbURL, gh, model, secret, token, map[string]string{
			"SUPERAGENT_SECRETS_KEY": strings.Repeat("5a", 32), "SUPERAGENT_SANDBOX_READONLY": bin, "SUPERAGENT_MCP_TIMEOUT": "3s"})
		code, body := apiCall(t, p, "PUT", "/api/repos/"+helloRepo+"/secrets/MCP_TOKEN", `{"value":"`+value+`"}`, token)
		require.Equal(t, http.StatusNoContent, code, body)
		code, body = apiCall(t, p, "PUT", "/api/repos/"+helloRepo+"/mcp", `{"mcpServers": {"panel": {"command": "mcp-fake", "args": ["-mode", "facts"]}}}`, token)
		require.Equal(t, http.StatusOK, code, body)
		code, body = apiCall(t, p, "PUT", "/api/repos/"+helloRepo+"/mcp", `{"mcpServers": {"bad": {"command": "x", "env": {"T": "${HOME}"}}}}`, token)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)

		deliverGitHub(t, p, secret, "issue_comment", "mcp-1", commentPayload(t, "@superagent please fix the typo in the README"))
		waitOneInReview(t, p, token)
		var seen struct {
			Seen []struct {
				Server string   `json:"server"`
				Source string   `json:"source"`
				Tools  []string `json:"tools"`
			} `json:"seen"`
		}
		getJSON(t, "http://"+p.addr+"/api/repos/"+helloRepo+"/mcp", token, &seen)
		code, _ = p.stop(shutdownWithin)
		require.Equal(t, 0, code)

		results := map[string]string{}
		var offered []string
		for _, r := range model.Requests() {
			if r.Model != "executor-model" {
				continue
			}
			offered = offered[:0]
			for _, tool := range r.Tools {
				if strings.HasPrefix(tool.Name, "mcp__") {
					offered = append(offered, tool.Name)
				}
			}
			names := map[string]string{}
			for _, m := range r.Messages {
				for _, c := range m.ToolCalls {
					names[c.ID] = c.Name
				}
				if m.Role == "tool" && strings.HasPrefix(names[m.ToolCallID], "mcp__") {
					results[names[m.ToolCallID]] = m.Content
				}
			}
		}
		require.ElementsMatch(t, []string{"mcp__facts__lookup", "mcp__slow__wait", "mcp__noisy__dump", "mcp__panel__lookup"}, offered)
		require.Contains(t, results["mcp__facts__lookup"], "life: the answer from the sandboxed MCP server is 42")
		require.Contains(t, results["mcp__facts__lookup"], "token_sha256=")
		require.NotContains(t, results["mcp__facts__lookup"], "token_sha256=e3b0c44298fc", "the secret reached the server (not the hash of nothing)")
		require.Contains(t, results["mcp__panel__lookup"], "the panel: the answer from the sandboxed MCP server is 42")
		require.Contains(t, results["mcp__slow__wait"], `MCP server "slow" was cut off: it did not answer within 3s`)
		require.Contains(t, results["mcp__noisy__dump"], `MCP server "noisy" was cut off: it flooded`)

		require.Len(t, seen.Seen, 4)
		for _, s := range seen.Seen {
			require.Len(t, s.Tools, 1, "%+v", s)
			require.Equal(t, map[bool]string{true: "panel", false: "repository"}[s.Server == "panel"], s.Source)
		}
		var started int
		for _, l := range logLines(t, p.stderr.String()) {
			if l["msg"] == "mcp server started" {
				started++
				require.Equal(t, helloRepo, l["repo"])
				require.Positive(t, l["ticket"])
			}
		}
		require.Equal(t, 4, started)
		require.NotContains(t, p.stderr.String()+p.stdout.String(), value)
	})
}
