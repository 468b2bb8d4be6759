// Command contractdoc writes docs/contracts.md: the GitHub REST operations,
// GitHub web routes (OAuth, the App manifest page), GitHub webhook events
// and Feishu Open API calls the product's code uses (read from its source),
// each with whether a contract-checked test exercised it (read from the
// records internal/testkit/contract.Cover leaves when
// SUPERAGENT_CONTRACT_COVERAGE is set). make contracts runs the suites that
// use the fakes with it set, one package at a time, then this. Its test
// (part of go test ./...) fails when the document's list is not the one
// the code makes.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/superagent-dev/superagent/internal/testkit/contract"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

func main() {
	root := flag.String("root", ".", "the module's root")
	cov := flag.String("coverage", "", "the directory of coverage records (SUPERAGENT_CONTRACT_COVERAGE)")
	out := flag.String("out", "docs/contracts.md", "where to write the list, - for stdout")
	flag.Parse()
	if err := run(*root, *cov, *out); err != nil {
		fmt.Fprintln(os.Stderr, "contractdoc:", err)
		os.Exit(1)
	}
}

func run(root, covDir, outPath string) error {
	r, err := collect(root)
	if err != nil {
		return err
	}
	covered := map[string][]string{}
	if covDir != "" {
		if covered, err = contract.ReadCoverage(covDir); err != nil {
			return err
		}
	}
	w := io.Writer(os.Stdout)
	if outPath != "-" {
		f, err := os.Create(outPath)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	missing := write(w, r, covered)
	fmt.Fprintf(os.Stderr, "contractdoc: %d of %d uses covered by a contract-checked test\n", r.total()-missing, r.total())
	return nil
}

// report is what the product uses.
type report struct {
	github, web, webhooks, feishu []Use
	inContract                    map[string]bool // GitHub operationIds the fake is held to
	feishuCalls                   map[string]bool
}

func (r report) total() int { return len(r.github) + len(r.web) + len(r.webhooks) + len(r.feishu) }

func collect(root string) (report, error) {
	spec, err := fakegithub.Spec()
	if err != nil {
		return report{}, err
	}
	files, err := productFiles(root)
	if err != nil {
		return report{}, err
	}
	// go-github's routes are resolved against the full set of GitHub
	// operations the fake knows; one it does not know is reported as such.
	resolve := func(method, path string) (string, string) {
		op, _, _ := spec.Match(method, samplePath(path))
		if op == nil {
			return "", ""
		}
		return op.ID, op.Path
	}
	r := report{inContract: map[string]bool{}, feishuCalls: map[string]bool{}}
	for _, op := range spec.Operations() {
		r.inContract[op.ID] = true
	}
	if r.github, err = githubUses(root, files, resolve); err != nil {
		return report{}, err
	}
	if r.web, err = webUses(root, files); err != nil {
		return report{}, err
	}
	if r.webhooks, err = webhookUses(root); err != nil {
		return report{}, err
	}
	if r.feishu, err = feishuUses(root, files); err != nil {
		return report{}, err
	}
	calls, err := fakefeishu.Calls()
	if err != nil {
		return report{}, err
	}
	for _, c := range calls {
		name, _, _ := strings.Cut(c, " ")
		r.feishuCalls[name] = true
	}
	return r, nil
}

// samplePath fills a template's {parameters} with a sample segment.
func samplePath(tpl string) string {
	var b strings.Builder
	in := false
	for _, ch := range tpl {
		switch {
		case ch == '{':
			in = true
			b.WriteString("x1")
		case ch == '}':
			in = false
		case !in:
			b.WriteRune(ch)
		}
	}
	return b.String()
}

// write renders the document and returns how many uses no test covers.
func write(w io.Writer, r report, covered map[string][]string) int {
	has := func(kind, id string) bool {
		l := covered[kind]
		i := sort.SearchStrings(l, id)
		return i < len(l) && l[i] == id
	}
	missing := 0
	mark := func(ok bool) string {
		if ok {
			return "yes"
		}
		missing++
		return "**no**"
	}
	fmt.Fprint(w, `# Platform contracts: what the product uses, and what tests hold to them

Written by `+"`make contracts`"+` (internal/testkit/contractdoc). Do not edit by hand.
It reads the product's code (no tests) for the GitHub REST operations,
webhook events and Feishu calls it uses. It runs the suites that use the fakes
with `+"`"+contract.CoverageEnv+"`"+` set. "Covered" means a test exercised
the use through a fake that checks it against the platform's own description:
GitHub's OpenAPI description (internal/testkit/github/testdata), the
@octokit/webhooks-schemas payload schemas, and the Feishu request schemas of
@larksuiteoapi/lark-mcp with the SDK's response types. What the schemas
cannot say is in internal/testkit/github/SEMANTICS.md. Whole days of
events replayed through the binary against these fakes are in
[scenarios.md](scenarios.md).

## GitHub REST operations

| operation | route | through | used in | held to the description | covered |
| --- | --- | --- | --- | --- | --- |
`)
	for _, u := range r.github {
		held := r.inContract[u.ID]
		heldText := "yes"
		if !held {
			heldText = "**no** (add it to operations.txt)"
		}
		fmt.Fprintf(w, "| `%s` | `%s %s` | %s | %s | %s | %s |\n", u.ID, u.Method, u.Path, u.Via, files(u.Files), heldText, mark(held && has("github-operation", u.ID)))
	}
	fmt.Fprint(w, `
Not REST, so not checked against the OpenAPI description: GraphQL
(`+"`resolveReviewThread`"+`, executor/tools_github.go) and git over HTTPS
(clone and push).

## GitHub web routes

On GitHub's web host, not the REST API: the OAuth web flow (signing in to
the panel, a Feishu user linking their login) and the App manifest's page.
GitHub's OpenAPI description does not hold them; the fake follows GitHub's
prose, as internal/testkit/github/SEMANTICS.md says. "Covered" means a test
went through the fake's route.

| route | through | used in | covered |
| --- | --- | --- | --- |
`)
	for _, u := range r.web {
		fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", u.ID, u.Via, files(u.Files), mark(has("github-web", u.ID)))
	}
	fmt.Fprint(w, `
## GitHub webhook events

The events and actions webhooks/github_event.go acts on. Others are
acknowledged and dropped. "Covered" means a test delivered a payload of that
event and action, and the payload passed GitHub's schema.

| event.action | note | used in | covered |
| --- | --- | --- | --- |
`)
	for _, u := range r.webhooks {
		ok := has("github-webhook", u.ID)
		if u.Via == "every action" {
			ok = false
			for _, id := range covered["github-webhook"] {
				if id == u.ID || strings.HasPrefix(id, u.ID+".") {
					ok = true
				}
			}
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", u.ID, u.Via, files(u.Files), mark(ok))
	}
	fmt.Fprint(w, `
## Feishu Open API calls

| call | through | used in | held to the description | covered |
| --- | --- | --- | --- | --- |
`)
	for _, u := range r.feishu {
		held := r.feishuCalls[u.ID]
		heldText := "yes"
		if !held {
			heldText = "**no**"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s |\n", u.ID, u.Via, files(u.Files), heldText, mark(held && has("feishu-call", u.ID)))
	}
	fmt.Fprint(w, `
Not checked: the long connection (larkws: its endpoint and frames are the
SDK's own protocol, not Open API calls). Event envelopes are built from the
SDK's types in tests (internal/feishu/envelope_test.go).
`)
	if len(covered) == 0 {
		fmt.Fprint(w, "\n*No coverage records were given: every use reads as not covered.*\n")
	}
	return missing
}

func files(l []string) string {
	return strings.Join(l, ", ")
}
