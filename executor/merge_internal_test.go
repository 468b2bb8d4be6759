package executor

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/promptparts"
)

func TestAutoMergeProblems(t *testing.T) {
	t.Parallel()
	on := promptparts.AutoMerge{Enabled: true, MaxChangedLines: 10, Approvals: 1}
	green := mergeFacts{ChangedLines: 5, Checks: map[string]string{"test": "success"}, Approvals: 1}
	with := func(f func(*mergeFacts)) mergeFacts {
		out := green
		out.Checks = map[string]string{}
		for k, v := range green.Checks {
			out.Checks[k] = v
		}
		f(&out)
		return out
	}
	required := func(names ...string) promptparts.AutoMerge {
		am := on
		am.Checks = names
		return am
	}
	for _, tc := range []struct {
		name  string
		am    promptparts.AutoMerge
		facts mergeFacts
		want  []string
	}{
		{"disabled", promptparts.AutoMerge{MaxChangedLines: 10}, green,
			[]string{"the Delivery requirements do not allow auto-merge"}},
		{"enabled without a threshold", promptparts.AutoMerge{Enabled: true}, green,
			[]string{"the Delivery requirements do not allow auto-merge"}},
		{"holds", on, green, nil},
		{"at the threshold", on, with(func(f *mergeFacts) { f.ChangedLines = 10 }), nil},
		{"over the threshold", on, with(func(f *mergeFacts) { f.ChangedLines = 11 }),
			[]string{"it changes 11 lines, over the threshold of 10"}},
		{"draft", on, with(func(f *mergeFacts) { f.Draft = true }),
			[]string{"the pull request is a draft"}},
		{"no approval", on, with(func(f *mergeFacts) { f.Approvals = 0 }),
			[]string{"it has 0 approving reviews of the 1 required"}},
		{"no approval needed", promptparts.AutoMerge{Enabled: true, MaxChangedLines: 10}, with(func(f *mergeFacts) { f.Approvals = 0 }), nil},
		{"no checks ran", on, with(func(f *mergeFacts) { f.Checks = map[string]string{} }),
			[]string{"no checks ran on the head commit"}},
		{"neutral and skipped are green", on, with(func(f *mergeFacts) { f.Checks["lint"] = "neutral"; f.Checks["docs"] = "skipped" }), nil},
		{"every check must be green, named in order", on, with(func(f *mergeFacts) {
			f.Checks["zeta"] = "failure"
			f.Checks["alpha"] = ""
			f.Checks["mid"] = "cancelled"
		}), []string{`the check "alpha" is still running`, `the check "mid" is cancelled`, `the check "zeta" is failure`}},
		{"only the required checks count", required("test"), with(func(f *mergeFacts) { f.Checks["flaky"] = "failure" }), nil},
		{"a required check has not run", required("test", "lint"), green,
			[]string{`the required check "lint" has not run`}},
		{"a required check runs", required("test"), with(func(f *mergeFacts) { f.Checks["test"] = "" }),
			[]string{`the required check "test" is still running`}},
		{"a required check failed", required("test"), with(func(f *mergeFacts) { f.Checks["test"] = "timed_out" }),
			[]string{`the required check "test" is timed_out`}},
		{"every problem is listed", required("test"), mergeFacts{Draft: true, ChangedLines: 400, Checks: map[string]string{"test": "failure"}},
			[]string{"the pull request is a draft", "it changes 400 lines, over the threshold of 10",
				`the required check "test" is failure`, "it has 0 approving reviews of the 1 required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, autoMergeProblems(tc.am, tc.facts))
		})
	}
}

func TestSentences(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"   ", 0},
		{"Fixed", 1},
		{"Fixed.", 1},
		{"  Fixed.  ", 1},
		{"The README stays in English.", 1},
		{"The README stays in English. Its readers read English.", 2},
		{"Really? Yes! Done.", 3},
		{"Really?! No.", 2},
		{"Wait... what?", 1},
		{"Wait. What?", 2},
		{"Done!!", 1},
		{"Why?? Because.", 2},
		{`He said "no."`, 1},
		{"...", 0},
		{"Bump to v1.2.3 because of the CVE.", 1},
		{"See README.md and docs/setup.md for details.", 1},
		{"It is fixed upstream in https://example.com/a.b/c.", 1},
		{"The API keeps it, e.g. for old clients.", 1},
		{"Kept as is, i.e. unchanged.", 1},
		{"Carol's pull request already makes the same fix:", 1},
		{"No (see #12.) Done.", 2},
		{`She said "no." Then she left.`, 2},
		{"已修复。", 1},
		{"已修复。请看。", 2},
		{"真的吗？是的！", 2},
		{"First line\nsecond line", 1},
	} {
		t.Run(tc.text, func(t *testing.T) {
			require.Equal(t, tc.want, sentences(tc.text))
		})
	}
}
