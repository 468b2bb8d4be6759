package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/superagent-dev/superagent/"

// arrows are the dependencies the layout forbids, transitively: a package
// on the left must not depend on any package on the right, however
// indirectly. docs/architecture.md explains the layers. The linter's
// depguard rules (.golangci.yml) catch a direct import as it is written;
// this test also catches one through a third package.
var arrows = map[string][]string{
	"tickets":      {"orchestrator", "executor", "webhooks", "session", "admin", "outbox", "jobs", "internal/httpserver", "internal/model"},
	"session":      {"orchestrator", "executor", "webhooks", "tickets", "admin", "outbox", "jobs"},
	"jobs":         {"orchestrator", "executor", "webhooks", "session", "admin"},
	"outbox":       {"orchestrator", "executor", "webhooks", "session", "admin"},
	"orchestrator": {"executor", "webhooks", "admin"},
	"executor":     {"orchestrator", "webhooks", "admin"},
	"webhooks":     {"orchestrator", "executor", "session", "admin", "outbox"},
	"promptparts":  {"orchestrator", "executor", "webhooks", "tickets", "session", "admin"},
	"policy":       {"orchestrator", "executor", "webhooks", "tickets", "session", "admin", "promptparts"},
	"people":       {"orchestrator", "executor", "webhooks", "tickets", "session", "admin", "promptparts", "outbox", "jobs"},
}

// TestPackageArrows checks the module's import graph as `go list -deps`
// reports it for product code (tests excluded): the arrows above hold, and
// no product package depends on the test kit.
func TestPackageArrows(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"...").CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	deps := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module) {
			continue
		}
		pkg := strings.TrimPrefix(fields[0], module)
		for _, d := range fields[1:] {
			if strings.HasPrefix(d, module) {
				deps[pkg] = append(deps[pkg], strings.TrimPrefix(d, module))
			}
		}
	}
	require.Contains(t, deps, "executor", "go list saw the module's packages")

	var problems []string
	for from, forbidden := range arrows {
		for _, d := range deps[from] {
			for _, f := range forbidden {
				if d == f || strings.HasPrefix(d, f+"/") {
					problems = append(problems, from+" depends on "+d)
				}
			}
		}
	}
	for pkg, ds := range deps {
		if strings.HasPrefix(pkg, "internal/testkit") {
			continue
		}
		if i := slices.IndexFunc(ds, func(d string) bool { return strings.HasPrefix(d, "internal/testkit") }); i >= 0 {
			problems = append(problems, pkg+" depends on the test kit ("+ds[i]+")")
		}
	}
	slices.Sort(problems)
	require.Empty(t, problems, "the layout's arrows (docs/architecture.md#layout)")
}
