package contract_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/testkit/contract"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	v, err := contract.DecodeJSON([]byte(s))
	require.NoError(t, err)
	return v
}

func rewrite(ref string) string {
	return "mem://x/components.json#/$defs/" + ref[len("#/components/schemas/"):]
}

func TestConvertSchema(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"nullable type", `{"type":"string","nullable":true}`, `{"type":["string","null"]}`},
		{"nullable enum gains null", `{"type":"string","enum":["a","b"],"nullable":true}`, `{"type":["string","null"],"enum":["a","b",null]}`},
		{"nullable enum with null already", `{"type":"string","enum":["a",null],"nullable":true}`, `{"type":["string","null"],"enum":["a",null]}`},
		{"nullable without type", `{"allOf":[{"$ref":"#/components/schemas/user"}],"nullable":true}`,
			`{"anyOf":[{"type":"null"},{"allOf":[{"$ref":"mem://x/components.json#/$defs/user"}]}]}`},
		{"nullable oneOf", `{"oneOf":[{"type":"string"},{"type":"integer"}],"nullable":true}`,
			`{"anyOf":[{"type":"null"},{"oneOf":[{"type":"string"},{"type":"integer"}]}]}`},
		{"nullable false is dropped", `{"type":"integer","nullable":false}`, `{"type":"integer"}`},
		{"ref siblings are ignored", `{"$ref":"#/components/schemas/user","description":"x","nullable":true}`,
			`{"$ref":"mem://x/components.json#/$defs/user"}`},
		{"boolean exclusiveMinimum", `{"type":"number","minimum":0,"exclusiveMinimum":true}`, `{"type":"number","exclusiveMinimum":0}`},
		{"false exclusiveMaximum", `{"type":"number","maximum":9,"exclusiveMaximum":false}`, `{"type":"number","maximum":9}`},
		{"annotations and extensions dropped", `{"type":"object","discriminator":{"propertyName":"k"},"example":{},"xml":{},"externalDocs":{},"x-github":{}}`,
			`{"type":"object"}`},
		{"nested", `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"array","items":{"$ref":"#/components/schemas/user","nullable":true}},"example":{"type":"string","nullable":true}}}`,
			`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"array","items":{"$ref":"mem://x/components.json#/$defs/user"}},"example":{"type":["string","null"]}}}`},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"string","nullable":true}}`,
			`{"type":"object","additionalProperties":{"type":["string","null"]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := decode(t, tc.in)
			before, _ := json.Marshal(in)
			got, err := json.Marshal(contract.ConvertSchema(in, rewrite))
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(got))
			after, _ := json.Marshal(in)
			require.JSONEq(t, string(before), string(after), "the input is left alone")
		})
	}
}

// The converted schemas validate as OpenAPI means them.
func TestConvertedSchemaValidates(t *testing.T) {
	c := contract.NewCompiler(true)
	comps := map[string]any{"user": contract.ConvertSchema(decode(t, `{"type":"object","required":["login"],"properties":{"login":{"type":"string"}}}`), rewrite)}
	require.NoError(t, c.Add("mem://x/components.json", map[string]any{"$defs": comps}))
	schema := contract.ConvertSchema(decode(t, `{
		"type":"object","additionalProperties":false,"required":["conclusion","user"],
		"properties":{
			"conclusion":{"type":"string","enum":["success","failure"],"nullable":true},
			"user":{"allOf":[{"$ref":"#/components/schemas/user"}],"nullable":true},
			"at":{"type":"string","format":"date-time"},
			"count":{"type":"integer","format":"int32"},
			"followers_url":{"type":"string","format":"uri-template"}
		}}`), rewrite)
	require.NoError(t, c.Add("mem://x/run.json", schema))
	sch, err := c.Compile("mem://x/run.json")
	require.NoError(t, err)
	for _, tc := range []struct {
		body    string
		pointer string // "" when valid
		reason  string
	}{
		{`{"conclusion":null,"user":null}`, "", ""},
		{`{"conclusion":"success","user":{"login":"octocat"},"at":"2024-01-02T03:04:05Z","count":3}`, "", ""},
		{`{"conclusion":null,"user":null,"followers_url":"https://api.github.com/users/octocat/following{/other_user}{?since,all}"}`, "", ""},
		{`{"conclusion":null,"user":null,"followers_url":"https://x/{/a"}`, "/followers_url", "no matching closing brace"},
		{`{"conclusion":null,"user":null,"followers_url":"https://x/{a{b}}"}`, "/followers_url", "nested curly braces"},
		{`{"conclusion":"maybe","user":null}`, "/conclusion", "value must be one of"},
		{`{"user":null}`, "", "missing property 'conclusion'"},
		{`{"conclusion":null,"user":{}}`, "/user", "missing property 'login'"},
		{`{"conclusion":null,"user":null,"extra":1}`, "", "additional properties 'extra' not allowed"},
		{`{"conclusion":null,"user":null,"at":"yesterday"}`, "/at", "date-time"},
		{`{"conclusion":null,"user":null,"count":4294967296}`, "/count", "int32"},
		{`{"conclusion":1,"user":null}`, "/conclusion", "got number, want null or string"},
	} {
		problems := contract.Validate(sch, "body", decode(t, tc.body))
		if tc.reason == "" {
			require.Empty(t, problems, tc.body)
			continue
		}
		require.NotEmpty(t, problems, tc.body)
		require.Equal(t, tc.pointer, problems[0].Pointer, "%s: %v", tc.body, problems)
		require.Contains(t, problems[0].Reason, tc.reason, tc.body)
	}
}
