// Package secret keeps the secrets the process holds (installation tokens,
// API keys, webhook secrets) out of everything it writes down or sends to a
// model: a Scrubber knows every secret value and replaces it, and its common
// encodings, with [REDACTED] in any text.
package secret

import (
	"cmp"
	"encoding/base64"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Redacted replaces every secret the Scrubber finds.
const Redacted = "[REDACTED]"

// MinLength is the shortest value Add accepts as a secret. Shorter values
// would redact ordinary words; no real token or key is that short.
const MinLength = 8

// Scrubber replaces known secrets in text. It is safe for concurrent use:
// Scrub runs lock-free against an immutable replacer that Add rebuilds.
// The zero value is not usable; call New.
type Scrubber struct {
	mu       sync.Mutex
	secrets  map[string]struct{}
	replacer atomic.Pointer[strings.Replacer]
}

// New returns a Scrubber that knows the given secrets (empty and short values
// are ignored).
func New(secrets ...string) *Scrubber {
	s := &Scrubber{secrets: map[string]struct{}{}}
	s.replacer.Store(strings.NewReplacer())
	s.Add(secrets...)
	return s
}

// Add teaches the Scrubber more secrets, for example an installation token
// just minted. Values shorter than MinLength are ignored.
func (s *Scrubber) Add(secrets ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for _, v := range secrets {
		if len(v) < MinLength {
			continue
		}
		if _, ok := s.secrets[v]; ok {
			continue
		}
		s.secrets[v] = struct{}{}
		changed = true
	}
	if changed {
		s.replacer.Store(build(s.secrets))
	}
}

// Len reports how many secrets the Scrubber knows.
func (s *Scrubber) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.secrets)
}

// Scrub returns text with every known secret and its encodings replaced by
// Redacted.
func (s *Scrubber) Scrub(text string) string {
	if s == nil || text == "" {
		return text
	}
	return s.replacer.Load().Replace(text)
}

// build makes one replacer for every form of every secret. Longer patterns
// come first so that, where two match at one position, the longer wins
// (strings.Replacer prefers earlier arguments).
func build(secrets map[string]struct{}) *strings.Replacer {
	forms := map[string]struct{}{}
	for v := range secrets {
		for _, f := range encodings(v) {
			// Fragments of an encoding that became short are too likely to
			// match innocent text.
			if len(f) >= MinLength {
				forms[f] = struct{}{}
			}
		}
	}
	list := slices.SortedFunc(maps.Keys(forms), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
	pairs := make([]string, 0, 2*len(list))
	for _, f := range list {
		pairs = append(pairs, f, Redacted)
	}
	return strings.NewReplacer(pairs...)
}

// encodings lists the forms in which a secret commonly leaks: as is,
// URL-escaped, and base64 (standard and URL alphabets, at each of the three
// alignments it can take inside a longer base64 text), including the
// base64 of git's basic-auth pair "x-access-token:<token>". A token inside
// a URL ("https://x-access-token:<tok>@github.com") is covered by the plain
// form.
func encodings(v string) []string {
	out := []string{v, url.QueryEscape(v), url.PathEscape(v)}
	for _, plain := range []string{v, "x-access-token:" + v} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			out = append(out, strings.TrimRight(enc.EncodeToString([]byte(plain)), "="))
			out = append(out, alignedBase64(enc, plain)...)
		}
	}
	return out
}

// alignedBase64 returns, for a value that starts one or two bytes into a
// base64 stream, the run of characters that depend only on the value's own
// bytes. Those runs appear in any base64 text that contains the value.
func alignedBase64(enc *base64.Encoding, v string) []string {
	var out []string
	for k := 1; k <= 2; k++ {
		padded := strings.Repeat("\x00", k) + v
		s := enc.EncodeToString([]byte(padded))
		start := (8*k + 5) / 6
		end := (8 * len(padded)) / 6
		if end > start {
			out = append(out, s[start:end])
		}
	}
	// The unpadded value at alignment zero may still end mid-character when
	// followed by more data: drop the last, shared character.
	s := enc.EncodeToString([]byte(v))
	if end := (8 * len(v)) / 6; end > 0 {
		out = append(out, s[:end])
	}
	return out
}
