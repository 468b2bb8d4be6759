package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"
)

// schema is the subset of JSON Schema that tool parameters use: types,
// properties, required, additionalProperties, items, enum, const, string
// lengths, number bounds, array lengths and anyOf. Unknown keywords are
// ignored, as JSON Schema prescribes.
type schema struct {
	Type                 typeList           `json:"type"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
	Items                *schema            `json:"items"`
	Enum                 []any              `json:"enum"`
	Const                *any               `json:"const"`
	MinLength            *int               `json:"minLength"`
	MaxLength            *int               `json:"maxLength"`
	Minimum              *float64           `json:"minimum"`
	Maximum              *float64           `json:"maximum"`
	MinItems             *int               `json:"minItems"`
	MaxItems             *int               `json:"maxItems"`
	AnyOf                []*schema          `json:"anyOf"`

	noExtra bool
	extra   *schema
}

// typeList accepts "type": "string" and "type": ["string", "null"].
type typeList []string

// UnmarshalJSON accepts one type name or a list.
func (t *typeList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = typeList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("type must be a string or a list of strings")
	}
	*t = many
	return nil
}

// compileSchema parses a tool's parameter schema. Empty means an object
// with no declared properties.
func compileSchema(raw json.RawMessage) (*schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return &schema{Type: typeList{"object"}}, nil
	}
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("parsing parameter schema: %w", err)
	}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	if len(s.Type) != 1 || s.Type[0] != "object" {
		return nil, fmt.Errorf("parameter schema must have type object")
	}
	return &s, nil
}

func (s *schema) prepare() error {
	if len(s.AdditionalProperties) > 0 {
		var b bool
		if err := json.Unmarshal(s.AdditionalProperties, &b); err == nil {
			s.noExtra = !b
		} else {
			var sub schema
			if err := json.Unmarshal(s.AdditionalProperties, &sub); err != nil {
				return fmt.Errorf("additionalProperties must be a boolean or a schema")
			}
			s.extra = &sub
		}
	}
	for _, sub := range s.Properties {
		if err := sub.prepare(); err != nil {
			return err
		}
	}
	if s.extra != nil {
		if err := s.extra.prepare(); err != nil {
			return err
		}
	}
	if s.Items != nil {
		if err := s.Items.prepare(); err != nil {
			return err
		}
	}
	for _, sub := range s.AnyOf {
		if err := sub.prepare(); err != nil {
			return err
		}
	}
	return nil
}

// validate appends a problem for everything in v that the schema refuses.
func (s *schema) validate(path string, v any, problems *[]string) {
	add := func(format string, args ...any) {
		*problems = append(*problems, fmt.Sprintf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	if len(s.Type) > 0 && !s.Type.matches(v) {
		add("must be %s, not %s", strings.Join(s.Type, " or "), jsonType(v))
		return
	}
	if len(s.Enum) > 0 && !contains(s.Enum, v) {
		add("must be one of %s", list(s.Enum))
	}
	if s.Const != nil && !reflect.DeepEqual(*s.Const, v) {
		add("must be %v", *s.Const)
	}
	if len(s.AnyOf) > 0 {
		ok := false
		for _, sub := range s.AnyOf {
			var p []string
			sub.validate(path, v, &p)
			if len(p) == 0 {
				ok = true
				break
			}
		}
		if !ok {
			add("matches none of the allowed forms")
		}
	}
	switch x := v.(type) {
	case string:
		n := utf8.RuneCountInString(x)
		if s.MinLength != nil && n < *s.MinLength {
			add("must be at least %d characters", *s.MinLength)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			add("must be at most %d characters, is %d", *s.MaxLength, n)
		}
	case float64:
		if s.Minimum != nil && x < *s.Minimum {
			add("must be at least %v", *s.Minimum)
		}
		if s.Maximum != nil && x > *s.Maximum {
			add("must be at most %v", *s.Maximum)
		}
	case []any:
		if s.MinItems != nil && len(x) < *s.MinItems {
			add("must have at least %d items", *s.MinItems)
		}
		if s.MaxItems != nil && len(x) > *s.MaxItems {
			add("must have at most %d items", *s.MaxItems)
		}
		if s.Items != nil {
			for i, item := range x {
				s.Items.validate(fmt.Sprintf("%s[%d]", path, i), item, problems)
			}
		}
	case map[string]any:
		for _, name := range s.Required {
			if _, ok := x[name]; !ok {
				add("missing required property %q", name)
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub := path + "." + k
			if p, ok := s.Properties[k]; ok {
				p.validate(sub, x[k], problems)
			} else if s.noExtra {
				*problems = append(*problems, fmt.Sprintf("%s: unknown property", sub))
			} else if s.extra != nil {
				s.extra.validate(sub, x[k], problems)
			}
		}
	}
}

func (t typeList) matches(v any) bool {
	for _, name := range t {
		switch name {
		case "integer":
			if f, ok := v.(float64); ok && f == math.Trunc(f) {
				return true
			}
		case jsonType(v):
			return true
		}
	}
	return false
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func contains(list []any, v any) bool {
	for _, e := range list {
		if reflect.DeepEqual(e, v) {
			return true
		}
	}
	return false
}

func list(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		b, _ := json.Marshal(v)
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}
