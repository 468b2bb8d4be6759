package promptparts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/superagent-dev/superagent/policy"
)

// Patch is one save: the fields present change the configuration, absent
// ones keep it. It is the body of POST /api/config and of the main Session's
// orchestrator_prompts_save.
type Patch struct {
	// BaseRevision is the revision the change was made against.
	BaseRevision int64
	// Note says why, for the version history.
	Note string
	// Request is the card id of the person's explicit request, for saves
	// made by the main Session.
	Request string
	// Overrides by part key; a nil value removes the override.
	Overrides map[string]*OverridePatch
	// Sections changes fields of the team sections.
	Sections SectionsPatch
	// Skills by name; a nil value removes the skill.
	Skills map[string]*string
	// Policy changes fields of the policy.
	Policy PolicyPatch
}

// OverridePatch sets an override. An empty Base keeps the saved base, or for
// a new override takes the current default's; saving the same text with the
// current default's SHA-256 as Base is "keep".
type OverridePatch struct {
	Text string `json:"text"`
	Base string `json:"base"`
}

// SectionsPatch changes the team sections; nil fields are kept.
type SectionsPatch struct {
	Communication        *CommunicationPatch
	TicketScope          *TicketScopePatch
	DeliveryRequirements *DeliveryRequirementsPatch
}

// CommunicationPatch changes the Communication section.
type CommunicationPatch struct {
	Text       *string
	AgentLine  *string
	ReviewBots *[]string
}

// TicketScopePatch changes the Ticket scope section.
type TicketScopePatch struct {
	Text *string
}

// DeliveryRequirementsPatch changes the Delivery requirements section.
type DeliveryRequirementsPatch struct {
	Text         *string
	AutoMerge    *AutoMergePatch
	CommitAuthor *CommitAuthorPatch
}

// AutoMergePatch changes the auto-merge condition.
type AutoMergePatch struct {
	Enabled         *bool
	MaxChangedLines *int
	Checks          *[]string
	Approvals       *int
}

// CommitAuthorPatch changes the commit author.
type CommitAuthorPatch struct {
	Name  *string
	Email *string
}

// PolicyPatch changes the policy; Rules replaces the whole list.
type PolicyPatch struct {
	Mode                     *policy.Mode
	ExplicitRequestExemption *bool
	Rules                    *[]policy.Rule
}

// SyntaxError is a body that is not JSON at all (400, not 422).
type SyntaxError struct{ Err error }

func (e *SyntaxError) Error() string { return "malformed JSON: " + e.Err.Error() }
func (e *SyntaxError) Unwrap() error { return e.Err }

// ParsePatch reads a save body. Malformed JSON is a *SyntaxError; unknown
// fields and values of the wrong type are all listed in one
// *ValidationError. A "version" field in the policy (as GET returns it) is
// accepted and ignored.
func ParsePatch(body []byte) (Patch, error) {
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		if err == nil {
			err = fmt.Errorf("invalid JSON")
		}
		return Patch{}, &SyntaxError{Err: err}
	}
	var d patchDecoder
	p := d.patch(body)
	return p, d.problems.err()
}

type patchDecoder struct {
	problems problems
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// object splits raw into its fields, refusing unknown ones; ok is false when
// raw is not an object.
func (d *patchDecoder) object(key string, raw json.RawMessage, known ...string) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		if key == "" {
			d.problems.add("body", "must be a JSON object")
		} else {
			d.problems.add(key, "must be an object")
		}
		return nil, false
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !slices.Contains(known, name) {
			d.problems.add(join(key, name), "unknown field (known: %s)", strings.Join(known, ", "))
		}
	}
	return m, true
}

func join(key, name string) string {
	if key == "" {
		return name
	}
	return key + "." + name
}

// value decodes raw into dst, recording a problem when the type is wrong.
func (d *patchDecoder) value(key string, raw json.RawMessage, dst any, want string) bool {
	if isNull(raw) {
		d.problems.add(key, "must be %s, not null", want)
		return false
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		d.problems.add(key, "must be %s", want)
		return false
	}
	return true
}

func optional[T any](d *patchDecoder, m map[string]json.RawMessage, key, name, want string) *T {
	raw, ok := m[name]
	if !ok {
		return nil
	}
	v := new(T)
	if !d.value(join(key, name), raw, v, want) {
		return nil
	}
	return v
}

func (d *patchDecoder) patch(body []byte) Patch {
	var p Patch
	m, ok := d.object("", body, "base_revision", "note", "request", "overrides", "sections", "skills", "policy")
	if !ok {
		return p
	}
	if raw, ok := m["base_revision"]; !ok {
		d.problems.add("base_revision", "is required: name the revision the change was made against")
	} else if d.value("base_revision", raw, &p.BaseRevision, "a revision number") && p.BaseRevision < 0 {
		d.problems.add("base_revision", "must not be negative")
	}
	if v := optional[string](d, m, "", "note", "a string"); v != nil {
		p.Note = *v
	}
	if v := optional[string](d, m, "", "request", "a string"); v != nil {
		p.Request = *v
	}
	if raw, ok := m["overrides"]; ok {
		p.Overrides = d.overrides(raw)
	}
	if raw, ok := m["sections"]; ok {
		p.Sections = d.sections(raw)
	}
	if raw, ok := m["skills"]; ok {
		p.Skills = d.skills(raw)
	}
	if raw, ok := m["policy"]; ok {
		p.Policy = d.policy(raw)
	}
	return p
}

func (d *patchDecoder) overrides(raw json.RawMessage) map[string]*OverridePatch {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		d.problems.add("overrides", "must be an object of part: {text, base} or null")
		return nil
	}
	out := make(map[string]*OverridePatch, len(m))
	for _, key := range sortedKeys(m) {
		raw := m[key]
		pkey := "overrides." + key
		if isNull(raw) {
			out[key] = nil
			continue
		}
		f, ok := d.object(pkey, raw, "text", "base")
		if !ok {
			continue
		}
		op := &OverridePatch{}
		if rawText, ok := f["text"]; !ok {
			d.problems.add(pkey+".text", "is required (send null to remove the override)")
			continue
		} else if !d.value(pkey+".text", rawText, &op.Text, "a string") {
			continue
		}
		if rawBase, ok := f["base"]; ok && !isNull(rawBase) {
			if !d.value(pkey+".base", rawBase, &op.Base, "a SHA-256 in hex") {
				continue
			}
		}
		out[key] = op
	}
	return out
}

func (d *patchDecoder) skills(raw json.RawMessage) map[string]*string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		d.problems.add("skills", "must be an object of name: text")
		return nil
	}
	out := make(map[string]*string, len(m))
	for _, name := range sortedKeys(m) {
		if isNull(m[name]) {
			out[name] = nil
			continue
		}
		var text string
		if d.value("skills."+name, m[name], &text, "a string or null") {
			out[name] = &text
		}
	}
	return out
}

func (d *patchDecoder) sections(raw json.RawMessage) SectionsPatch {
	var p SectionsPatch
	m, ok := d.object("sections", raw, "communication", "ticket_scope", "delivery_requirements")
	if !ok {
		return p
	}
	if raw, ok := m["communication"]; ok {
		const key = "sections.communication"
		if f, ok := d.object(key, raw, "text", "agent_line", "review_bots"); ok {
			p.Communication = &CommunicationPatch{
				Text:       optional[string](d, f, key, "text", "a string"),
				AgentLine:  optional[string](d, f, key, "agent_line", "a string"),
				ReviewBots: optional[[]string](d, f, key, "review_bots", "a list of account logins"),
			}
		}
	}
	if raw, ok := m["ticket_scope"]; ok {
		const key = "sections.ticket_scope"
		if f, ok := d.object(key, raw, "text"); ok {
			p.TicketScope = &TicketScopePatch{Text: optional[string](d, f, key, "text", "a string")}
		}
	}
	if raw, ok := m["delivery_requirements"]; ok {
		const key = "sections.delivery_requirements"
		if f, ok := d.object(key, raw, "text", "auto_merge", "commit_author"); ok {
			dr := &DeliveryRequirementsPatch{Text: optional[string](d, f, key, "text", "a string")}
			if raw, ok := f["auto_merge"]; ok {
				const key = key + ".auto_merge"
				if am, ok := d.object(key, raw, "enabled", "max_changed_lines", "checks", "approvals"); ok {
					dr.AutoMerge = &AutoMergePatch{
						Enabled:         optional[bool](d, am, key, "enabled", "true or false"),
						MaxChangedLines: optional[int](d, am, key, "max_changed_lines", "a whole number"),
						Checks:          optional[[]string](d, am, key, "checks", "a list of check names"),
						Approvals:       optional[int](d, am, key, "approvals", "a whole number"),
					}
				}
			}
			if raw, ok := f["commit_author"]; ok {
				const key = key + ".commit_author"
				if ca, ok := d.object(key, raw, "name", "email"); ok {
					dr.CommitAuthor = &CommitAuthorPatch{
						Name:  optional[string](d, ca, key, "name", "a string"),
						Email: optional[string](d, ca, key, "email", "a string"),
					}
				}
			}
			p.DeliveryRequirements = dr
		}
	}
	return p
}

func (d *patchDecoder) policy(raw json.RawMessage) PolicyPatch {
	var p PolicyPatch
	m, ok := d.object("policy", raw, "mode", "explicit_request_exemption", "rules", "version")
	if !ok {
		return p
	}
	p.Mode = optional[policy.Mode](d, m, "policy", "mode", "explicit, propose or auto")
	p.ExplicitRequestExemption = optional[bool](d, m, "policy", "explicit_request_exemption", "true or false")
	raw, ok = m["rules"]
	if !ok {
		return p
	}
	var list []json.RawMessage
	if !d.value("policy.rules", raw, &list, "a list of rules") {
		return p
	}
	rules := make([]policy.Rule, 0, len(list))
	for i, raw := range list {
		key := fmt.Sprintf("policy.rules[%d]", i)
		f, ok := d.object(key, raw, "id", "name", "instruction", "enabled")
		if !ok {
			continue
		}
		r := policy.Rule{Enabled: true}
		if v := optional[string](d, f, key, "id", "a string"); v != nil {
			r.ID = *v
		}
		if v := optional[string](d, f, key, "name", "a string"); v != nil {
			r.Name = *v
		}
		if v := optional[string](d, f, key, "instruction", "a string"); v != nil {
			r.Instruction = *v
		}
		if v := optional[bool](d, f, key, "enabled", "true or false"); v != nil {
			r.Enabled = *v
		}
		rules = append(rules, r)
	}
	p.Rules = &rules
	return p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
