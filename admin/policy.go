package admin

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/policy"
	"github.com/superagent-dev/superagent/promptparts"
)

const policyURL = "/admin/policy"
const policyDraft = "policy"

// policyPage shows the accept mode and the rules, each with its own form.
type policyPage struct {
	Head         int64
	BaseRevision int64
	Policy       policy.Policy
	Modes        []modeChoice
	// Posted holds the values of a refused form, and PostedIndex the rule
	// it was about (len(Rules) for a new one), so that it is shown again
	// with its problems.
	Posted      url.Values
	PostedIndex int
	Draft       *draft
	DraftOp     string
	Conflict    *conflictView
}

type modeChoice struct {
	Mode        policy.Mode
	Label, Hint string
}

var modeChoices = []modeChoice{
	{policy.Explicit, "Explicit", "Only explicit requests from authorized people become Tickets; nothing is inferred."},
	{policy.Propose, "Propose", "Work inferred from the enabled rules waits as a proposal until a person accepts it."},
	{policy.Auto, "Auto", "Work inferred from the enabled rules starts at once."},
}

func (a *Admin) getPolicy(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	v, err := a.prompts.Latest(ctx)
	if err != nil {
		return err
	}
	p := policyPage{Head: v.Revision, BaseRevision: v.Revision, Policy: v.Settings.Policy, Modes: modeChoices, PostedIndex: -1}
	if p.Draft, err = a.loadDraft(ctx, policyDraft); err != nil {
		return err
	}
	if d := p.Draft; d != nil {
		p.DraftOp = d.Form.Get("op")
		if d.BaseRevision != v.Revision {
			if p.Conflict, err = a.conflictSince(ctx, d.BaseRevision, v.Revision, func(k string) bool { return k == "policy" }); err != nil {
				return err
			}
		}
	}
	return a.render(w, r, http.StatusOK, "policy.html", pageData{Title: "Policy", Nav: "policy", Data: p})
}

func (a *Admin) postPolicy(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	switch r.PostFormValue("action") {
	case "rebase", "discard":
		return a.draftAction(w, r, policyDraft, policyURL)
	}
	base, err := formRevision(r, "base_revision")
	if err != nil {
		return err
	}
	v, err := a.prompts.Version(ctx, base)
	if err != nil {
		return err
	}
	pol := v.Settings.Policy
	rules := slices.Clone(pol.Rules)
	op := r.PostFormValue("op")
	index := slices.IndexFunc(rules, func(rule policy.Rule) bool { return rule.ID == r.PostFormValue("orig_id") })
	posted := policy.Rule{
		ID:          strings.TrimSpace(r.PostFormValue("id")),
		Name:        strings.TrimSpace(r.PostFormValue("name")),
		Instruction: strings.TrimSpace(formText(r, "instruction")),
		Enabled:     r.PostFormValue("enabled") == "on",
	}
	patch := promptparts.Patch{BaseRevision: base, Note: r.PostFormValue("note")}
	switch op {
	case "settings":
		mode := policy.Mode(r.PostFormValue("mode"))
		exempt := r.PostFormValue("explicit_request_exemption") == "on"
		patch.Policy.Mode, patch.Policy.ExplicitRequestExemption = &mode, &exempt
		patch.Note = orDefault(patch.Note, "policy: mode "+string(mode))
	case "add":
		index = len(rules)
		rules = append(rules, posted)
		patch.Note = orDefault(patch.Note, "policy: add rule "+posted.ID)
	case "edit", "enable", "disable", "remove":
		if index < 0 {
			return a.staleOrErr(w, r, policyURL, &promptparts.ConflictError{BaseRevision: base, HeadRevision: v.Revision})
		}
		id := rules[index].ID
		switch op {
		case "edit":
			rules[index] = posted
		case "enable", "disable":
			rules[index].Enabled = op == "enable"
		case "remove":
			rules = slices.Delete(rules, index, index+1)
		}
		patch.Note = orDefault(patch.Note, "policy: "+op+" rule "+id)
	default:
		return httpserver.Errorf(http.StatusBadRequest, "Unknown action.")
	}
	if op != "settings" {
		patch.Policy.Rules = &rules
	}
	res, err := a.prompts.Save(ctx, patch, panelSave(ctx))
	return a.saveOutcome(w, r, policyDraft, policyURL, base, res, err, func(ps problemSet) error {
		head, err := a.prompts.Head(ctx)
		if err != nil {
			return err
		}
		p := policyPage{Head: head, BaseRevision: base, Policy: pol, Modes: modeChoices, Posted: draftForm(r.PostForm), PostedIndex: index}
		if op == "settings" {
			p.PostedIndex = -1
		}
		return a.render(w, r, http.StatusUnprocessableEntity, "policy.html", pageData{Title: "Policy", Nav: "policy", Problems: ps, Data: p})
	})
}

// ruleForm is one rule's form on the policy page: the stored rule, or what
// was posted for it when the save was refused.
type ruleForm struct {
	Index       int
	OrigID      string
	Rule        policy.Rule
	New         bool
	Problems    problemSet
	CSRF        string
	Base        int64
	FieldPrefix string
}

// RuleForms lays out the page's rule forms plus the add form.
func (p policyPage) RuleForms(csrf string, ps problemSet) []ruleForm {
	var out []ruleForm
	for i := 0; i <= len(p.Policy.Rules); i++ {
		f := ruleForm{Index: i, New: i == len(p.Policy.Rules), CSRF: csrf, Base: p.BaseRevision, Problems: ps,
			FieldPrefix: "policy.rules[" + strconv.Itoa(i) + "]"}
		if !f.New {
			f.Rule, f.OrigID = p.Policy.Rules[i], p.Policy.Rules[i].ID
		} else {
			f.Rule.Enabled = true
		}
		if p.Posted != nil && p.PostedIndex == i {
			f.Rule = policy.Rule{ID: p.Posted.Get("id"), Name: p.Posted.Get("name"), Instruction: p.Posted.Get("instruction"),
				Enabled: p.Posted.Get("enabled") == "on"}
		} else {
			f.Problems = nil
		}
		out = append(out, f)
	}
	return out
}

// DraftFields are the kept draft's values, to post again once rebased.
func (p policyPage) DraftFields() []hiddenField {
	if p.Draft == nil {
		return nil
	}
	var out []hiddenField
	for _, f := range carried(p.Draft.Form) {
		if f.Name != "base_revision" {
			out = append(out, f)
		}
	}
	return out
}
