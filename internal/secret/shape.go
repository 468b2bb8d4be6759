package secret

import "regexp"

// shapes are credentials recognised by their published form rather than
// their value: what the Scrubber cannot know because the service never
// held it (a token a command printed, a key a script wrote to a file).
var shapes = []struct {
	kind string
	re   *regexp.Regexp
}{
	{"a GitHub token", regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b`)},
	{"an AWS access key id", regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`)},
	{"an API key (sk-…)", regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}\b`)},
	{"a Slack token", regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}\b`)},
	{"a private key", regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )?PRIVATE KEY-----`)},
}

// authHeader is a credential in an HTTP Authorization header; group 1 is
// what precedes the credential itself.
var authHeader = regexp.MustCompile(`(?i)(authorization:\s*(?:bearer|token|basic)\s+)\S+`)

// ScrubShapes replaces credentials of known shapes (see shapes, and
// Authorization headers) in text with Redacted; the header's name stays.
func ScrubShapes(text string) string {
	for _, s := range shapes {
		text = s.re.ReplaceAllString(text, Redacted)
	}
	return authHeader.ReplaceAllString(text, "${1}"+Redacted)
}

// Find reports whether text holds a secret the Scrubber knows, in any
// form Scrub replaces, or a credential of a known shape, and says which
// kind it is, never the value.
func (s *Scrubber) Find(text string) (kind string, found bool) {
	if s != nil && s.Scrub(text) != text {
		return "the value of a configured secret", true
	}
	for _, sh := range shapes {
		if sh.re.MatchString(text) {
			return sh.kind, true
		}
	}
	if authHeader.MatchString(text) {
		return "an Authorization header's credential", true
	}
	return "", false
}
