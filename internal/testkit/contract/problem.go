// Package contract holds test fakes to the platforms' own descriptions of
// their APIs: it converts OpenAPI 3.0 schemas to JSON Schema, matches a
// request to a documented operation (method and path template), and
// checks request and response messages against the documented schemas,
// reporting each mismatch as a Problem with a JSON pointer and a reason.
// The fakes in internal/testkit call it on every message they receive and
// send.
package contract

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Problem is one way a message breaks its contract.
type Problem struct {
	// Where is what the problem is in: "request body", "response 201
	// body", "query parameter per_page", "path", ….
	Where string
	// Pointer is the JSON pointer of the offending value inside Where's
	// document ("" for the whole of it).
	Pointer string
	// Reason says what is wrong, in the validator's words.
	Reason string
}

func (p Problem) String() string {
	if p.Pointer == "" {
		return p.Where + ": " + p.Reason
	}
	return p.Where + " at " + p.Pointer + ": " + p.Reason
}

var printer = message.NewPrinter(language.English)

// Schema is a compiled schema.
type Schema = jsonschema.Schema

// Validate checks v (decoded with DecodeJSON) against sch and returns one
// Problem per leaf failure, each located in where.
func Validate(sch *Schema, where string, v any) []Problem {
	err := sch.Validate(v)
	if err == nil {
		return nil
	}
	ve, ok := errors.AsType[*jsonschema.ValidationError](err)
	if !ok {
		return []Problem{{Where: where, Reason: err.Error()}}
	}
	var out []Problem
	seen := map[string]bool{}
	for _, leaf := range leaves(ve) {
		p := Problem{Where: where, Pointer: pointer(leaf.InstanceLocation), Reason: leaf.ErrorKind.LocalizedString(printer)}
		if _, undescribed := leaf.ErrorKind.(*kind.FalseSchema); undescribed {
			// Strict's unevaluatedProperties: false.
			p.Reason = "property not described by the schema (GitHub ignores unknown fields: a misspelt one?)"
		}
		if k := p.String(); !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

// leaves returns the failures at the bottom of e. Under anyOf and oneOf it
// keeps the branches that failed deepest: a value that is an object where
// an object-or-null is wanted fails the null branch at its own location,
// which says nothing useful.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	causes := e.Causes
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		depth := len(e.InstanceLocation)
		causes = drop(causes, func(c *jsonschema.ValidationError) bool { return shallow(c, depth) })
		// Branches told apart by a member's constant (a webhook's
		// "action"): the ones for another constant say nothing useful.
		causes = drop(causes, func(c *jsonschema.ValidationError) bool { return otherBranch(c, depth) })
	}
	var out []*jsonschema.ValidationError
	for _, c := range causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// drop removes the branches that useless reports, unless it would remove
// them all.
func drop(branches []*jsonschema.ValidationError, useless func(*jsonschema.ValidationError) bool) []*jsonschema.ValidationError {
	var keep []*jsonschema.ValidationError
	for _, b := range branches {
		if !useless(b) {
			keep = append(keep, b)
		}
	}
	if len(keep) == 0 {
		return branches
	}
	return keep
}

// shallow reports whether branch c failed only on the type of the value
// at depth, not inside it.
func shallow(c *jsonschema.ValidationError, depth int) bool {
	for _, l := range leaves(c) {
		if _, isType := l.ErrorKind.(*kind.Type); !isType || len(l.InstanceLocation) != depth {
			return false
		}
	}
	return true
}

// otherBranch reports whether branch c refused a direct member of the
// value at depth for not being its constant or one of its enum.
func otherBranch(c *jsonschema.ValidationError, depth int) bool {
	for _, l := range leaves(c) {
		switch l.ErrorKind.(type) {
		case *kind.Const, *kind.Enum:
			if len(l.InstanceLocation) == depth+1 {
				return true
			}
		}
	}
	return false
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

// DecodeJSON decodes a message body the way the validator wants it
// (numbers as json.Number, so large ids keep their digits).
func DecodeJSON(body []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(body))
}

// Compiler compiles schemas added as in-memory resources; it is safe for
// concurrent use, and compiles each location once.
type Compiler struct {
	mu       sync.Mutex
	c        *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

// NewCompiler returns a compiler for draft 2020-12 (unless a schema says
// otherwise) that knows OpenAPI's int32 and int64 and, with assertFormats,
// fails values of the wrong format (date-time, uri, email…) rather than
// only annotating them.
func NewCompiler(assertFormats bool) *Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if assertFormats {
		c.AssertFormat()
	}
	for name, bits := range map[string]uint{"int32": 32, "int64": 64} {
		c.RegisterFormat(&jsonschema.Format{Name: name, Validate: intFormat(bits)})
	}
	// The library's uri-template splits on "/" before matching braces, so
	// RFC 6570's {/path} expressions (GitHub's "…/followers{/other_user}")
	// fail it.
	c.RegisterFormat(&jsonschema.Format{Name: "uri-template", Validate: uriTemplate})
	return &Compiler{c: c, compiled: map[string]*jsonschema.Schema{}}
}

func intFormat(bits uint) func(any) error {
	return func(v any) error {
		n, ok := v.(interface{ Int64() (int64, error) })
		if !ok {
			return nil
		}
		i, err := n.Int64()
		if err != nil {
			return fmt.Errorf("not an int%d", bits)
		}
		if bits == 32 && (i < -1<<31 || i > 1<<31-1) {
			return fmt.Errorf("out of range for int32")
		}
		return nil
	}
}

// Add adds doc (a JSON Schema document, decoded as by DecodeJSON or built
// from maps) at url.
func (c *Compiler) Add(url string, doc any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.c.AddResource(url, doc); err != nil {
		return fmt.Errorf("adding schema %s: %w", url, err)
	}
	return nil
}

// Compile compiles the schema at loc (a URL, with a fragment if need be).
func (c *Compiler) Compile(loc string) (*jsonschema.Schema, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.compiled[loc]; ok {
		return s, nil
	}
	s, err := c.c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("compiling schema %s: %w", loc, err)
	}
	c.compiled[loc] = s
	return s, nil
}

// uriTemplate checks RFC 6570 syntax: balanced, unnested braces around
// non-empty expressions, and a URI reference around them.
func uriTemplate(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	var rest strings.Builder
	open := false
	start := 0
	for i, ch := range s {
		switch {
		case ch == '{' && open:
			return fmt.Errorf("nested curly braces")
		case ch == '{':
			open, start = true, i
		case ch == '}' && !open:
			return fmt.Errorf("unmatched closing brace")
		case ch == '}':
			if i == start+1 {
				return fmt.Errorf("empty expression")
			}
			open = false
		case !open:
			rest.WriteRune(ch)
		}
	}
	if open {
		return fmt.Errorf("no matching closing brace")
	}
	if _, err := url.Parse(rest.String()); err != nil {
		return fmt.Errorf("not a URI around its expressions: %w", err)
	}
	return nil
}
