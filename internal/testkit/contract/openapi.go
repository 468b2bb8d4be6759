package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Spec is an OpenAPI 3.0 description loaded for checking messages.
type Spec struct {
	doc      map[string]any
	ops      []*Operation
	compiler *Compiler
	base     string // URL of the converted components resource
}

// Operation is one documented operation.
type Operation struct {
	// ID is the operationId, e.g. "checks/create".
	ID string
	// Method is upper case; Path is the template, e.g.
	// "/repos/{owner}/{repo}/check-runs/{check_run_id}".
	Method, Path string
	// Docs is the operation's documentation URL, if any.
	Docs string

	spec     *Spec
	segments []segment
	raw      map[string]any
	params   map[string]map[string]any // "query:per_page" → parameter object

	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema // by where, compiled on first use
}

type segment struct {
	literal string
	param   string // when not literal
	multi   bool   // x-multi-segment: the value may span slashes
}

// LoadOpenAPI parses an OpenAPI 3.0 description (JSON) and converts its
// component schemas for validation; name makes its in-memory URLs unique.
func LoadOpenAPI(name string, raw []byte) (*Spec, error) {
	v, err := DecodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("decoding the %s description: %w", name, err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decoding the %s description: not an object", name)
	}
	s := &Spec{doc: doc, compiler: NewCompiler(true), base: "mem://contract/" + name + "/components.json"}
	comps, _ := dig(doc, "components", "schemas").(map[string]any)
	defs := map[string]any{}
	for n, sch := range comps {
		defs[n] = ConvertSchema(sch, s.rewrite)
	}
	if err := s.compiler.Add(s.base, map[string]any{"$defs": defs}); err != nil {
		return nil, err
	}
	paths, _ := doc["paths"].(map[string]any)
	for p, rawItem := range paths {
		item, _ := rawItem.(map[string]any)
		shared, _ := item["parameters"].([]any)
		for m, rawOp := range item {
			op, ok := rawOp.(map[string]any)
			if m == "parameters" || !ok {
				continue
			}
			o := &Operation{ID: str(op, "operationId"), Method: strings.ToUpper(m), Path: p, spec: s, raw: op,
				params: map[string]map[string]any{}, schemas: map[string]*jsonschema.Schema{}}
			o.Docs, _ = dig(op, "externalDocs", "url").(string)
			list, _ := op["parameters"].([]any)
			for _, prm := range append(append([]any(nil), shared...), list...) {
				pm := s.deref(prm)
				o.params[str(pm, "in")+":"+str(pm, "name")] = pm
			}
			for _, seg := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
				if name, ok := strings.CutPrefix(seg, "{"); ok && strings.HasSuffix(name, "}") {
					name = strings.TrimSuffix(name, "}")
					multi, _ := o.params["path:"+name]["x-multi-segment"].(bool)
					o.segments = append(o.segments, segment{param: name, multi: multi})
				} else {
					o.segments = append(o.segments, segment{literal: seg})
				}
			}
			s.ops = append(s.ops, o)
		}
	}
	sort.Slice(s.ops, func(i, j int) bool { return s.ops[i].Path+" "+s.ops[i].Method < s.ops[j].Path+" "+s.ops[j].Method })
	return s, nil
}

func (s *Spec) rewrite(ref string) string {
	if name, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok {
		return s.base + "#/$defs/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
	}
	return ref // an unsupported reference fails to compile, loudly
}

// deref follows a local $ref (#/components/...) to its object.
func (s *Spec) deref(v any) map[string]any {
	m, _ := v.(map[string]any)
	for range 8 {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
		keys := make([]string, len(parts))
		for i, p := range parts {
			keys[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
		}
		m, _ = dig(s.doc, keys...).(map[string]any)
	}
	return m
}

// Operations returns every operation, sorted by path and method.
func (s *Spec) Operations() []*Operation { return append([]*Operation(nil), s.ops...) }

// Operation returns the operation with this operationId, or nil.
func (s *Spec) Operation(id string) *Operation {
	for _, o := range s.ops {
		if o.ID == id {
			return o
		}
	}
	return nil
}

// Match finds the operation for method and an escaped request path
// (r.URL.EscapedPath()), with the path parameters' values. When the path
// matches a template under another method only, it returns nil and the
// methods documented for it. Literal segments win over parameters, so
// /issues/comments/1 is not /issues/{issue_number}/comments.
func (s *Spec) Match(method, escapedPath string) (*Operation, map[string]string, []string) {
	raw := strings.Split(strings.TrimPrefix(escapedPath, "/"), "/")
	segs := make([]string, len(raw))
	for i, r := range raw {
		u, err := url.PathUnescape(r)
		if err != nil {
			u = r
		}
		segs[i] = u
	}
	var best *Operation
	var bestVals map[string]string
	var bestScore string
	var others []string
	for _, o := range s.ops {
		vals := map[string]string{}
		score, ok := matchSegments(o.segments, segs, vals)
		if !ok {
			continue
		}
		if o.Method != strings.ToUpper(method) {
			others = append(others, o.Method)
			continue
		}
		if best == nil || score > bestScore {
			best, bestVals, bestScore = o, vals, score
		}
	}
	if best != nil {
		return best, bestVals, nil
	}
	sort.Strings(others)
	return nil, nil, others
}

// matchSegments matches a template; the score ranks literals over
// parameters from left to right ("l" > "p").
func matchSegments(tpl []segment, segs []string, vals map[string]string) (string, bool) {
	if len(tpl) == 0 {
		return "", len(segs) == 0
	}
	if len(segs) == 0 {
		return "", false
	}
	t := tpl[0]
	if t.literal != "" || t.param == "" {
		if segs[0] != t.literal {
			return "", false
		}
		rest, ok := matchSegments(tpl[1:], segs[1:], vals)
		return "l" + rest, ok
	}
	if segs[0] == "" {
		return "", false
	}
	n := 1
	if t.multi {
		n = len(segs) - len(tpl) + 1
	}
	for take := 1; take <= n && take <= len(segs); take++ {
		rest, ok := matchSegments(tpl[1:], segs[take:], vals)
		if ok {
			vals[t.param] = strings.Join(segs[:take], "/")
			return "p" + rest, true
		}
	}
	return "", false
}

// CheckRequest checks a request to o: its path parameters' values, its
// query (an undocumented parameter is a problem too) and its JSON body.
func (o *Operation) CheckRequest(pathValues map[string]string, query url.Values, header http.Header, body []byte) []Problem {
	var out []Problem
	names := make([]string, 0, len(pathValues))
	for n := range pathValues {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, o.checkParam("path", n, pathValues[n])...)
	}
	keys := make([]string, 0, len(query))
	for k := range query {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := o.params["query:"+k]; !ok {
			out = append(out, Problem{Where: "query parameter " + k, Reason: "not documented for this operation"})
			continue
		}
		for _, v := range query[k] {
			out = append(out, o.checkParam("query", k, v)...)
		}
	}
	for key, p := range o.params {
		if in, name, _ := strings.Cut(key, ":"); in == "query" && p["required"] == true && !query.Has(name) {
			out = append(out, Problem{Where: "query parameter " + name, Reason: "required, missing"})
		}
	}
	rb := o.spec.deref(o.raw["requestBody"])
	empty := len(bytes.TrimSpace(body)) == 0
	switch {
	case rb == nil && !empty:
		out = append(out, Problem{Where: "request body", Reason: "this operation takes no body"})
	case rb == nil:
	case empty && rb["required"] == true:
		out = append(out, Problem{Where: "request body", Reason: "required, missing"})
	case !empty:
		out = append(out, o.checkBody("request body", dig(rb, "content"), header.Get("Content-Type"), body, "request")...)
	}
	return out
}

// CheckResponse checks o's answer: a documented status, and a body that
// the status's schema accepts (or no body where none is documented).
// Errors any endpoint may answer, when not documented for o, need a JSON
// body with a message (GitHub's basic-error shape): 400 (unparsable JSON),
// 401 (bad credentials), 403 (forbidden, secondary rate limit), 404 (no
// such resource, or one the token may not see), 422 (invalid fields), 429
// (rate limit) and 5xx. GitHub documents these for the whole API ("Client
// errors" and rate limits in its REST guides) rather than per operation.
func (o *Operation) CheckResponse(status int, header http.Header, body []byte) []Problem {
	where := "response " + strconv.Itoa(status)
	resp, key := o.response(status)
	if resp == nil {
		if crossCutting(status) {
			return o.checkGenericError(where, body)
		}
		return []Problem{{Where: where, Reason: "status not documented for this operation (documented: " + strings.Join(o.Statuses(), ", ") + ")"}}
	}
	var out []Problem
	if link := header.Get("Link"); link != "" {
		if hs, _ := dig(resp, "headers").(map[string]any); hs["Link"] == nil {
			out = append(out, Problem{Where: where + " header Link", Reason: "pagination is not documented for this operation"})
		}
	}
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if len(bytes.TrimSpace(body)) > 0 {
			out = append(out, Problem{Where: where + " body", Reason: "no body is documented"})
		}
		return out
	}
	return append(out, o.checkBody(where+" body", content, header.Get("Content-Type"), body, "response:"+key)...)
}

func crossCutting(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusUnprocessableEntity, http.StatusTooManyRequests:
		return true
	}
	return status >= 500
}

var genericError = map[string]any{
	"type": "object", "required": []any{"message"},
	"properties": map[string]any{"message": map[string]any{"type": "string"}, "documentation_url": map[string]any{"type": "string"}},
}

func (o *Operation) checkGenericError(where string, body []byte) []Problem {
	sch, err := o.compile("generic-error", func() any { return genericError })
	if err != nil {
		return []Problem{{Where: where, Reason: err.Error()}}
	}
	v, err := DecodeJSON(body)
	if err != nil {
		return []Problem{{Where: where + " body", Reason: "not JSON: " + err.Error()}}
	}
	return Validate(sch, where+" body", v)
}

// Statuses returns the documented statuses of o, sorted.
func (o *Operation) Statuses() []string {
	rs, _ := o.raw["responses"].(map[string]any)
	out := make([]string, 0, len(rs))
	for k := range rs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// response finds the documented response for status: exact, then 2XX
// style, then default.
func (o *Operation) response(status int) (map[string]any, string) {
	rs, _ := o.raw["responses"].(map[string]any)
	for _, k := range []string{strconv.Itoa(status), strconv.Itoa(status/100) + "XX", "default"} {
		if r, ok := rs[k]; ok {
			return o.spec.deref(r), k
		}
	}
	return nil, ""
}

func (o *Operation) checkBody(where string, rawContent any, contentType string, body []byte, key string) []Problem {
	content, _ := rawContent.(map[string]any)
	mt, _, _ := mime.ParseMediaType(contentType)
	media, ok := content[mt].(map[string]any)
	if !ok {
		if len(content) == 1 {
			for k := range content {
				if !isJSON(k) || !isJSON(mt) {
					return []Problem{{Where: where, Reason: fmt.Sprintf("content type %q, documented %q", contentType, k)}}
				}
				media, _ = content[k].(map[string]any)
			}
		} else {
			var types []string
			for k := range content {
				types = append(types, k)
			}
			sort.Strings(types)
			return []Problem{{Where: where, Reason: fmt.Sprintf("content type %q, documented %s", contentType, strings.Join(types, ", "))}}
		}
	}
	if !isJSON(mt) {
		return nil // only JSON bodies are checked
	}
	v, err := DecodeJSON(body)
	if err != nil {
		return []Problem{{Where: where, Reason: "not JSON: " + err.Error()}}
	}
	rawSchema, ok := media["schema"]
	if !ok {
		return nil
	}
	sch, err := o.compile(key, func() any {
		converted := ConvertSchema(rawSchema, o.spec.rewrite)
		if key == "request" {
			converted = Strict(converted)
		}
		return converted
	})
	if err != nil {
		return []Problem{{Where: where, Reason: err.Error()}}
	}
	return Validate(sch, where, v)
}

func isJSON(mt string) bool {
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func (o *Operation) checkParam(in, name, value string) []Problem {
	where := in + " parameter " + name
	p, ok := o.params[in+":"+name]
	if !ok {
		return []Problem{{Where: where, Reason: "not documented for this operation"}}
	}
	rawSchema, ok := p["schema"]
	if !ok {
		return nil
	}
	sch, err := o.compile(in+":"+name, func() any { return ConvertSchema(rawSchema, o.spec.rewrite) })
	if err != nil {
		return []Problem{{Where: where, Reason: err.Error()}}
	}
	resolved := o.spec.deref(rawSchema)
	return Validate(sch, where, paramValue(resolved, value))
}

// paramValue types a parameter's text as its schema says, so that "abc"
// fails an integer and "3" passes one.
func paramValue(schema map[string]any, text string) any {
	switch schema["type"] {
	case "integer", "number":
		if _, err := strconv.ParseFloat(text, 64); err == nil {
			return json.Number(text)
		}
	case "boolean":
		if b, err := strconv.ParseBool(text); err == nil {
			return b
		}
	case "array":
		var items []any
		for _, part := range strings.Split(text, ",") {
			item, _ := schema["items"].(map[string]any)
			items = append(items, paramValue(item, part))
		}
		return items
	}
	return text
}

func (o *Operation) compile(key string, build func() any) (*jsonschema.Schema, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.schemas[key]; ok {
		return s, nil
	}
	loc := strings.TrimSuffix(o.spec.base, "components.json") + "ops/" + url.PathEscape(o.Method+" "+o.Path) + "/" + url.PathEscape(key) + ".json"
	if err := o.spec.compiler.Add(loc, build()); err != nil {
		return nil, err
	}
	s, err := o.spec.compiler.Compile(loc)
	if err != nil {
		return nil, err
	}
	o.schemas[key] = s
	return s, nil
}

// Example returns a fresh copy of the documented example body for status
// (the one named "default", else the first by name), or nil.
func (o *Operation) Example(status int) any {
	resp, _ := o.response(status)
	content, _ := resp["content"].(map[string]any)
	for _, mt := range []string{"application/json"} {
		media, _ := content[mt].(map[string]any)
		if ex, ok := media["example"]; ok {
			return deepCopy(ex)
		}
		exs, _ := media["examples"].(map[string]any)
		names := make([]string, 0, len(exs))
		for n := range exs {
			names = append(names, n)
		}
		sort.Strings(names)
		if _, ok := exs["default"]; ok {
			names = append([]string{"default"}, names...)
		}
		for _, n := range names {
			ex := o.spec.deref(exs[n])
			if ex == nil {
				continue
			}
			// @octokit/openapi puts some references inside the value.
			if v, ok := ex["value"].(map[string]any); ok && len(v) == 1 && v["$ref"] != nil {
				ex = o.spec.deref(v)
			}
			return deepCopy(ex["value"])
		}
	}
	return nil
}

// Example returns a fresh copy of components/examples/name's value, or
// nil.
func (s *Spec) Example(name string) any {
	ex, _ := dig(s.doc, "components", "examples", name).(map[string]any)
	if ex == nil {
		return nil
	}
	return deepCopy(ex["value"])
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}
