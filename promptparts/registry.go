package promptparts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The keys of the built-in parts. Their texts are in defaults/<key>.md.
const (
	KeyShared              = "runtime/shared"
	KeyOrchestrator        = "runtime/orchestrator"
	KeyWorker              = "runtime/worker"
	KeySubscriptions       = "runtime/subscriptions"
	KeyReplies             = "runtime/replies"
	KeyDispatch            = "runtime/dispatch"
	KeyWork                = "runtime/work"
	KeyAdmission           = "runtime/admission"
	KeyHandoffOrchestrator = "runtime/handoff/orchestrator"
	KeyHandoffWorker       = "runtime/handoff/worker"
	KeySkillFeishu         = "skill/feishu"
	KeySkillGitHub         = "skill/github"
	KeyEnvironment         = "runtime/environment"
	KeyPolicy              = "runtime/policy"
	KeyPolicyNone          = "runtime/policy/none"
	// KeyCoding is the Executor's coding prompt.
	KeyCoding = "coding"
)

// RequiredKeys are the parts every release must ship, the coding prompt
// among them (docs/prompts.md#parts). A release may ship more; overrides may name any of them.
var RequiredKeys = []string{
	KeyShared, KeyOrchestrator, KeyWorker, KeySubscriptions, KeyReplies,
	KeyDispatch, KeyWork, KeyAdmission, KeyHandoffOrchestrator, KeyHandoffWorker,
	KeySkillFeishu, KeySkillGitHub, KeyEnvironment, KeyPolicy, KeyPolicyNone,
	KeyCoding,
}

// templatePlaceholders lists, for each template part, the placeholders it
// must keep. No other placeholder may appear in a template.
var templatePlaceholders = map[string][]string{
	KeyEnvironment: {"{variables}"},
	KeyPolicy:      {"{version}", "{mode}", "{rules}"},
	KeyPolicyNone:  {"{version}", "{mode}"},
}

// Placeholders returns the placeholders the part with key must keep; nil
// for parts that are not templates.
func Placeholders(key string) []string {
	return slices.Clone(templatePlaceholders[key])
}

// placeholder matches what a template could mean as a placeholder: a bare
// lowercase identifier in braces. JSON or code in braces does not match.
var placeholder = regexp.MustCompile(`\{[a-z][a-z0-9_]*\}`)

// checkTemplate returns the problems of text as the template for key:
// required placeholders missing, unknown ones present.
func checkTemplate(key, text string) []string {
	want, ok := templatePlaceholders[key]
	if !ok {
		return nil
	}
	var problems []string
	for _, p := range want {
		if !strings.Contains(text, p) {
			problems = append(problems, fmt.Sprintf("template must keep the placeholder %s", p))
		}
	}
	seen := map[string]bool{}
	for _, p := range placeholder.FindAllString(text, -1) {
		if !slices.Contains(want, p) && !seen[p] {
			seen[p] = true
			problems = append(problems, fmt.Sprintf("unknown placeholder %s (allowed: %s)", p, strings.Join(want, ", ")))
		}
	}
	return problems
}

// Registry is the set of built-in texts of one release, by key.
type Registry struct {
	texts map[string]string
	sums  map[string]string
	keys  []string
}

// NewRegistry reads every defaults/**/*.md file of fsys; the key is the path
// without ".md". Every required key must be present and every template must
// carry exactly its placeholders.
func NewRegistry(fsys fs.FS) (*Registry, error) {
	r := &Registry{texts: map[string]string{}, sums: map[string]string{}}
	err := fs.WalkDir(fsys, ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() || path.Ext(p) != ".md" {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		key := strings.TrimSuffix(p, ".md")
		r.texts[key] = string(b)
		r.sums[key] = SHA256(string(b))
		r.keys = append(r.keys, key)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading built-in prompt parts: %w", err)
	}
	// The panel lists parts in the order they are assembled in
	// (docs/prompts.md#assembly-order), then any other part a release ships.
	sortKeys(r.keys)
	var problems []string
	for _, k := range RequiredKeys {
		if _, ok := r.texts[k]; !ok {
			problems = append(problems, fmt.Sprintf("%s: missing built-in part %s.md", k, k))
		}
	}
	for k := range templatePlaceholders {
		if text, ok := r.texts[k]; ok {
			for _, p := range checkTemplate(k, text) {
				problems = append(problems, k+": "+p)
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, fmt.Errorf("invalid built-in prompt parts: %s", strings.Join(problems, "; "))
	}
	return r, nil
}

// Keys returns every key: the required ones in assembly order, then the rest
// sorted.
func (r *Registry) Keys() []string { return slices.Clone(r.keys) }

// Has reports whether key is a built-in part of this release.
func (r *Registry) Has(key string) bool {
	_, ok := r.texts[key]
	return ok
}

// Text returns the built-in text of key.
func (r *Registry) Text(key string) string { return r.texts[key] }

// SHA256 returns the hex SHA-256 of the built-in text of key.
func (r *Registry) SHA256(key string) string { return r.sums[key] }

// SkillNames returns the names of the built-in skills ("github", "feishu"…).
func (r *Registry) SkillNames() []string {
	var names []string
	for _, k := range r.keys {
		if name, ok := strings.CutPrefix(k, "skill/"); ok {
			names = append(names, name)
		}
	}
	return names
}

// SHA256 is the hex SHA-256 of text, the identity of a default text.
func SHA256(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}
