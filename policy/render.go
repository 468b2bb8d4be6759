package policy

import (
	"strconv"
	"strings"
)

// The placeholders of the two Policy templates.
const (
	PlaceholderVersion = "{version}"
	PlaceholderMode    = "{mode}"
	PlaceholderRules   = "{rules}"
)

// RuleLine renders one rule as the prompt lists it:
// "- <name> (<id>): <instruction>". Later lines of a multi-line instruction
// are indented so they stay part of the list item.
func RuleLine(r Rule) string {
	instruction := strings.TrimSpace(r.Instruction)
	instruction = strings.ReplaceAll(instruction, "\r\n", "\n")
	instruction = strings.ReplaceAll(instruction, "\n", "\n  ")
	return "- " + strings.TrimSpace(r.Name) + " (" + r.ID + "): " + instruction
}

// RuleLines renders rules one per line, in order.
func RuleLines(rules []Rule) string {
	lines := make([]string, len(rules))
	for i, r := range rules {
		lines[i] = RuleLine(r)
	}
	return strings.Join(lines, "\n")
}

// ModeLine is what {mode} becomes: the accept mode and whether a person's
// explicit request is admitted whatever the rules say. The exemption rides on
// {mode} because the templates' placeholder set is fixed by the contract.
func ModeLine(p Policy) string {
	if p.ExplicitRequestExemption {
		return string(p.Mode) + " (explicit-request exemption: on)"
	}
	return string(p.Mode) + " (explicit-request exemption: off)"
}

// Render fills the Policy section: tmpl (runtime/policy) when at least one
// rule is enabled, otherwise none (runtime/policy/none). version is the
// configuration revision the policy belongs to. Placeholders are replaced in
// one pass, so text inside a rule is never expanded again.
func Render(tmpl, none string, version int64, p Policy) string {
	enabled := p.Enabled()
	v := strconv.FormatInt(version, 10)
	if len(enabled) == 0 {
		return strings.NewReplacer(PlaceholderVersion, v, PlaceholderMode, ModeLine(p)).Replace(none)
	}
	return strings.NewReplacer(
		PlaceholderVersion, v,
		PlaceholderMode, ModeLine(p),
		PlaceholderRules, RuleLines(enabled),
	).Replace(tmpl)
}
