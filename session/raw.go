package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// MaxRawSchema is the largest parameter schema a Raw tool may have.
const MaxRawSchema = 16 << 10

// Raw declares a tool whose parameter schema comes from elsewhere (an MCP
// server's): the model reads schema as it is, and the Registry validates
// every call against it before handler runs, which receives the
// arguments undecoded in Call.Arguments. Check the schema with
// CheckSchema first: NewRegistry refuses the whole registry for one bad
// schema.
func Raw(name, description string, schema json.RawMessage, handler func(ctx context.Context, call Call) (string, error)) Tool {
	return Tool{Name: name, Description: description, Handler: handler, params: &params{schema: schema}}
}

// CheckSchema reports why schema cannot be a tool's parameters: it is not
// a JSON object schema of type object, is larger than MaxRawSchema, or
// does not compile (a reference outside the schema never loads).
func CheckSchema(schema json.RawMessage) error {
	if len(schema) > MaxRawSchema {
		return fmt.Errorf("the schema is %d bytes, over the limit of %d", len(schema), MaxRawSchema)
	}
	var top map[string]any
	dec := json.NewDecoder(bytes.NewReader(schema))
	if err := dec.Decode(&top); err != nil || top == nil {
		return errors.New("the schema is not a JSON object")
	}
	if top["type"] != "object" {
		return errors.New(`the schema's type is not "object"`)
	}
	_, err := newCompiler().compile("check", schema)
	return err
}
