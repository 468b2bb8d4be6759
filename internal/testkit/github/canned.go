package github

import (
	"strings"
)

// The fake's answers start from GitHub's published examples
// (components/examples in the REST description) and lay the fake's state
// over them, so that an answer carries every field GitHub sends, not only
// the ones a test thought of. What the fake does not model keeps the
// example's value, with the example's identities (octocat, Hello-World,
// api.github.com) rebased onto the fake's; lists and links the fake does
// model (labels, assignees, a milestone) are emptied, so that no example
// content leaks into a test's state.

// canned returns a fresh copy of the published example name, walking into
// it by keys (a string for an object member, an int for an array item).
// A missing example is a mistake in the fake: it fails the test and
// returns an empty object.
func (s *Server) canned(name string, keys ...any) map[string]any {
	spec, err := Spec()
	if err != nil {
		s.t.Errorf("fake GitHub: loading GitHub's REST description: %v", err)
		return map[string]any{}
	}
	v := spec.Example(name)
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k < len(l) {
				v = l[k]
			} else {
				v = nil
			}
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		s.t.Errorf("fake GitHub: no published example %s %v in testdata/api.github.com.json (add its operation to testdata/operations.txt)", name, keys)
		return map[string]any{}
	}
	return m
}

// overlay sets src's members on dst, merging objects member by member (so
// an example's nested fields the fake does not model stay) and replacing
// anything else, nulls included. It returns dst.
func overlay(dst, src map[string]any) map[string]any {
	for k, v := range src {
		sub, isObj := v.(map[string]any)
		cur, wasObj := dst[k].(map[string]any)
		if isObj && wasObj && sub != nil && cur != nil {
			overlay(cur, sub)
			continue
		}
		dst[k] = v
	}
	return dst
}

// rebase rewrites every string in v with r, in place, returning v.
func rebase(v any, r *strings.Replacer) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = rebase(e, r)
		}
	case []any:
		for i, e := range x {
			x[i] = rebase(e, r)
		}
	case string:
		return r.Replace(x)
	}
	return v
}

// only keeps the members of m that keep has, for answers that are a
// subset of a fuller object (a pull request in a list).
func only(m, keep map[string]any) map[string]any {
	for k := range m {
		if _, ok := keep[k]; !ok {
			delete(m, k)
		}
	}
	return m
}

// exampleRepo is the repository GitHub's examples are about.
const exampleRepo = "octocat/Hello-World"

// repoReplacer rebases the example repository's URLs and names onto
// fullName on this fake.
func (s *Server) repoReplacer(fullName string, extra ...string) *strings.Replacer {
	pairs := append([]string{
		"https://api.github.com/repos/" + exampleRepo, s.URL + "/repos/" + fullName,
		"https://github.com/" + exampleRepo, "https://github.com/" + fullName,
		"git:github.com/" + exampleRepo, "git:github.com/" + fullName,
		"git@github.com:" + exampleRepo, "git@github.com:" + fullName,
		"https://svn.github.com/" + exampleRepo, "https://svn.github.com/" + fullName,
	}, extra...)
	return strings.NewReplacer(pairs...)
}

// Example returns a fresh copy of GitHub's published example name
// (components/examples, e.g. "base-installation-items"), walking into it
// by keys, for a test that Handles a route of its own to start its answer
// from: the fake holds that answer to the description like its own.
func (s *Server) Example(name string, keys ...any) map[string]any { return s.canned(name, keys...) }

// Overlay sets src's members on dst, merging nested objects member by
// member and replacing anything else, and returns dst: a test's values laid
// over an Example.
func Overlay(dst, src map[string]any) map[string]any { return overlay(dst, src) }
