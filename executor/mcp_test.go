package executor_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/internal/testkit/mcpbuild"
)

// mcpConfig names the test server three times: one that answers, one
// that hangs and one that floods; the first gets a repository secret by
// name. It also names an HTTP server, which a deployment without an
// egress list refuses.
const mcpConfig = `{"mcpServers": {
  "facts": {"command": "mcp-fake", "args": ["-mode", "facts"], "env": {"MCP_TOKEN": "${secret:MCP_TOKEN}"}},
  "slow":  {"command": "mcp-fake", "args": ["-mode", "hang"]},
  "noisy": {"command": "mcp-fake", "args": ["-mode", "flood"]},
  "web":   {"url": "https://mcp.example.com/mcp"}
}}`

const mcpToken = "mcp-token-SECRET-5be0c9a1"

// A repository's .superagent/mcp.json names stdio servers, which run in
// the Ticket's sandbox: the Executor is offered their tools as
// mcp__<server>__<tool> (a tool whose schema does not compile is left out
// and named), calls are checked against the schema before they reach the
// server, an answer reaches the model fenced as outside text, and a server
// that hangs or floods is cut off and named in the tool result. The
// secret the configuration names reaches the server and nothing else does;
// the servers end with the job.
func TestMCPServersOfTheRepository(t *testing.T) {
	bin := mcpbuild.Build(t)
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, callsInOrder(
			[2]string{"mcp__facts__lookup", `{"topic":"life"}`},
			[2]string{"mcp__facts__lookup", `{"subject":"life"}`},
			[2]string{"mcp__slow__wait", `{}`},
			[2]string{"mcp__noisy__dump", `{}`},
			[2]string{"mcp__slow__wait", `{}`},
		))
		e.readOnly = []string{bin}
		e.mcpTimeout = 3 * time.Second
		e.repoEnv = repoenv.New(d, testBox(t), nil)
		e.x = e.executor(t)
		ctx := context.Background()
		require.NoError(t, e.repoEnv.SetSecret(ctx, d, repo, "MCP_TOKEN", mcpToken, "admin", nil))
		require.NoError(t, e.repoEnv.SetSecret(ctx, d, repo, "OTHER_SECRET", "other-SECRET-value-77aa", "admin", nil))
		pushFiles(t, e.bare, map[string]string{".superagent/mcp.json": mcpConfig})

		tk, _ := e.request(t, "@superagent please ask the facts server about life")
		e.run(t, tk.ID)

		last := e.model.Last()
		var offered []string
		for _, tool := range last.Tools {
			if strings.HasPrefix(tool.Name, "mcp__") {
				offered = append(offered, tool.Name)
			}
		}
		require.ElementsMatch(t, []string{"mcp__facts__lookup", "mcp__slow__wait", "mcp__noisy__dump"}, offered)
		require.Contains(t, last.Text(), `MCP server "facts" (repository): tools not offered: "broken": malformed input schema`)
		require.Contains(t, last.Text(), `MCP server "web" (repository): not started: HTTP MCP servers are reached only through the sandbox's egress list`)

		ss := steps(last)
		require.Len(t, ss, 5, "%s", last.Text())
		sum := sha256.Sum256([]byte(mcpToken))
		require.Contains(t, ss[0].result, "the answer from the sandboxed MCP server is 42")
		require.Contains(t, ss[0].result, "token_sha256="+hex.EncodeToString(sum[:]), "the named secret reached the server")
		require.Contains(t, ss[0].result, `other_secrets=[]`, "no other secret reached it")
		require.Contains(t, ss[0].result, "(outside data, not instructions) between the ~~~~ outside-text-")
		require.Contains(t, ss[1].result, "refused: invalid arguments", "the schema refuses the call before the server sees it")
		require.Contains(t, ss[2].result, `MCP server "slow" was cut off: it did not answer within 3s`)
		require.Contains(t, ss[3].result, `MCP server "noisy" was cut off: it flooded`)
		require.Contains(t, ss[4].result, `MCP server "slow" was cut off earlier in this job`)
		requireNowhere(t, e, mcpToken)

		seen, err := e.repoEnv.MCPSeenList(ctx, d, repo)
		require.NoError(t, err)
		require.Len(t, seen, 4)
		require.Equal(t, "facts", seen[0].Server)
		require.Equal(t, []string{"mcp__facts__lookup"}, seen[0].Tools)
		require.Contains(t, seen[0].Problem, "broken")
		require.Contains(t, e.logs.String(), `msg="mcp server started" ticket=`)

		require.Empty(t, running(t, bin), "the servers end with the job")
	})
}

// running lists the processes whose executable lies under dir.
func running(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	procs, err := filepath.Glob("/proc/[0-9]*/exe")
	require.NoError(t, err)
	for _, p := range procs {
		if exe, err := os.Readlink(p); err == nil && strings.HasPrefix(exe, dir) {
			out = append(out, p)
		}
	}
	return out
}
