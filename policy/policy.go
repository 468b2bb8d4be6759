// Package policy holds the team's admission policy: the accept mode, the
// explicit-request exemption and the named rules under which the main Session
// may infer work nobody asked for. It validates a policy, listing every
// problem at once, and renders the Policy section of the main Session's
// prompt from it. The policy is versioned with the prompt configuration by
// package promptparts; the host, not the model, enforces what it says.
package policy

import (
	"fmt"
	"regexp"
	"strings"
)

// Mode says what happens to work the main Session infers from the rules.
type Mode string

// The accept modes.
const (
	// Explicit admits only explicit requests from authorized people; nothing
	// is inferred. It is the default.
	Explicit Mode = "explicit"
	// Propose turns an inferred Ticket into a proposal that waits until a
	// person accepts it.
	Propose Mode = "propose"
	// Auto starts inferred Tickets at once.
	Auto Mode = "auto"
)

// Valid reports whether m is one of the accept modes.
func (m Mode) Valid() bool {
	switch m {
	case Explicit, Propose, Auto:
		return true
	}
	return false
}

// MaxRuleIDLength bounds a rule id; ids are quoted in tool calls and Mandates.
const MaxRuleIDLength = 64

// ruleID is the syntax of a rule id: short, lowercase, no spaces, so that a
// model can quote it exactly in orchestrator_route.
var ruleID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// Rule is one named reason to infer work.
type Rule struct {
	// ID identifies the rule in routing decisions and Mandates.
	ID string `json:"id"`
	// Name is the short human name shown in the prompt and the panel.
	Name string `json:"name"`
	// Instruction says which candidates the rule covers and what to do.
	Instruction string `json:"instruction"`
	// Enabled rules are listed in the prompt and may admit work.
	Enabled bool `json:"enabled"`
}

// Policy is the whole admission policy of one configuration version.
type Policy struct {
	// Mode is the accept mode. Default Explicit.
	Mode Mode `json:"mode"`
	// ExplicitRequestExemption admits a person's explicit request whatever
	// the rules say. Default true (see Default).
	ExplicitRequestExemption bool `json:"explicit_request_exemption"`
	// Rules in the order the team wrote them.
	Rules []Rule `json:"rules"`
}

// Default is the policy of a deployment nobody has configured: explicit
// mode, exemption on, no rules.
func Default() Policy {
	return Policy{Mode: Explicit, ExplicitRequestExemption: true}
}

// Enabled returns the enabled rules in order.
func (p Policy) Enabled() []Rule {
	var out []Rule
	for _, r := range p.Rules {
		if r.Enabled {
			out = append(out, r)
		}
	}
	return out
}

// Rule returns the rule with the given id.
func (p Policy) Rule(id string) (Rule, bool) {
	for _, r := range p.Rules {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

// Problem is one thing wrong with a policy. Field names the offending value
// as a path under the policy ("mode", "rules[2].id").
type Problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Validate returns every problem with p; none means it is valid.
func Validate(p Policy) []Problem {
	var problems []Problem
	add := func(field, format string, args ...any) {
		problems = append(problems, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if !p.Mode.Valid() {
		add("mode", "unknown accept mode %q: use explicit, propose or auto", p.Mode)
	}
	seen := make(map[string]int, len(p.Rules))
	for i, r := range p.Rules {
		field := fmt.Sprintf("rules[%d]", i)
		switch {
		case r.ID == "":
			add(field+".id", "rule id is empty")
		case len(r.ID) > MaxRuleIDLength:
			add(field+".id", "rule id %q is longer than %d characters", r.ID, MaxRuleIDLength)
		case !ruleID.MatchString(r.ID):
			add(field+".id", "rule id %q is malformed: use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit", r.ID)
		}
		if first, dup := seen[r.ID]; dup && r.ID != "" {
			add(field+".id", "rule id %q is already used by rules[%d]", r.ID, first)
		} else {
			seen[r.ID] = i
		}
		if strings.TrimSpace(r.Name) == "" {
			add(field+".name", "rule name is empty")
		} else if strings.ContainsAny(r.Name, "\r\n") {
			add(field+".name", "rule name spans several lines")
		}
		if strings.TrimSpace(r.Instruction) == "" {
			add(field+".instruction", "rule instruction is empty")
		}
	}
	return problems
}

// CheckInferred is the host's check of an inferred Ticket (docs/prompts.md#policy): the
// mode must allow inferring and the Ticket must name at least one rule, each
// of them enabled. It returns nil, or an error whose message can be given
// back to the model as the refusal reason.
func (p Policy) CheckInferred(ruleIDs []string) error {
	if p.Mode == Explicit || !p.Mode.Valid() {
		return fmt.Errorf("the accept mode is %s: only explicit requests become Tickets", p.Mode)
	}
	if len(ruleIDs) == 0 {
		return fmt.Errorf("an inferred Ticket must name at least one enabled policy rule")
	}
	for _, id := range ruleIDs {
		r, ok := p.Rule(id)
		switch {
		case !ok:
			return fmt.Errorf("no policy rule has the id %q", id)
		case !r.Enabled:
			return fmt.Errorf("policy rule %q is not enabled", id)
		}
	}
	return nil
}
