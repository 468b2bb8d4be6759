// Command trimspec writes the part of GitHub's REST OpenAPI description
// that the fake GitHub is held to: the operations listed in
// testdata/operations.txt, with every component they reach through $ref
// (schemas, parameters, responses, headers, examples) and nothing else.
// Descriptions and schema examples are dropped; the response examples in
// components/examples stay, because the fake's canned answers derive from
// them. The output is deterministic (sorted keys, indented), so a
// regenerated file only differs where the input did.
//
// Run it with go generate in internal/testkit/github. The full description
// (github-rest-openapi.json.gz, from the npm package @octokit/openapi) is
// looked for in shared/contracts above the working directory, or given
// with -spec.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	spec := flag.String("spec", "", "the full description, .json or .json.gz (default: shared/contracts/github-rest-openapi.json.gz above the working directory)")
	ops := flag.String("ops", "testdata/operations.txt", "operation ids to keep, one a line (# starts a comment)")
	out := flag.String("out", "testdata/api.github.com.json", "where to write the trimmed description")
	flag.Parse()
	if err := run(*spec, *ops, *out); err != nil {
		fmt.Fprintln(os.Stderr, "trimspec:", err)
		os.Exit(1)
	}
}

func run(specPath, opsPath, outPath string) error {
	if specPath == "" {
		p, err := findSpec()
		if err != nil {
			return err
		}
		specPath = p
	}
	doc, err := readSpec(specPath)
	if err != nil {
		return err
	}
	ids, err := readOps(opsPath)
	if err != nil {
		return err
	}
	trimmed, err := Trim(doc, ids)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(trimmed, "", " ")
	if err != nil {
		return fmt.Errorf("encoding the trimmed description: %w", err)
	}
	return os.WriteFile(outPath, append(b, '\n'), 0o644)
}

func findSpec() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "shared", "contracts", "github-rest-openapi.json.gz")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("shared/contracts/github-rest-openapi.json.gz not found above the working directory; pass -spec")
}

func readSpec(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the description: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		r = z
	}
	var doc map[string]any
	d := json.NewDecoder(r)
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	return doc, nil
}

func readOps(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the operation list: %w", err)
	}
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			ids = append(ids, line)
		}
	}
	return ids, sc.Err()
}

// methods are the operation keys of a path item.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Trim returns the description reduced to the operations ids and what they
// reference. An id the description does not hold is an error.
func Trim(doc map[string]any, ids []string) (map[string]any, error) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	paths, _ := doc["paths"].(map[string]any)
	outPaths := map[string]any{}
	t := &trimmer{doc: doc, comps: map[string]map[string]any{}}
	for p, raw := range paths {
		item, _ := raw.(map[string]any)
		outItem := map[string]any{}
		for _, m := range methods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			id, _ := op["operationId"].(string)
			if !want[id] {
				continue
			}
			delete(want, id)
			outItem[m] = t.operation(op)
		}
		if len(outItem) == 0 {
			continue
		}
		if ps, ok := item["parameters"].([]any); ok {
			outItem["parameters"] = t.parameters(ps)
		}
		outPaths[p] = outItem
	}
	if len(want) > 0 {
		var missing []string
		for id := range want {
			missing = append(missing, id)
		}
		sort.Strings(missing)
		return nil, fmt.Errorf("operations not in the description: %s", strings.Join(missing, ", "))
	}
	if err := t.closure(); err != nil {
		return nil, err
	}
	for _, e := range errata {
		if err := e.apply(outPaths); err != nil {
			return nil, err
		}
	}
	comps := map[string]any{}
	for kind, m := range t.comps {
		comps[kind] = m
	}
	info, _ := doc["info"].(map[string]any)
	return map[string]any{
		"openapi": doc["openapi"],
		"info": map[string]any{
			"title":   info["title"],
			"version": info["version"],
			"license": info["license"],
			"description": "A subset of " + fmt.Sprint(info["title"]) + " " + fmt.Sprint(info["version"]) +
				" (npm @octokit/openapi, generated/api.github.com.json) written by internal/testkit/github/internal/trimspec: " +
				"the operations in operations.txt and the components they reference, without descriptions.",
		},
		"paths":      outPaths,
		"components": comps,
	}, nil
}

type trimmer struct {
	doc   map[string]any
	comps map[string]map[string]any // kind → name → trimmed component
	queue []string                  // $refs met and not yet copied
}

func (t *trimmer) ref(r string) {
	t.queue = append(t.queue, r)
}

// closure copies every referenced component, following the references
// the copies hold.
func (t *trimmer) closure() error {
	for len(t.queue) > 0 {
		r := t.queue[0]
		t.queue = t.queue[1:]
		rest, ok := strings.CutPrefix(r, "#/components/")
		if !ok {
			return fmt.Errorf("unsupported $ref %q", r)
		}
		kind, name, ok := strings.Cut(rest, "/")
		if !ok {
			return fmt.Errorf("unsupported $ref %q", r)
		}
		if _, done := t.comps[kind][name]; done {
			continue
		}
		comps, _ := t.doc["components"].(map[string]any)
		src, ok := comps[kind].(map[string]any)[name]
		if !ok {
			return fmt.Errorf("$ref %q names nothing", r)
		}
		if t.comps[kind] == nil {
			t.comps[kind] = map[string]any{}
		}
		var v any
		switch kind {
		case "schemas":
			v = t.schema(src)
		case "parameters":
			v = t.parameter(src)
		case "responses":
			v = t.response(src)
		case "headers":
			v = t.header(src)
		case "examples":
			v = src // kept whole: the fake's canned answers
		default:
			return fmt.Errorf("unsupported $ref %q", r)
		}
		t.comps[kind][name] = v
	}
	return nil
}

func (t *trimmer) operation(op map[string]any) map[string]any {
	out := map[string]any{"operationId": op["operationId"]}
	for _, k := range []string{"summary", "externalDocs", "deprecated"} {
		if v, ok := op[k]; ok {
			out[k] = v
		}
	}
	if ps, ok := op["parameters"].([]any); ok {
		out["parameters"] = t.parameters(ps)
	}
	if rb, ok := op["requestBody"].(map[string]any); ok {
		out["requestBody"] = t.body(rb)
	}
	if rs, ok := op["responses"].(map[string]any); ok {
		resp := map[string]any{}
		for status, r := range rs {
			resp[status] = t.response(r)
		}
		out["responses"] = resp
	}
	return out
}

func (t *trimmer) parameters(ps []any) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		out = append(out, t.parameter(p))
	}
	return out
}

func (t *trimmer) parameter(p any) any {
	m, _ := p.(map[string]any)
	if r, ok := m["$ref"].(string); ok {
		t.ref(r)
		return map[string]any{"$ref": r}
	}
	out := map[string]any{}
	for _, k := range []string{"name", "in", "required", "style", "explode", "x-multi-segment", "deprecated"} {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	if s, ok := m["schema"]; ok {
		out["schema"] = t.schema(s)
	}
	return out
}

func (t *trimmer) header(h any) any {
	m, _ := h.(map[string]any)
	if r, ok := m["$ref"].(string); ok {
		t.ref(r)
		return map[string]any{"$ref": r}
	}
	out := map[string]any{}
	if s, ok := m["schema"]; ok {
		out["schema"] = t.schema(s)
	}
	if v, ok := m["required"]; ok {
		out["required"] = v
	}
	return out
}

func (t *trimmer) body(b map[string]any) any {
	if r, ok := b["$ref"].(string); ok {
		t.ref(r)
		return map[string]any{"$ref": r}
	}
	out := map[string]any{}
	if v, ok := b["required"]; ok {
		out["required"] = v
	}
	if c, ok := b["content"].(map[string]any); ok {
		out["content"] = t.content(c)
	}
	return out
}

func (t *trimmer) response(r any) any {
	m, _ := r.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		t.ref(ref)
		return map[string]any{"$ref": ref}
	}
	out := map[string]any{"description": m["description"]}
	if c, ok := m["content"].(map[string]any); ok {
		out["content"] = t.content(c)
	}
	if hs, ok := m["headers"].(map[string]any); ok {
		outH := map[string]any{}
		for name, h := range hs {
			outH[name] = t.header(h)
		}
		out["headers"] = outH
	}
	return out
}

func (t *trimmer) content(c map[string]any) map[string]any {
	out := map[string]any{}
	for mt, raw := range c {
		m, _ := raw.(map[string]any)
		o := map[string]any{}
		if s, ok := m["schema"]; ok {
			o["schema"] = t.schema(s)
		}
		if ex, ok := m["examples"].(map[string]any); ok {
			outEx := map[string]any{}
			for name, e := range ex {
				em, _ := e.(map[string]any)
				if r, ok := em["$ref"].(string); ok {
					t.ref(r)
					outEx[name] = map[string]any{"$ref": r}
					continue
				}
				// @octokit/openapi puts some references inside the
				// value ({"value": {"$ref": …}}).
				if v, ok := em["value"].(map[string]any); ok {
					if r, ok := v["$ref"].(string); ok && len(v) == 1 {
						t.ref(r)
					}
				}
				outEx[name] = e
			}
			o["examples"] = outEx
		}
		if ex, ok := m["example"]; ok {
			o["example"] = ex
		}
		out[mt] = o
	}
	return out
}

// schema copies a Schema Object without its annotations for people
// (description, example) and extensions, following its references.
func (t *trimmer) schema(s any) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s // true/false
	}
	if r, ok := m["$ref"].(string); ok {
		t.ref(r)
		return map[string]any{"$ref": r} // siblings of $ref are ignored in OpenAPI 3.0
	}
	out := map[string]any{}
	for k, v := range m {
		switch {
		case k == "description" || k == "example" || k == "externalDocs" || strings.HasPrefix(k, "x-"):
		case k == "properties" || k == "patternProperties":
			props := map[string]any{}
			for name, ps := range v.(map[string]any) {
				props[name] = t.schema(ps)
			}
			out[k] = props
		case k == "items" || k == "additionalProperties" || k == "not":
			out[k] = t.schema(v)
		case k == "allOf" || k == "anyOf" || k == "oneOf":
			var list []any
			for _, x := range v.([]any) {
				list = append(list, t.schema(x))
			}
			out[k] = list
		default:
			out[k] = v
		}
	}
	return out
}

// erratum corrects a schema the description gets wrong, where GitHub's
// published example and its API agree with each other and not with the
// schema. Each names its evidence; SEMANTICS.md beside the fake lists them.
type erratum struct {
	// at is the path of the schema under paths, as keys.
	at []string
	// from is a keyword renamed to to.
	from, to string
	why      string
}

var errata = []erratum{{
	at: []string{"/app/installations", "get", "responses", "200", "content", "application/json", "schema",
		"items", "properties", "account"},
	from: "allOf", to: "anyOf",
	why: "an installation's account is a user or organization (simple-user) or an enterprise, not both at once: " +
		"the installation schema says anyOf, and the operation's own example (base-installation-items) is a simple-user " +
		"that this allOf refuses",
}}

// apply corrects paths, where the erratum's operation is kept.
func (e erratum) apply(paths map[string]any) error {
	if item, _ := paths[e.at[0]].(map[string]any); item == nil || item[e.at[1]] == nil {
		return nil // the operation is not in operations.txt
	}
	var v any = paths
	for _, k := range e.at {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("erratum %v: no %q", e.at, k)
		}
		v = m[k]
	}
	m, ok := v.(map[string]any)
	if !ok || m[e.from] == nil {
		return fmt.Errorf("erratum %v: no %s to correct (fixed upstream? drop the erratum)", e.at, e.from)
	}
	m[e.to] = m[e.from]
	delete(m, e.from)
	return nil
}
