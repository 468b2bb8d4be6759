package promptparts

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/superagent-dev/superagent/policy"
)

// skillName is the syntax of a team skill's name, as skill_load takes it.
var skillName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// sha256Hex is the syntax of an override's base.
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// reservedSkills are refused as team skill names whatever the release ships.
var reservedSkills = []string{"github", "feishu"}

// apply returns head changed by p, and every problem with the patch itself.
// knownBase reports whether a SHA-256 is a default text some release shipped.
// The result still has to pass validate.
func apply(reg *Registry, head Settings, p Patch, knownBase func(string) (bool, error)) (Settings, problems, error) {
	var ps problems
	s := head.clone()

	if s.Overrides == nil {
		s.Overrides = map[string]Override{}
	}
	for _, key := range sortedKeys(p.Overrides) {
		op := p.Overrides[key]
		pkey := "overrides." + key
		if !reg.Has(key) {
			// A part a release removed goes away with this save whatever the
			// patch says about it; any other unknown part is a mistake.
			if _, saved := head.Overrides[key]; !saved {
				ps.add(pkey, "unknown part: the built-in parts are %s", strings.Join(reg.Keys(), ", "))
			}
			continue
		}
		if op == nil {
			delete(s.Overrides, key)
			continue
		}
		base := op.Base
		switch {
		case base == "":
			if old, ok := head.Overrides[key]; ok {
				base = old.BaseSHA256
			} else {
				base = reg.SHA256(key)
			}
		case !sha256Hex.MatchString(base):
			ps.add(pkey+".base", "must be the SHA-256 (64 lowercase hex digits) of a default text")
			continue
		case base != reg.SHA256(key):
			ok, err := knownBase(base)
			if err != nil {
				return Settings{}, nil, err
			}
			if !ok {
				ps.add(pkey+".base", "is not the SHA-256 of any default text this deployment has shipped")
				continue
			}
		}
		s.Overrides[key] = Override{Text: op.Text, BaseSHA256: base}
	}

	c := &s.Sections.Communication
	if cp := p.Sections.Communication; cp != nil {
		setIf(&c.Text, cp.Text)
		setIf(&c.AgentLine, cp.AgentLine)
		setIf(&c.ReviewBots, cp.ReviewBots)
	}
	if tp := p.Sections.TicketScope; tp != nil {
		setIf(&s.Sections.TicketScope.Text, tp.Text)
	}
	dr := &s.Sections.DeliveryRequirements
	if dp := p.Sections.DeliveryRequirements; dp != nil {
		setIf(&dr.Text, dp.Text)
		if am := dp.AutoMerge; am != nil {
			setIf(&dr.AutoMerge.Enabled, am.Enabled)
			setIf(&dr.AutoMerge.MaxChangedLines, am.MaxChangedLines)
			setIf(&dr.AutoMerge.Checks, am.Checks)
			setIf(&dr.AutoMerge.Approvals, am.Approvals)
		}
		if ca := dp.CommitAuthor; ca != nil {
			setIf(&dr.CommitAuthor.Name, ca.Name)
			setIf(&dr.CommitAuthor.Email, ca.Email)
		}
	}

	if s.Skills == nil {
		s.Skills = map[string]string{}
	}
	for _, name := range sortedKeys(p.Skills) {
		if text := p.Skills[name]; text == nil {
			delete(s.Skills, name)
		} else {
			s.Skills[name] = *text
		}
	}

	setIf(&s.Policy.Mode, p.Policy.Mode)
	setIf(&s.Policy.ExplicitRequestExemption, p.Policy.ExplicitRequestExemption)
	setIf(&s.Policy.Rules, p.Policy.Rules)

	tidy(reg, &s)
	return s, ps, nil
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// tidy drops overrides of parts this release no longer ships and overrides
// whose text is the current default, so the part follows future defaults.
func tidy(reg *Registry, s *Settings) {
	for key, o := range s.Overrides {
		if !reg.Has(key) || o.Text == reg.Text(key) {
			delete(s.Overrides, key)
		}
	}
	s.normalize()
}

// validate lists every problem of a whole configuration: templates, skill
// names, section settings, the policy and the size limit.
func validate(reg *Registry, s Settings, sizeLimit int) problems {
	var ps problems
	for _, key := range sortedKeys(s.Overrides) {
		for _, msg := range checkTemplate(key, s.Overrides[key].Text) {
			ps.add("overrides."+key, "%s", msg)
		}
		if markers := FindConflictMarkers(s.Overrides[key].Text); len(markers) > 0 {
			ps.add("overrides."+key, "%s", ConflictMessage(markers))
		}
	}

	reserved := append(slices.Clone(reservedSkills), reg.SkillNames()...)
	for _, name := range sortedKeys(s.Skills) {
		key := "skills." + name
		switch {
		case slices.Contains(reserved, name):
			ps.add(key, "%q is the name of a built-in skill: choose another name", name)
		case !skillName.MatchString(name):
			ps.add(key, "skill name %q is malformed: use 1 to 63 lowercase letters, digits and '-', starting with a letter", name)
		}
		if strings.TrimSpace(s.Skills[name]) == "" {
			ps.add(key, "skill text is empty (send null to remove the skill)")
		}
	}

	c := s.Sections.Communication
	const ckey = "sections.communication"
	if strings.TrimSpace(c.AgentLine) == "" {
		ps.add(ckey+".agent_line", "must not be empty: every GitHub message begins with it")
	} else if strings.ContainsAny(c.AgentLine, "\r\n") {
		ps.add(ckey+".agent_line", "must be a single line")
	}
	for i, bot := range c.ReviewBots {
		if bot == "" || strings.ContainsAny(bot, " \t\r\n") {
			ps.add(fmt.Sprintf("%s.review_bots[%d]", ckey, i), "%q is not an account login", bot)
		}
	}

	dr := s.Sections.DeliveryRequirements
	const dkey = "sections.delivery_requirements"
	am := dr.AutoMerge
	if am.MaxChangedLines < 0 {
		ps.add(dkey+".auto_merge.max_changed_lines", "must not be negative")
	} else if am.Enabled && am.MaxChangedLines == 0 {
		ps.add(dkey+".auto_merge.max_changed_lines", "must be above 0 when auto-merge is enabled")
	}
	if am.Approvals < 0 {
		ps.add(dkey+".auto_merge.approvals", "must not be negative")
	}
	for i, check := range am.Checks {
		if strings.TrimSpace(check) == "" {
			ps.add(fmt.Sprintf("%s.auto_merge.checks[%d]", dkey, i), "check name is empty")
		}
	}
	ca := dr.CommitAuthor
	if (ca.Name == "") != (ca.Email == "") {
		ps.add(dkey+".commit_author", "set both name and email, or neither for the App's bot account")
	}
	if ca.Email != "" && (!strings.Contains(ca.Email, "@") || strings.ContainsAny(ca.Email, " <>\r\n")) {
		ps.add(dkey+".commit_author.email", "%q is not an email address", ca.Email)
	}
	if strings.ContainsAny(ca.Name, "<>\r\n") {
		ps.add(dkey+".commit_author.name", "must be one line without '<' or '>'")
	}

	for _, p := range policy.Validate(s.Policy) {
		ps.add("policy."+p.Field, "%s", p.Message)
	}

	if b, err := s.marshal(); err == nil && len(b) > sizeLimit {
		ps.add("size", "the configuration is %d bytes, over the limit of %d bytes: shorten it (nothing is truncated)", len(b), sizeLimit)
	}
	return ps
}
