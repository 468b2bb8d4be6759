package github_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

// recorder is a testing.TB that keeps Errorf's messages instead of failing.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// Without Expect, a violation fails the test using the fake, naming the
// method, the path, the operation, the pointer and the reason.
func TestViolationFailsTheTest(t *testing.T) {
	rec := &recorder{TB: t}
	e := setupWith(t, fakegithub.New(rec))
	sha := e.pushBranch(t, "superagent/ticket-1", map[string]string{"a.go": "package a\n"})
	status, _ := e.raw(t, http.MethodPost, "/repos/octo/widgets/check-runs", `{"name":"superagent","head_sha":"`+sha+`","conclusoin":"success"}`)
	require.Equal(t, http.StatusCreated, status, "the fake still answers")
	require.Equal(t, []string{
		"fake GitHub: contract violation: POST /repos/octo/widgets/check-runs (checks/create): request body at /conclusoin: " +
			"property not described by the schema (GitHub ignores unknown fields: a misspelt one?)",
	}, rec.errors())
}

func TestPlantedWrongFields(t *testing.T) {
	e := setup(t)
	sha := e.pushBranch(t, "superagent/ticket-2", map[string]string{"a.go": "package a\n"})
	for _, tc := range []struct {
		name, method, path, body string
		want                     string
	}{
		{"misspelt field", http.MethodPost, "/repos/octo/widgets/check-runs", `{"name":"x","head_sha":"` + sha + `","detail_url":"https://x"}`,
			"POST /repos/octo/widgets/check-runs (checks/create): request body at /detail_url: property not described"},
		{"wrong enum", http.MethodPost, "/repos/octo/widgets/check-runs", `{"name":"x","head_sha":"` + sha + `","status":"running"}`,
			"request body at /status: value must be one of 'queued', 'in_progress', 'completed'"},
		{"wrong type", http.MethodPost, "/repos/octo/widgets/check-runs", `{"name":7,"head_sha":"` + sha + `"}`,
			"request body at /name: got number, want string"},
		{"nested", http.MethodPost, "/repos/octo/widgets/check-runs", `{"name":"x","head_sha":"` + sha + `","output":{"title":"t"}}`,
			"request body at /output: missing property 'summary'"},
		{"missing required", http.MethodPost, "/repos/octo/widgets/pulls", `{"title":"x","head":"superagent/ticket-2"}`,
			"POST /repos/octo/widgets/pulls (pulls/create): request body: missing property 'base'"},
		{"undocumented query", http.MethodGet, "/repos/octo/widgets/pulls?stat=open", ``,
			"GET /repos/octo/widgets/pulls (pulls/list): query parameter stat: not documented for this operation"},
		{"query enum", http.MethodGet, "/repos/octo/widgets/pulls?state=merged", ``,
			"query parameter state: value must be one of 'open', 'closed', 'all'"},
		{"path type", http.MethodGet, "/repos/octo/widgets/pulls/first", ``,
			"GET /repos/octo/widgets/pulls/first (pulls/get): path parameter pull_number: got string, want integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := e.fake.Expect(func() { e.raw(t, tc.method, tc.path, tc.body) })
			require.NotEmpty(t, v)
			require.Contains(t, v[0].String(), tc.want)
		})
	}

	// An answer with a wrong field, from a route a test adds for a
	// documented operation.
	e.fake.Handle("GET /repos/{owner}/{repo}/installation", func(w http.ResponseWriter, r *http.Request) {
		fakegithub.WriteJSON(w, http.StatusOK, map[string]any{"id": "seven", "app_id": 1})
	})
	v := e.fake.Expect(func() { e.raw(t, http.MethodGet, "/repos/octo/widgets/installation", "") })
	var got []string
	for _, x := range v {
		got = append(got, x.Problem.String())
	}
	require.Contains(t, got, "response 200 body at /id: got string, want integer")
	require.Contains(t, strings.Join(got, "\n"), "response 200 body: missing properties 'app_slug', 'target_id'")
	require.Equal(t, "apps/get-repo-installation", v[0].Operation)
}

func TestPlantedUndocumentedPath(t *testing.T) {
	e := setup(t)
	e.fake.Handle("GET /repos/{owner}/{repo}/secret-sauce", func(w http.ResponseWriter, r *http.Request) {
		fakegithub.WriteJSON(w, http.StatusOK, map[string]any{})
	})
	v := e.fake.Expect(func() {
		status, _ := e.raw(t, http.MethodGet, "/repos/octo/widgets/secret-sauce", "")
		require.Equal(t, http.StatusOK, status)
	})
	require.Len(t, v, 1)
	require.Equal(t, "GET /repos/octo/widgets/secret-sauce (undocumented): route: no operation in GitHub's REST description "+
		"(testdata/operations.txt lists the ones the fake is held to)", v[0].String())

	v = e.fake.Expect(func() { e.raw(t, http.MethodDelete, "/repos/octo/widgets/check-runs/1", "") })
	require.Len(t, v, 1)
	require.Equal(t, "route: the path is documented for GET, PATCH only", v[0].Problem.String())

	// An undocumented status for a documented operation.
	e.fake.Handle("GET /rate_limit", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	})
	v = e.fake.Expect(func() { e.raw(t, http.MethodGet, "/rate_limit", "") })
	require.Len(t, v, 1)
	require.Equal(t, "response 202: status not documented for this operation (documented: 200, 304, 404)", v[0].Problem.String())
}

// What is not GitHub's REST API is not held to its description.
func TestOutOfContractRoutes(t *testing.T) {
	e := setup(t)
	e.pushBranch(t, "superagent/ticket-4", map[string]string{"a.go": "package a\n"})
	graphql(t, e, `query { repository(owner: "octo", name: "widgets") { pullRequest(number: 100) { id } } }`, nil)
	require.Empty(t, e.fake.Violations())
	require.NotZero(t, e.fake.Operations()["apps/create-installation-access-token"])
}

// GitHub's published examples mostly match their own schemas; where one
// does not, the fake's answers (which start from it) lay over what the
// schema requires, and this lists the known gaps so a new one is seen.
func TestPublishedExamplesAgainstTheirSchemas(t *testing.T) {
	spec, err := fakegithub.Spec()
	require.NoError(t, err)
	// Each gap, and what the fake does about it.
	known := map[string]string{
		"repos/get 200: response 200 body: missing property 'language'":                                               "repoJSON sets language (null)",
		"repos/get 200: response 200 body at /source: missing property 'language'":                                    "repoJSON drops source (no forks)",
		"actions/get-job-for-workflow-run 200: response 200 body: missing property 'created_at'":                      "a job answer must set created_at",
		"actions/list-jobs-for-workflow-run-attempt 200: response 200 body at /jobs/0: missing property 'created_at'": "a job answer must set created_at",
		"actions/list-jobs-for-workflow-run 200: response 200 body at /jobs/0: missing property 'created_at'":         "a job answer must set created_at",
		"repos/get-collaborator-permission-level 200: response 200 body at /user: missing property 'role_name'":       "getPermission sets user.role_name",
		"pulls/list 200: response 200 body at /0/requested_teams/0: missing property 'type'":                          "pullFrom empties requested_teams",
		"pulls/create 201: response 201 body at /requested_teams/0: missing property 'type'":                          "pullFrom empties requested_teams",
		"pulls/get 200: response 200 body at /requested_teams/0: missing property 'type'":                             "pullFrom empties requested_teams",
		"pulls/update 200: response 200 body at /requested_teams/0: missing property 'type'":                          "pullFrom empties requested_teams",
	}
	var got []string
	for _, op := range spec.Operations() {
		for _, st := range op.Statuses() {
			status, err := strconv.Atoi(st)
			if err != nil {
				continue
			}
			ex := op.Example(status)
			if ex == nil {
				continue
			}
			body, err := json.Marshal(ex)
			require.NoError(t, err)
			for _, p := range op.CheckResponse(status, http.Header{"Content-Type": {"application/json"}}, body) {
				k := op.ID + " " + st + ": " + p.String()
				got = append(got, k)
				if known[k] == "" {
					t.Errorf("the published example of %s disagrees with its schema: %s", op.ID, k)
				}
			}
		}
	}
	t.Logf("known gaps: %d of %d", len(got), len(known))
}
