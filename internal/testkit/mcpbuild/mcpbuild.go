// Package mcpbuild builds the test MCP server (internal/testkit/mcpserver)
// for a test, as a static binary a sandbox can run.
package mcpbuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Binary is the server's file name, under the directory Build returns.
const Binary = "bin/mcp-fake"

// Build builds the server into a new directory and returns it; bound
// read-only into the sandbox (SUPERAGENT_SANDBOX_READONLY), its bin is on
// the sandbox's PATH, so a configuration names the command "mcp-fake".
func Build(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	// Readable by the sandbox's user when the service runs as root.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", filepath.Join(dir, Binary), "github.com/superagent-dev/superagent/internal/testkit/mcpserver")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the test MCP server: %v: %s", err, out)
	}
	if err := os.Chmod(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
