package session

import (
	"encoding/json"
	"testing"
)

type fuzzArgs struct {
	A []int           `json:"a,omitempty" jsonschema:"maximum=5"`
	S string          `json:"s" jsonschema:"maxLength=3"`
	E string          `json:"e,omitempty" jsonschema:"enum=x,enum=y"`
	O map[string]bool `json:"o,omitempty"`
}

// FuzzAdmit feeds model-written arguments to the validator: it must never
// panic, and anything it admits is valid JSON.
func FuzzAdmit(f *testing.F) {
	r, err := NewRegistry(Spec[fuzzArgs]{Name: "t", Handler: noop[fuzzArgs]}.Tool())
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
