package github

import (
	"bytes"
	_ "embed" // the trimmed description
	"net/http"
	"strings"
	"sync"

	"github.com/superagent-dev/superagent/internal/testkit/contract"
)

//go:generate go run ./internal/trimspec -ops testdata/operations.txt -out testdata/api.github.com.json

// description is the part of GitHub's REST OpenAPI description the fake is
// held to (testdata/operations.txt lists it; internal/trimspec cuts it from
// @octokit/openapi's api.github.com.json, MIT, testdata/LICENSE-octokit-openapi).
//
//go:embed testdata/api.github.com.json
var description []byte

// Spec returns GitHub's REST description as the fake is held to it, loaded
// once per test binary.
var Spec = sync.OnceValues(func() (*contract.Spec, error) {
	return contract.LoadOpenAPI("api.github.com", description)
})

// outOfContract reports whether a request goes to a route that is not part
// of the REST API and so is not checked: git smart HTTP, the fake's own
// log downloads (GitHub's are pre-signed storage URLs), the OAuth web flow
// on github.com (oauth.go, SEMANTICS.md), and GraphQL, whose
// contract is a GraphQL schema rather than OpenAPI.
func outOfContract(r *http.Request) bool {
	p := r.URL.Path
	return strings.HasPrefix(p, "/git/") || strings.HasPrefix(p, "/_fake/") || strings.HasPrefix(p, "/login/oauth/") || strings.HasSuffix(p, "/settings/apps/new") || p == "/graphql" || p == "/api/graphql"
}

// Violation is one way a request the fake received, or an answer it gave,
// breaks GitHub's description.
type Violation = contract.Violation

// checked is a request matched to the contract, waiting for its answer.
type checked struct {
	op     *contract.Operation
	method string
	path   string
}

// checkRequest matches r to a documented operation and checks it,
// reporting each violation; it returns nil when r has no operation (or
// is out of the contract) and the answer is not to be checked.
func (s *Server) checkRequest(r *http.Request, body []byte) *checked {
	if outOfContract(r) {
		return nil
	}
	spec, err := Spec()
	if err != nil {
		s.t.Errorf("fake GitHub: loading GitHub's REST description: %v", err)
		return nil
	}
	op, vals, others := spec.Match(r.Method, r.URL.EscapedPath())
	if op == nil {
		reason := "no operation in GitHub's REST description (testdata/operations.txt lists the ones the fake is held to)"
		if len(others) > 0 {
			reason = "the path is documented for " + strings.Join(others, ", ") + " only"
		}
		s.report(Violation{Method: r.Method, Path: r.URL.Path, Problem: contract.Problem{Where: "route", Reason: reason}})
		return nil
	}
	s.covered(op.ID)
	for _, p := range op.CheckRequest(vals, r.URL.Query(), r.Header, body) {
		s.report(Violation{Method: r.Method, Path: r.URL.Path, Operation: op.ID, Problem: p})
	}
	return &checked{op: op, method: r.Method, path: r.URL.Path}
}

// checkResponse checks the answer given to a checked request.
func (s *Server) checkResponse(c *checked, status int, header http.Header, body []byte) {
	if c == nil {
		return
	}
	for _, p := range c.op.CheckResponse(status, header, body) {
		s.report(Violation{Method: c.method, Path: c.path, Operation: c.op.ID, Problem: p})
	}
}

func (s *Server) report(v Violation) { s.Report(v) }

func (s *Server) covered(id string) {
	s.mu.Lock()
	s.operations[id]++
	s.mu.Unlock()
	contract.Cover("github-operation", id)
}

// Operations returns the documented operations the fake has served, with
// how many requests each had.
func (s *Server) Operations() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.operations))
	for k, v := range s.operations {
		out[k] = v
	}
	return out
}

// tee passes an answer through while keeping a copy to check.
type tee struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *tee) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *tee) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}
