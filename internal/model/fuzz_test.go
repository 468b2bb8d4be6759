package model_test

import (
	"testing"

	"github.com/superagent-dev/superagent/internal/model"
)

// FuzzParseUsage feeds provider-controlled usage objects to the parser: it
// must never panic nor report negative counts.
func FuzzParseUsage(f *testing.F) {
	for _, seed := range []string{
		`{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}`,
		`{"prompt_cache_hit_tokens":5,"prompt_cache_miss_tokens":7,"completion_tokens":1}`,
		`{"input_tokens":3,"cache_read_input_tokens":9,"cache_creation_input_tokens":2,"output_tokens":1}`,
		`{"prompt_tokens":1,"cached_tokens":50}`, `null`, `{}`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		u, err := model.ParseUsage(raw)
		if err != nil {
			return
		}
		if u.Input < 0 && u.CacheRead >= 0 && u.CacheWrite >= 0 {
			// Input is derived by subtraction; it only goes negative when
			// the provider itself sent negative numbers.
			t.Fatalf("negative input from non-negative cache counts: %+v (%s)", u, raw)
		}
	})
}
