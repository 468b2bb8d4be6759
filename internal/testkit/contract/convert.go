package contract

import (
	"strings"
)

// ConvertSchema turns an OpenAPI 3.0 Schema Object into JSON Schema
// (draft 2020-12) for a validator, with rewrite mapping each $ref (e.g.
// "#/components/schemas/simple-user") to the URL of the converted target.
// It does not change s.
//
// The rules, and why:
//   - $ref: rewritten; its siblings are dropped, as OpenAPI 3.0 says they
//     are ignored.
//   - nullable: true with a type: the type becomes [type, "null"], and null
//     joins an enum. OpenAPI 3.0.3 reads nullable as not widening an enum,
//     but GitHub's description marks fields nullable whose enum lacks null
//     (check-run conclusion) and the API sends null there: the intent wins.
//   - nullable: true without a type (allOf, anyOf, oneOf, $ref): the schema
//     becomes anyOf [{"type": "null"}, schema]. OpenAPI 3.0.3 gives
//     nullable no effect without a type; GitHub uses it to mean "or null"
//     (nullable-integration), which is what the API does.
//   - boolean exclusiveMinimum/exclusiveMaximum (draft 4 style) become the
//     numeric form, taking the value of minimum/maximum.
//   - discriminator, xml, externalDocs, example and x-* extensions are
//     annotations or tooling hints with no JSON Schema meaning: dropped.
//   - everything else (type, properties, required, enum, format,
//     additionalProperties, items, allOf/anyOf/oneOf/not, lengths, ranges,
//     pattern, readOnly, default) means the same in both and is kept.
func ConvertSchema(s any, rewrite func(ref string) string) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s // true or false
	}
	if ref, ok := m["$ref"].(string); ok {
		return map[string]any{"$ref": rewrite(ref)}
	}
	out := map[string]any{}
	for k, v := range m {
		switch {
		case k == "nullable" || k == "discriminator" || k == "xml" || k == "externalDocs" || k == "example" ||
			strings.HasPrefix(k, "x-"):
		case k == "properties" || k == "patternProperties":
			props := map[string]any{}
			if pm, ok := v.(map[string]any); ok {
				for name, ps := range pm {
					props[name] = ConvertSchema(ps, rewrite)
				}
			}
			out[k] = props
		case k == "items" || k == "additionalProperties" || k == "not":
			out[k] = ConvertSchema(v, rewrite)
		case k == "allOf" || k == "anyOf" || k == "oneOf":
			list := []any{}
			if l, ok := v.([]any); ok {
				for _, x := range l {
					list = append(list, ConvertSchema(x, rewrite))
				}
			}
			out[k] = list
		case k == "exclusiveMinimum" || k == "exclusiveMaximum":
			b, isBool := v.(bool)
			if !isBool {
				out[k] = v
				break
			}
			bound := map[string]string{"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum"}[k]
			if b {
				if lim, ok := m[bound]; ok {
					out[k] = lim
				}
			}
		default:
			out[k] = v
		}
	}
	for _, k := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
		if b, ok := m[k].(bool); ok && b {
			delete(out, map[string]string{"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum"}[k])
		}
	}
	if n, _ := m["nullable"].(bool); !n {
		return out
	}
	if t, ok := out["type"].(string); ok {
		out["type"] = []any{t, "null"}
		if enum, ok := out["enum"].([]any); ok && !hasNull(enum) {
			out["enum"] = append(append([]any(nil), enum...), nil)
		}
		return out
	}
	return map[string]any{"anyOf": []any{map[string]any{"type": "null"}, out}}
}

func hasNull(l []any) bool {
	for _, v := range l {
		if v == nil {
			return true
		}
	}
	return false
}

// Strict makes a converted request schema refuse what it does not
// describe: each object schema with properties and no word on others gets
// unevaluatedProperties: false, down through properties and items (not
// into allOf/anyOf/oneOf branches, whose siblings' properties they cannot
// see, nor through $ref). GitHub's request schemas never say
// additionalProperties: false and GitHub ignores unknown fields, so
// without this a misspelt field would pass unseen; Validate words these
// failures as undescribed properties. It changes s in place and returns
// it.
func Strict(s any) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s
	}
	if props, ok := m["properties"].(map[string]any); ok {
		_, addl := m["additionalProperties"]
		_, uneval := m["unevaluatedProperties"]
		if !addl && !uneval {
			m["unevaluatedProperties"] = false
		}
		for _, p := range props {
			Strict(p)
		}
	}
	if items, ok := m["items"]; ok {
		Strict(items)
	}
	// A nullable object is anyOf [null, object]: that object is still the
	// request's own.
	if list, ok := m["anyOf"].([]any); ok && len(list) == 2 {
		if first, ok := list[0].(map[string]any); ok && len(first) == 1 && first["type"] == "null" {
			Strict(list[1])
		}
	}
	return m
}
