package contract_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/testkit/contract"
)

// spec is a small OpenAPI 3.0 description in GitHub's style.
const spec = `{
 "openapi": "3.0.3",
 "paths": {
  "/repos/{owner}/{repo}/issues/{issue_number}/comments": {
   "post": {
    "operationId": "issues/create-comment",
    "externalDocs": {"url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment"},
    "parameters": [{"$ref": "#/components/parameters/owner"}, {"$ref": "#/components/parameters/repo"},
     {"name": "issue_number", "in": "path", "required": true, "schema": {"type": "integer"}}],
    "requestBody": {"required": true, "content": {"application/json": {"schema": {
     "type": "object", "additionalProperties": false, "required": ["body"],
     "properties": {"body": {"type": "string"}}}}}},
    "responses": {
     "201": {"description": "Response", "content": {"application/json": {
      "schema": {"$ref": "#/components/schemas/issue-comment"},
      "examples": {"default": {"$ref": "#/components/examples/issue-comment"}}}}},
     "404": {"$ref": "#/components/responses/not_found"}
    }
   }
  },
  "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies": {
   "post": {
    "operationId": "pulls/create-reply-for-review-comment",
    "parameters": [{"$ref": "#/components/parameters/owner"}, {"$ref": "#/components/parameters/repo"},
     {"name": "pull_number", "in": "path", "required": true, "schema": {"type": "integer"}},
     {"name": "comment_id", "in": "path", "required": true, "schema": {"type": "integer"}}],
    "requestBody": {"required": true, "content": {"application/json": {"schema": {
     "type": "object", "required": ["body"],
     "properties": {"body": {"type": "string"}, "nested": {"type": "object", "nullable": true, "properties": {"a": {"type": "string"}}},
      "list": {"type": "array", "items": {"type": "object", "properties": {"path": {"type": "string"}}}}}}}}},
    "responses": {"201": {"description": "Response", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/issue-comment"}}}}}
   }
  },
  "/repos/{owner}/{repo}/issues/comments/{comment_id}": {
   "patch": {
    "operationId": "issues/update-comment",
    "parameters": [{"$ref": "#/components/parameters/owner"}, {"$ref": "#/components/parameters/repo"},
     {"name": "comment_id", "in": "path", "required": true, "schema": {"type": "integer"}}],
    "responses": {"200": {"description": "Response"}}
   }
  },
  "/repos/{owner}/{repo}/commits/{ref}/check-runs": {
   "get": {
    "operationId": "checks/list-for-ref",
    "parameters": [{"$ref": "#/components/parameters/owner"}, {"$ref": "#/components/parameters/repo"},
     {"name": "ref", "in": "path", "required": true, "x-multi-segment": true, "schema": {"type": "string"}},
     {"name": "status", "in": "query", "schema": {"type": "string", "enum": ["queued", "in_progress", "completed"]}},
     {"name": "per_page", "in": "query", "schema": {"type": "integer"}}],
    "responses": {"200": {"description": "Response", "headers": {"Link": {"$ref": "#/components/headers/link"}},
     "content": {"application/json": {"schema": {"type": "object"}}}}}
   }
  },
  "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs": {
   "get": {
    "operationId": "actions/download-job-logs-for-workflow-run",
    "parameters": [{"$ref": "#/components/parameters/owner"}, {"$ref": "#/components/parameters/repo"},
     {"name": "job_id", "in": "path", "required": true, "schema": {"type": "integer"}}],
    "responses": {"302": {"description": "Response"}}
   }
  }
 },
 "components": {
  "parameters": {
   "owner": {"name": "owner", "in": "path", "required": true, "schema": {"type": "string"}},
   "repo": {"name": "repo", "in": "path", "required": true, "schema": {"type": "string"}}
  },
  "headers": {"link": {"schema": {"type": "string"}}},
  "responses": {"not_found": {"description": "Resource not found", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/basic-error"}}}}},
  "schemas": {
   "basic-error": {"type": "object", "properties": {"message": {"type": "string"}, "documentation_url": {"type": "string"}}},
   "simple-user": {"type": "object", "required": ["login", "id"], "properties": {"login": {"type": "string"}, "id": {"type": "integer", "format": "int64"}}},
   "issue-comment": {"type": "object", "required": ["id", "body", "user", "created_at"], "properties": {
    "id": {"type": "integer", "format": "int64"}, "body": {"type": "string"},
    "user": {"allOf": [{"$ref": "#/components/schemas/simple-user"}], "nullable": true},
    "created_at": {"type": "string", "format": "date-time"}}}
  },
  "examples": {"issue-comment": {"value": {"id": 1, "body": "Me too", "user": {"login": "octocat", "id": 1}, "created_at": "2011-04-14T16:00:49Z"}}}
 }
}`

func load(t *testing.T) *contract.Spec {
	t.Helper()
	s, err := contract.LoadOpenAPI("test-"+t.Name(), []byte(spec))
	require.NoError(t, err)
	return s
}

func TestMatch(t *testing.T) {
	s := load(t)
	for _, tc := range []struct {
		method, path, id string
		values           map[string]string
		others           []string
	}{
		{"POST", "/repos/octo/widgets/issues/7/comments", "issues/create-comment", map[string]string{"owner": "octo", "repo": "widgets", "issue_number": "7"}, nil},
		{"PATCH", "/repos/octo/widgets/issues/comments/9", "issues/update-comment", map[string]string{"owner": "octo", "repo": "widgets", "comment_id": "9"}, nil},
		// A branch with slashes, as go-github sends it unescaped, and escaped.
		{"GET", "/repos/octo/widgets/commits/superagent/ticket-3/check-runs", "checks/list-for-ref", map[string]string{"owner": "octo", "repo": "widgets", "ref": "superagent/ticket-3"}, nil},
		{"GET", "/repos/octo/widgets/commits/superagent%2Fticket-3/check-runs", "checks/list-for-ref", map[string]string{"owner": "octo", "repo": "widgets", "ref": "superagent/ticket-3"}, nil},
		{"GET", "/repos/octo/widgets/issues/7/comments", "", nil, []string{"POST"}},
		{"GET", "/repos/octo/widgets/nothing", "", nil, nil},
		{"GET", "/repos/octo/widgets/commits//check-runs", "", nil, nil},
	} {
		op, vals, others := s.Match(tc.method, tc.path)
		if tc.id == "" {
			require.Nil(t, op, tc.path)
			require.Equal(t, tc.others, others, tc.path)
			continue
		}
		require.NotNil(t, op, tc.path)
		require.Equal(t, tc.id, op.ID)
		require.Equal(t, tc.values, vals)
	}
}

func TestCheckRequest(t *testing.T) {
	s := load(t)
	op := s.Operation("issues/create-comment")
	vals := map[string]string{"owner": "octo", "repo": "widgets", "issue_number": "7"}
	json := http.Header{"Content-Type": {"application/json"}}
	require.Empty(t, op.CheckRequest(vals, nil, json, []byte(`{"body":"hi"}`)))
	for _, tc := range []struct {
		name   string
		vals   map[string]string
		query  url.Values
		header http.Header
		body   string
		want   string
	}{
		{"unknown field", vals, nil, json, `{"body":"hi","bodyy":"x"}`, "request body: additional properties 'bodyy' not allowed"},
		{"missing field", vals, nil, json, `{}`, "request body: missing property 'body'"},
		{"wrong type", vals, nil, json, `{"body":3}`, "request body at /body: got number, want string"},
		{"missing body", vals, nil, json, ``, "request body: required, missing"},
		{"not JSON", vals, nil, json, `{"body":`, "request body: not JSON"},
		{"wrong content type", vals, nil, http.Header{"Content-Type": {"text/plain"}}, `{"body":"x"}`, `content type "text/plain"`},
		{"bad path value", map[string]string{"owner": "octo", "repo": "widgets", "issue_number": "seven"}, nil, json, `{"body":"x"}`, "path parameter issue_number: got string, want integer"},
		{"undocumented query", vals, url.Values{"pagee": {"2"}}, json, `{"body":"x"}`, "query parameter pagee: not documented"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := op.CheckRequest(tc.vals, tc.query, tc.header, []byte(tc.body))
			require.NotEmpty(t, problems)
			require.Contains(t, problems[0].String(), tc.want)
		})
	}
	// A field the schema does not describe is reported though the schema
	// does not say additionalProperties: false.
	reply := s.Operation("pulls/create-reply-for-review-comment")
	rv := map[string]string{"owner": "o", "repo": "r", "pull_number": "1", "comment_id": "2"}
	require.Empty(t, reply.CheckRequest(rv, nil, json, []byte(`{"body":"x","nested":{"a":"y"},"list":[{"path":"p"}]}`)))
	require.Empty(t, reply.CheckRequest(rv, nil, json, []byte(`{"body":"x","nested":null}`)))
	for body, at := range map[string]string{
		`{"body":"x","bdy":"y"}`:                      "/bdy",
		`{"body":"x","nested":{"a":"y","b":1}}`:       "/nested/b",
		`{"body":"x","list":[{"path":"p","line":1}]}`: "/list/0/line",
	} {
		p := reply.CheckRequest(rv, nil, json, []byte(body))
		require.Len(t, p, 1, body)
		require.Equal(t, at, p[0].Pointer, body)
		require.Contains(t, p[0].Reason, "not described by the schema", body)
	}
	// Answers may carry more than the schema says: GitHub adds fields.
	require.Empty(t, reply.CheckResponse(201, json, []byte(`{"id":1,"body":"b","user":null,"created_at":"2024-05-01T10:00:00Z","new_field":true}`)))

	list := s.Operation("checks/list-for-ref")
	require.Empty(t, list.CheckRequest(map[string]string{"ref": "main"}, url.Values{"status": {"completed"}, "per_page": {"100"}}, nil, nil))
	p := list.CheckRequest(map[string]string{"ref": "main"}, url.Values{"status": {"done"}, "per_page": {"many"}}, nil, nil)
	require.Len(t, p, 2)
	require.Contains(t, p[0].String(), "query parameter per_page: got string, want integer")
	require.Contains(t, p[1].String(), "query parameter status: value must be one of")
	p = s.Operation("issues/update-comment").CheckRequest(map[string]string{"comment_id": "1"}, nil, json, []byte(`{"body":"x"}`))
	require.Equal(t, []contract.Problem{{Where: "request body", Reason: "this operation takes no body"}}, p)
}

func TestCheckResponse(t *testing.T) {
	s := load(t)
	op := s.Operation("issues/create-comment")
	json := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	ok := `{"id":12,"body":"hi","user":{"login":"superagent[bot]","id":41899282},"created_at":"2024-05-01T10:00:00Z"}`
	require.Empty(t, op.CheckResponse(201, json, []byte(ok)))
	require.Empty(t, op.CheckResponse(201, json, []byte(`{"id":12,"body":"hi","user":null,"created_at":"2024-05-01T10:00:00Z"}`)))
	require.Empty(t, op.CheckResponse(404, json, []byte(`{"message":"Not Found"}`)), "through components/responses")
	require.Empty(t, op.CheckResponse(401, json, []byte(`{"message":"Bad credentials"}`)), "any endpoint may answer 401")
	require.Empty(t, op.CheckResponse(503, json, []byte(`{"message":"Service unavailable"}`)))
	require.Empty(t, op.CheckResponse(422, json, []byte(`{"message":"Validation Failed","errors":[{"code":"missing_field"}]}`)), "nor 422")
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
		body   string
		want   string
	}{
		{"nested field missing", 201, json, `{"id":12,"body":"hi","user":{"login":"x"},"created_at":"2024-05-01T10:00:00Z"}`, "response 201 body at /user: missing property 'id'"},
		{"bad time", 201, json, `{"id":12,"body":"hi","user":null,"created_at":"May 1"}`, "response 201 body at /created_at: 'May 1' is not valid date-time"},
		{"undocumented status", 200, json, ok, "response 200: status not documented for this operation (documented: 201, 404)"},
		{"undocumented redirect", 302, json, ``, "response 302: status not documented"},
		{"generic error without message", 500, json, `{}`, "response 500 body: missing property 'message'"},
		{"pagination where none is documented", 201, http.Header{"Content-Type": {"application/json"}, "Link": {`<x>; rel="next"`}}, ok, "header Link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := op.CheckResponse(tc.status, tc.header, []byte(tc.body))
			require.NotEmpty(t, problems)
			require.Contains(t, problems[0].String(), tc.want)
		})
	}
	logs := s.Operation("actions/download-job-logs-for-workflow-run")
	require.Empty(t, logs.CheckResponse(302, http.Header{}, nil))
	require.Equal(t, "response 302 body: no body is documented", logs.CheckResponse(302, http.Header{}, []byte("hello"))[0].String())
	list := s.Operation("checks/list-for-ref")
	require.Empty(t, list.CheckResponse(200, http.Header{"Content-Type": {"application/json"}, "Link": {`<x>; rel="next"`}}, []byte(`{}`)))
}

func TestExample(t *testing.T) {
	s := load(t)
	op := s.Operation("issues/create-comment")
	ex, ok := op.Example(201).(map[string]any)
	require.True(t, ok)
	require.Equal(t, "Me too", ex["body"])
	ex["body"] = "changed"
	again := op.Example(201).(map[string]any)
	require.Equal(t, "Me too", again["body"], "each call returns a copy")
	require.Nil(t, op.Example(404))
	require.Equal(t, "octocat", s.Example("issue-comment").(map[string]any)["user"].(map[string]any)["login"])
	require.Equal(t, "https://docs.github.com/rest/issues/comments#create-an-issue-comment", op.Docs)
}
