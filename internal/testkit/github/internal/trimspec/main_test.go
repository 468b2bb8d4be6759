package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

const full = `{
 "openapi": "3.0.3", "info": {"title": "t", "version": "1", "license": {"name": "MIT"}},
 "paths": {
  "/a/{id}": {
   "parameters": [{"$ref": "#/components/parameters/id"}],
   "get": {"operationId": "a/get", "summary": "Get", "description": "long prose", "tags": ["a"],
    "responses": {"200": {"description": "ok", "content": {"application/json": {
     "schema": {"$ref": "#/components/schemas/a"},
     "examples": {"default": {"$ref": "#/components/examples/a"}, "other": {"value": {"$ref": "#/components/examples/b"}}}}}}}},
   "delete": {"operationId": "a/delete", "responses": {"204": {"description": "gone"}}}
  },
  "/b": {"get": {"operationId": "b/get", "responses": {"200": {"description": "ok"}}}}
 },
 "components": {
  "parameters": {"id": {"name": "id", "in": "path", "required": true, "description": "x", "schema": {"type": "integer"}}},
  "schemas": {
   "a": {"type": "object", "description": "an a", "example": {}, "properties": {
    "description": {"type": "string", "description": "a property named description stays"},
    "user": {"$ref": "#/components/schemas/user"}}},
   "user": {"type": "object", "x-github": {}, "properties": {"login": {"type": "string", "example": "octocat"}}},
   "unused": {"type": "string"}
  },
  "examples": {"a": {"value": {"description": "d"}}, "b": {"value": {}}, "unused": {"value": 1}}
 }
}`

func TestTrim(t *testing.T) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(full), &doc))
	got, err := Trim(doc, []string{"a/get"})
	require.NoError(t, err)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))

	paths := m["paths"].(map[string]any)
	require.Equal(t, []string{"/a/{id}"}, keys(paths), "only the listed operations")
	item := paths["/a/{id}"].(map[string]any)
	require.ElementsMatch(t, []string{"get", "parameters"}, keys(item))
	op := item["get"].(map[string]any)
	require.ElementsMatch(t, []string{"operationId", "summary", "responses"}, keys(op), "no prose, no tags")

	comps := m["components"].(map[string]any)
	require.ElementsMatch(t, []string{"a", "user"}, keys(comps["schemas"].(map[string]any)), "what the operation reaches")
	require.ElementsMatch(t, []string{"a", "b"}, keys(comps["examples"].(map[string]any)), "examples, also those referenced inside a value")
	require.ElementsMatch(t, []string{"id"}, keys(comps["parameters"].(map[string]any)))
	a := comps["schemas"].(map[string]any)["a"].(map[string]any)
	require.ElementsMatch(t, []string{"type", "properties"}, keys(a))
	require.Contains(t, a["properties"], "description", "a property named description is not prose")
	user := comps["schemas"].(map[string]any)["user"].(map[string]any)
	require.Equal(t, map[string]any{"login": map[string]any{"type": "string"}}, user["properties"])

	_, err = Trim(doc, []string{"a/get", "c/missing"})
	require.ErrorContains(t, err, "operations not in the description: c/missing")
}

func TestErratumFailsWhenFixedUpstream(t *testing.T) {
	paths := map[string]any{"/x": map[string]any{"get": map[string]any{"schema": map[string]any{"anyOf": []any{}}}}}
	e := erratum{at: []string{"/x", "get", "schema"}, from: "allOf", to: "anyOf"}
	require.ErrorContains(t, e.apply(paths), "fixed upstream?")
	paths["/x"].(map[string]any)["get"].(map[string]any)["schema"] = map[string]any{"allOf": []any{1}}
	require.NoError(t, e.apply(paths))
	require.Equal(t, map[string]any{"anyOf": []any{1}}, paths["/x"].(map[string]any)["get"].(map[string]any)["schema"])
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
