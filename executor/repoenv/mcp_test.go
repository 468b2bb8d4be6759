package repoenv_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/executor/repoenv"
)

func TestParseMCP(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		problems     []string // each must be in the error; none: valid
		servers      []string
	}{
		{name: "empty", config: "  ", servers: nil},
		{name: "stdio and http", config: `{"mcpServers": {"docs": {"command": "npx", "args": ["-y", "docs-mcp"], "env": {"TOKEN": "${secret:DOCS_TOKEN}"}},
			"web": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${secret:WEB_TOKEN}"}}}}`, servers: []string{"docs", "web"}},
		{name: "not an object", config: `[1]`, problems: []string{"is not an object"}},
		{name: "unknown field", config: `{"mcpServers": {"a": {"command": "x", "cwd": "/"}}}`, problems: []string{`unknown field "cwd"`}},
		{name: "every problem at once", config: `{"mcpServers": {
			"both": {"command": "x", "url": "https://e.example"},
			"neither": {},
			"bad name!": {"command": "x"},
			"envs": {"command": "x", "env": {"PATH": "/evil", "LD_PRELOAD": "x", "T": "${GITHUB_TOKEN}"}},
			"http": {"url": "file:///etc/passwd", "args": ["a"]},
			"creds": {"url": "https://user:pw@e.example/mcp"}}}`,
			problems: []string{`server "both": has both command and url`, `server "neither": needs a command`, `server "bad name!": a name is`,
				"PATH is set by the sandbox", "names starting with LD_ are reserved", "only ${secret:NAME} is expanded",
				`server "http": args and env are for stdio servers`, `url "file:///etc/passwd" is not an http(s) URL`, `url "https://user:pw@e.example/mcp"`}},
		{name: "too many servers", config: `{"mcpServers": {` + manyServers(repoenv.MaxMCPServers+1) + `}}`, problems: []string{"over the limit of 8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := repoenv.ParseMCP([]byte(tc.config))
			if len(tc.problems) == 0 {
				require.NoError(t, err)
				require.Equal(t, tc.servers, namesOrNil(c))
				return
			}
			require.Error(t, err)
			for _, p := range tc.problems {
				require.Contains(t, err.Error(), p)
			}
			require.Empty(t, c.Servers, "a refused configuration has no servers")
		})
	}
}

func manyServers(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, `"s`+string(rune('a'+i))+`": {"command": "x"}`)
	}
	return strings.Join(parts, ",")
}

func namesOrNil(c repoenv.MCPConfig) []string {
	if len(c.Servers) == 0 {
		return nil
	}
	return c.Names()
}

// The panel's server wins where both name one; secrets are expanded by
// name only, and missing ones are named.
func TestMergeAndExpand(t *testing.T) {
	file := repoenv.MCPConfig{Servers: map[string]repoenv.MCPServer{"a": {Command: "from-file"}, "b": {Command: "b"}}}
	panel := repoenv.MCPConfig{Servers: map[string]repoenv.MCPServer{"a": {Command: "from-panel"}}}
	m := repoenv.MergeMCP(file, panel)
	require.Equal(t, []string{"a", "b"}, m.Names())
	require.Equal(t, "from-panel", m.Servers["a"].Command)

	v, missing := repoenv.Expand("Bearer ${secret:TOKEN} and ${secret:GONE}", map[string]string{"TOKEN": "t0k"})
	require.Equal(t, "Bearer t0k and ", v)
	require.Equal(t, []string{"GONE"}, missing)
}
