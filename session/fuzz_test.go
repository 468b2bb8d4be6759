package session

import (
	"encoding/json"
	"testing"
)

// FuzzAdmit feeds model-written arguments to the validator: it must never
// panic, and anything it admits is valid JSON.
func FuzzAdmit(f *testing.F) {
	r, err := NewRegistry(Tool{Name: "t", Handler: noop, Parameters: json.RawMessage(`{"type":"object",
		"properties":{"a":{"type":"array","items":{"type":"integer","maximum":5}},"s":{"type":"string","maxLength":3},
		"e":{"enum":["x",1,null]},"o":{"type":"object","additionalProperties":{"type":"boolean"}}},"required":["s"]}`)})
	if err != nil {
		f.Fatal(err)
	}
	tool := r.lookup("t")
	for _, seed := range []string{`{"s":"ab"}`, `{"a":[1,2.5],"s":"abcd"}`, `{"o":{"k":true,"j":1},"s":""}`, ``, `[`, `null`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, args string) {
		got, refusal := tool.admit(t.Context(), Call{Name: "t", Arguments: json.RawMessage(args)})
		if refusal == "" && !json.Valid(got) {
			t.Fatalf("admitted invalid JSON %q", got)
		}
	})
}
