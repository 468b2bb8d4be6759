package promptparts

import (
	"errors"
	"testing"
)

// FuzzParsePatch feeds outside input to the save parser: it must never
// panic, and fail only with the two errors the API maps to 400 and 422.
func FuzzParsePatch(f *testing.F) {
	f.Add([]byte(teamConfig))
	f.Add([]byte(`{"base_revision": 1, "overrides": {"runtime/work": null, "coding": {"text": "x", "base": "y"}}, "skills": {"a": null}}`))
	f.Add([]byte(`{"policy": {"rules": [{"id": 1}, null, []]}, "sections": {"delivery_requirements": {"auto_merge": {"checks": [1]}}}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"base_revision": 1e400}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := ParsePatch(body)
		if err == nil {
			return
		}
		var se *SyntaxError
		var ve *ValidationError
		if !errors.As(err, &se) && !errors.As(err, &ve) {
			t.Fatalf("unexpected error type %T: %v", err, err)
		}
		if ve != nil && len(ve.Problems) == 0 {
			t.Fatal("a validation error without problems")
		}
	})
}
