// Command mcpserver is a small stdio MCP server for tests, built by them
// with go build and run in the Ticket's sandbox. -mode picks what its
// tool does when called:
//
//   - facts: tool "lookup" {topic} answers with a fixed fact about the
//     topic, the SHA-256 of its MCP_TOKEN environment variable and
//     whether any other variable named like a secret reached it; it also
//     offers "broken", whose input schema does not compile.
//   - hang: tool "wait" never answers.
//   - flood: tool "dump" starts a message on its standard output and
//     never ends it.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Fact is what lookup answers about every topic.
const Fact = "the answer from the sandboxed MCP server is 42"

func main() {
	mode := flag.String("mode", "facts", "facts, hang or flood")
	flag.Parse()
	s := mcp.NewServer(&mcp.Implementation{Name: "fake-" + *mode, Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	switch *mode {
	case "facts":
		s.AddTool(&mcp.Tool{Name: "lookup", Description: "Look up a fact about a topic.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"],"additionalProperties":false}`)},
			func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var a struct{ Topic string }
				if err := json.Unmarshal(r.Params.Arguments, &a); err != nil {
					return nil, err
				}
				sum := sha256.Sum256([]byte(os.Getenv("MCP_TOKEN")))
				var others []string
				for _, kv := range os.Environ() {
					if k, _, _ := strings.Cut(kv, "="); strings.Contains(k, "SECRET") {
						others = append(others, k)
					}
				}
				return text(fmt.Sprintf("%s: %s. token_sha256=%s other_secrets=%q", a.Topic, Fact, hex.EncodeToString(sum[:]), others)), nil
			})
		s.AddTool(&mcp.Tool{Name: "broken", Description: "A tool whose schema does not compile.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"no-such-type"}}}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("never"), nil })
	case "hang":
		s.AddTool(&mcp.Tool{Name: "wait", Description: "Never answers.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				select {} // not even when the request is cancelled
			})
	case "flood":
		s.AddTool(&mcp.Tool{Name: "dump", Description: "Writes without end.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				// The start of a message whose text never ends.
				_, _ = os.Stdout.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`)
				chunk := []byte(strings.Repeat("x", 64<<10))
				for {
					if _, err := os.Stdout.Write(chunk); err != nil {
						os.Exit(1)
					}
				}
			})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
