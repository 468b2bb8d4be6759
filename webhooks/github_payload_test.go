package webhooks

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"
)

// parseGitHubOld is the parser as it was, decoding the whole payload with
// go-github: the oracle the lean decoding is held to.
func parseGitHubOld(event string, body []byte, bot, label string) (ghEvent, error) {
	return parseGitHubDecoding(github.ParseWebHook, event, body, bot, label)
}

// wireTypes is the wire type decodeGitHub reads each processed event into.
var wireTypes = map[string]reflect.Type{
	"issues":                      reflect.TypeFor[wireIssuesEvent](),
	"issue_comment":               reflect.TypeFor[wireIssueCommentEvent](),
	"pull_request":                reflect.TypeFor[wirePullRequestEvent](),
	"pull_request_review":         reflect.TypeFor[wireReviewEvent](),
	"pull_request_review_comment": reflect.TypeFor[wireReviewCommentEvent](),
	"pull_request_review_thread":  reflect.TypeFor[wireReviewThreadEvent](),
	"check_run":                   reflect.TypeFor[wireCheckRunEvent](),
	"check_suite":                 reflect.TypeFor[wireCheckSuiteEvent](),
	"workflow_run":                reflect.TypeFor[wireWorkflowRunEvent](),
	"push":                        reflect.TypeFor[wirePushEvent](),
	"installation":                reflect.TypeFor[wireInstallationEvent](),
	"installation_repositories":   reflect.TypeFor[wireInstallationReposEvent](),
}

// readPaths returns the dotted JSON paths a wire type declares, as
// encoding/json names them in a json.UnmarshalTypeError's Field ("" is
// the payload itself).
func readPaths(t reflect.Type) map[string]bool {
	paths := map[string]bool{"": true}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			p := prefix + name
			paths[p] = true
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(ft, p+".")
			}
		}
	}
	walk(t, "")
	return paths
}

// recorded keeps of ev.Repo the fields read downstream (githubStep): the
// old decoding filled all of GitHub's, the lean one only those.
func recorded(ev ghEvent) ghEvent {
	if r := ev.Repo; r != nil {
		ev.Repo = &github.Repository{ID: r.ID, DefaultBranch: r.DefaultBranch, Description: r.Description}
	}
	return ev
}

// comparison is how a payload's lean decoding compared with the old one.
type comparison int

const (
	sameEvent comparison = iota // both parsed it, to equal events
	sameError                   // both failed, the same way
	lenient                     // go-github failed on a field nobody reads; the lean decoding need not
)

// requireSameAsOld parses a payload both ways and requires the same
// outcome. Both succeeding must give equal events. A syntax error must
// read the same; a wrong type in a field the parsers read must fail on the
// same field at the same offset (only the Go type names in its message
// differ). Only a failure go-github found in a field the parsers do not
// read (a wrong type, a malformed timestamp) may become a success.
func requireSameAsOld(t testing.TB, event string, body []byte, bot, label string) comparison {
	t.Helper()
	oldEv, oldErr := parseGitHubOld(event, body, bot, label)
	newEv, newErr := parseGitHubWith(event, body, bot, label)
	if oldErr == nil {
		require.NoError(t, newErr, "%s %.300s", event, body)
		require.Equal(t, recorded(oldEv), recorded(newEv), "%s %.300s", event, body)
		return sameEvent
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case newErr != nil && newErr.Error() == oldErr.Error():
		return sameError
	case errors.As(oldErr, &syntax):
		// Both must refuse it. encoding/json checks the whole document
		// first; the new decoder may meet a value of the wrong type before
		// the bad syntax after it, and names that.
		var syntactic *jsontext.SyntacticError
		var semantic *jsonv2.SemanticError
		require.True(t, errors.As(newErr, &syntactic) || errors.As(newErr, &semantic), "%s: %v against %v; %.300s", event, newErr, oldErr, body)
		return sameError
	case errors.As(oldErr, &typ) && readPaths(wireTypes[event])[typ.Field]:
		// The same field is refused, named by its JSON pointer.
		var got *jsonv2.SemanticError
		require.ErrorAs(t, newErr, &got, "%s: %v; %.300s", event, oldErr, body)
		require.Equal(t, typ.Field, withoutIndexes(string(got.JSONPointer)), "%s: %v against %v; %.300s", event, newErr, oldErr, body)
		return sameError
	}
	return lenient
}

// withoutIndexes writes a JSON pointer of the new decoder as encoding/json
// writes a field path: dotted, without the indexes of array elements (no
// name the wire types declare needs a pointer's escapes).
func withoutIndexes(pointer string) string {
	var keep []string
	for _, p := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		if strings.Trim(p, "0123456789") != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, ".")
}

// TestWireTypesCoverEveryEvent keeps the oracle's map in step with the
// events decodeGitHub reads.
func TestWireTypesCoverEveryEvent(t *testing.T) {
	for event := range githubEvents {
		require.Contains(t, wireTypes, event)
		_, err := decodeGitHub(event, []byte(`{}`))
		require.NoError(t, err, event)
	}
	require.Len(t, wireTypes, len(githubEvents))
	_, err := decodeGitHub("ping", []byte(`{}`))
	require.Error(t, err)
}

// patches make the fixtures take the branches their examples do not: the
// bot as sender, assignee or reviewer, the trigger label, mentions and
// references, failed checks, review states, replies, long and deleted
// pushes. Each sets a field only where its object exists.
var patches = map[string]func(m map[string]any){
	"bot sender": func(m map[string]any) { setAt(m, "superagent[bot]", "sender", "login") },
	"bot author": func(m map[string]any) {
		for _, o := range []string{"comment", "review"} {
			setAt(m, "superagent[bot]", o, "user", "login")
			setAt(m, "Bot", o, "user", "type")
		}
	},
	"bot assignee": func(m map[string]any) {
		setAt(m, "SuperAgent[bot]", "assignee", "login")
		setAt(m, "superagent", "requested_reviewer", "login")
		for _, o := range []string{"issue", "pull_request"} {
			setAt(m, []any{map[string]any{"login": "x"}, nil, map[string]any{"login": "superagent"}}, o, "assignees")
		}
		setAt(m, []any{map[string]any{"login": "superagent[bot]"}}, "pull_request", "requested_reviewers")
	},
	"trigger label": func(m map[string]any) { setAt(m, "SuperAgent", "label", "name") },
	"mentions": func(m map[string]any) {
		text := "@superagent please see #3, other/repo#4 and https://github.com/Codertocat/Hello-World/issues/5"
		for _, o := range []string{"issue", "comment", "review", "pull_request"} {
			setAt(m, text, o, "body")
		}
	},
	"merged":       func(m map[string]any) { setAt(m, true, "pull_request", "merged") },
	"fork head":    func(m map[string]any) { setAt(m, "someone/fork", "pull_request", "head", "repo", "full_name") },
	"null head":    func(m map[string]any) { setAt(m, nil, "pull_request", "head") },
	"reply":        func(m map[string]any) { setAt(m, float64(7), "comment", "in_reply_to_id") },
	"no line":      func(m map[string]any) { setAt(m, nil, "comment", "line") },
	"approved":     func(m map[string]any) { setAt(m, "APPROVED", "review", "state") },
	"changes":      func(m map[string]any) { setAt(m, "changes_requested", "review", "state") },
	"empty review": func(m map[string]any) { setAt(m, "commented", "review", "state"); setAt(m, " ", "review", "body") },
	"failed checks": func(m map[string]any) {
		for _, o := range []string{"check_run", "check_suite", "workflow_run"} {
			setAt(m, "failure", o, "conclusion")
		}
		setAt(m, "ci", "check_run", "app", "slug")
		setAt(m, map[string]any{"slug": "", "name": "Some CI", "id": float64(9)}, "check_suite", "app")
		setAt(m, float64(0), "check_suite", "latest_check_runs_count")
		setAt(m, map[string]any{"title": "3 failed", "summary": "see the log"}, "check_run", "output")
		setAt(m, "main", "check_run", "check_suite", "head_branch")
		setAt(m, "Fix it", "workflow_run", "display_title")
	},
	"check pulls": func(m map[string]any) {
		here := map[string]any{"id": float64(186853002), "full_name": "Codertocat/Hello-World"}
		other := map[string]any{"id": float64(1), "full_name": "other/repo"}
		prs := []any{
			map[string]any{"number": float64(1), "base": map[string]any{"repo": other}, "head": map[string]any{"ref": "x", "repo": other}},
			map[string]any{"number": float64(2), "base": map[string]any{"repo": here}, "head": map[string]any{"ref": "feature", "repo": here}},
			nil,
			map[string]any{"number": float64(3), "base": map[string]any{"repo": map[string]any{"full_name": "codertocat/hello-world"}}},
		}
		for _, o := range []string{"check_run", "check_suite", "workflow_run"} {
			setAt(m, prs, o, "pull_requests")
		}
	},
	"long push": func(m map[string]any) {
		if _, ok := m["commits"]; !ok {
			return
		}
		var cs []any
		for i := range 25 {
			cs = append(cs, map[string]any{"id": strings.Repeat("ab", i%5), "message": "change\nbody"})
		}
		m["commits"] = append(cs, nil)
	},
	"deleted branch": func(m map[string]any) {
		if _, ok := m["ref"]; ok {
			m["deleted"] = true
		}
	},
	"tag push": func(m map[string]any) {
		if _, ok := m["ref"]; ok {
			m["ref"] = "refs/tags/v1"
		}
	},
	"no installation id": func(m map[string]any) { setAt(m, nil, "installation", "id") },
	"null repo":          func(m map[string]any) { setAt(m, nil, "repository") },
	"null description":   func(m map[string]any) { setAt(m, nil, "repository", "description") },
}

// setAt sets value at path in m when every object above it exists.
func setAt(m map[string]any, value any, path ...string) {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
	m[path[len(path)-1]] = value
}

// variants returns a payload with each patch applied alone, with all of
// them, and under each action its event processes.
func variants(t testing.TB, event string, body []byte) [][]byte {
	t.Helper()
	var out [][]byte
	encode := func(fns ...func(map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(body, &m))
		for _, fn := range fns {
			fn(m)
		}
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return b
	}
	names := slices.Sorted(maps.Keys(patches))
	var all []func(map[string]any)
	for _, n := range names {
		out = append(out, encode(patches[n]))
		if n != "null repo" && n != "tag push" && n != "deleted branch" {
			all = append(all, patches[n])
		}
	}
	out = append(out, encode(all...))
	actions := slices.Sorted(maps.Keys(githubActions[event]))
	for _, a := range actions {
		setAction := func(m map[string]any) { m["action"] = a }
		out = append(out, encode(setAction), encode(append([]func(map[string]any){setAction}, all...)...))
	}
	return out
}

// TestLeanDecodingMatchesGoGitHub holds the lean decoding to go-github's:
// every fixture, under every processed event name, with the patches and
// actions of variants, with and without a bot slug and trigger label; the
// fuzz target's seed corpus (each field down to three levels removed, null
// or of another type); and odd documents.
func TestLeanDecodingMatchesGoGitHub(t *testing.T) {
	files, err := filepath.Glob("testdata/github/*/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	events := slices.Sorted(maps.Keys(githubEvents))
	counts := map[comparison]int{}
	check := func(event string, body []byte) {
		counts[requireSameAsOld(t, event, body, "superagent", DefaultTriggerLabel)]++
		counts[requireSameAsOld(t, event, body, "", "")]++
	}
	cards := 0
	for _, file := range files {
		body, err := os.ReadFile(file)
		require.NoError(t, err)
		own := filepath.Base(filepath.Dir(file))
		for _, event := range events {
			check(event, body)
		}
		for _, v := range variants(t, own, body) {
			check(own, v)
			if ev, err := parseGitHub(own, v, "superagent"); err == nil && ev.Card != nil {
				cards++
			}
		}
	}
	for _, seed := range githubSeeds(t, 3, false) {
		counts[requireSameAsOld(t, seed.event, seed.body, "superagent", DefaultTriggerLabel)]++
	}
	for _, c := range []struct{ event, body string }{
		{"push", `null`},
		{"push", ` null `},
		{"push", `[]`},
		{"push", `"refs/heads/main"`},
		{"push", `{"ref":"refs/heads/main","ref":null,"repository":{"full_name":"a/b"}}`},
		{"push", `{"Ref":"refs/heads/main","REPOSITORY":{"Full_Name":"a/b","default_branch":"main"},"commits":[{}]}`},
		{"push", `{"ref":"refs/heads/main","repository":{"full_name":"a/b"},"commits":{}}`},
		{"push", `{"ref":"refs/heads/main","repository":{"full_name":"a/b"},"created_at":"not a time"}`},
		{"push", `{"ref":"refs/heads/main","repository":{"full_name":"a/b","pushed_at":"x"}}`},
		{"issue_comment", `{"action":"created","comment":{"body":"@superagent #1"},"issue":{"number":1},"repository":{"full_name":"a/b"}}`},
		{"issue_comment", `{"action":"created","comment":{"body":"x"},"issue":{"number":1.5},"repository":{"full_name":"a/b"}}`},
		{"issue_comment", `{"action":"created","comment":{"body":"x"},"issue":{"number":99999999999999999999},"repository":{"full_name":"a/b"}}`},
		{"issue_comment", `{"action":"created","comment":{"body":"x","id":"1"},"issue":{"number":1},"repository":{"full_name":"a/b"}}`},
		{"issue_comment", `{"action":"created","comment":{"body":"x"},"issue":{"number":1},"issue":null,"repository":{"full_name":"a/b"}}`},
		{"issue_comment", `{"action":"created","comment":{"body":"x"},"issue":{"number":1},"issue":{"title":"t"},"repository":{"full_name":"a/b","id":1,"default_branch":"main"}}`},
		{"issue_comment", `{"action":"created","comment":{"body":"x"},"issue":{"number":1,"title":"t","title":null},"repository":{"full_name":"a/b"}}`},
		{"issue_comment", `{"action":"created","comment":{"body":"x"},"issue":{"number":1},"repository":{"full_name":"a/b"},"installation":{"id":1,"account":5}}`},
		{"issue_comment", `{"action":"created","comment":{"body":"x"},"issue":{"number":1},"repository":{"full_name":"a/b"}`},
		{"issue_comment", `{"action":"created","comment":{"body":"x\ud800"},"issue":{"number":1},"repository":{"full_name":"a/b"}} x`},
		{"issues", `{"action":"opened","issue":{"number":1,"assignees":[null,"x"]},"repository":{"full_name":"a/b"}}`},
		{"installation", `{"action":"created","installation":{"id":1,"account":{"login":"o","id":2,"type":"Organization"}},"repositories":[null,{"id":3,"full_name":"o/r","private":true}]}`},
		{"installation_repositories", `{"action":"added","installation":{"id":1},"repositories_added":[{"id":3,"private":"yes"}]}`},
		{"check_run", `{"action":"completed","check_run":{"conclusion":"failure","app":{"slug":"ci"},"pull_requests":[{"number":1,"base":{"repo":{"id":"x"}}}]},"repository":{"full_name":"a/b"}}`},
	} {
		for _, event := range events {
			counts[requireSameAsOld(t, event, []byte(c.body), "superagent", DefaultTriggerLabel)]++
		}
		counts[requireSameAsOld(t, c.event, []byte(c.body), "superagent", DefaultTriggerLabel)]++
	}
	t.Logf("same event %d, same error %d, lenient %d; %d variants made cards",
		counts[sameEvent], counts[sameError], counts[lenient], cards)
	// The variants must reach the parsers' branches, not only drops.
	require.Greater(t, cards, 500)
	require.Greater(t, counts[sameError], 100)
}

// FuzzLeanDecodingMatchesGoGitHub compares the two decodings on arbitrary
// payloads, seeded with the fixtures alone: their hostile variants are
// TestLeanDecodingMatchesGoGitHub's, and thousands of 15 KB seeds would
// leave a short fuzzing run no time past gathering their coverage.
func FuzzLeanDecodingMatchesGoGitHub(f *testing.F) {
	files, _ := filepath.Glob("testdata/github/*/*.json")
	for _, file := range files {
		body, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(filepath.Base(filepath.Dir(file)), body)
	}
	f.Add("push", []byte(`{"ref":"refs/heads/x","repository":{"full_name":"a/b"},"commits":[{}]}`))
	f.Add("push", []byte(`null`))
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		requireSameAsOld(t, event, body, "superagent", DefaultTriggerLabel)
	})
}

// BenchmarkParseGitHub parses a real 15 KB issue_comment payload (the
// bench's) as ingestion does, against the baseline of the old go-github
// decoding in the same run.
func BenchmarkParseGitHub(b *testing.B) {
	body, err := os.ReadFile("../internal/bench/testdata/issue_comment.created.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		parse func(event string, body []byte, bot, label string) (ghEvent, error)
	}{
		{"baseline: go-github", parseGitHubOld},
		{"lean", parseGitHubWith},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if ev, err := c.parse("issue_comment", body, "superagent", DefaultTriggerLabel); err != nil || ev.Card == nil {
					b.Fatal(ev, err)
				}
			}
		})
	}
}
