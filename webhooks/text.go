package webhooks

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/superagent-dev/superagent/tickets"
)

// maxReferences caps the references a card carries.
const maxReferences = 20

// mentions reports whether text mentions @handle (or @handle[bot]) outside
// code and quoted lines, as GitHub would link it: the @ starts the text or
// follows a character that cannot be part of a word, path or address, and
// the handle is not followed by more handle characters.
func mentions(text, handle string) bool {
	if handle == "" {
		return false
	}
	needle := "@" + strings.ToLower(handle)
	for _, line := range plainLines(text) {
		lower := strings.ToLower(line)
		for i := 0; ; {
			j := strings.Index(lower[i:], needle)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(needle)
			i = start + 1
			if start > 0 {
				prev, _ := utf8.DecodeLastRuneInString(lower[:start])
				if isHandleRune(prev) || strings.ContainsRune("/.@`", prev) {
					continue
				}
			}
			rest := lower[end:]
			rest = strings.TrimPrefix(rest, "[bot]")
			if next, _ := utf8.DecodeRuneInString(rest); rest != "" && (isHandleRune(next) || next == '[') {
				continue
			}
			return true
		}
	}
	return false
}

func isHandleRune(r rune) bool {
	return r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// plainLines returns text's lines outside fenced code blocks and block
// quotes, with inline code spans blanked.
func plainLines(text string) []string {
	var out []string
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if strings.HasPrefix(trimmed, ">") {
			continue
		}
		out = append(out, inlineCode.ReplaceAllString(line, " "))
	}
	return out
}

var (
	inlineCode = regexp.MustCompile("`[^`]*`")
	// https://host/owner/repo/issues/12 or …/pull/12 (GitHub or Enterprise).
	refURL = regexp.MustCompile(`https?://[A-Za-z0-9.-]+(?::\d+)?/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/(?:issues|pull)/(\d{1,9})\b`)
	// owner/repo#12, or #12 alone (this repository).
	refShort = regexp.MustCompile(`(^|[^A-Za-z0-9_/&#-])(?:([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+))?#(\d{1,9})\b`)
)

// references finds issue and pull request references in text: URLs,
// owner/repo#N and #N (in repo).
func references(text, repo string) []tickets.Reference {
	var refs []tickets.Reference
	for _, line := range plainLines(text) {
		for _, m := range refURL.FindAllStringSubmatch(line, -1) {
			if n, _ := strconv.Atoi(m[2]); n > 0 {
				refs = append(refs, tickets.Reference{Repo: m[1], Number: n})
			}
		}
		stripped := refURL.ReplaceAllString(line, " ")
		for _, m := range refShort.FindAllStringSubmatch(stripped, -1) {
			n, _ := strconv.Atoi(m[3])
			r := m[2]
			if r == "" {
				r = repo
			}
			if r == "" || n == 0 {
				continue
			}
			refs = append(refs, tickets.Reference{Repo: r, Number: n})
		}
	}
	return refs
}

// dedupeRefs drops repeats, references to the card's own Thread and
// anything beyond maxReferences, keeping the first occurrence's order.
func dedupeRefs(refs []tickets.Reference, repo string, self int) []tickets.Reference {
	seen := map[string]bool{}
	out := refs[:0]
	for _, r := range refs {
		if r.Number > 0 && r.Number == self && strings.EqualFold(r.Repo, repo) {
			continue
		}
		k := strings.ToLower(r.String())
		if seen[k] || len(out) == maxReferences {
			continue
		}
		seen[k] = true
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
