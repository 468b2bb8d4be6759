package promptparts

import (
	"context"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/policy"
)

// Part is one built-in part as the panel shows it.
type Part struct {
	Key           string `json:"key"`
	Status        Status `json:"status"`
	Default       string `json:"default"`
	DefaultSHA256 string `json:"default_sha256"`
	// Override is the team's text; nil when the part follows the default.
	Override *string `json:"override"`
	// BaseSHA256 is the default the override was based on.
	BaseSHA256 *string `json:"base_sha256"`
	// Placeholders the part must keep (templates only).
	Placeholders []string `json:"placeholders"`
	// BaseText is the default the override was based on, for a part whose
	// default was updated, so the panel can show the change from it to
	// Default; BaseKnown is false when no stored text has that SHA-256.
	BaseText  *string `json:"base_text,omitempty"`
	BaseKnown *bool   `json:"base_known,omitempty"`
	// DefaultDiff is the change from BaseText to Default, as a line diff.
	DefaultDiff *string `json:"default_diff,omitempty"`
}

// PolicyView is the policy as GET /api/config shows it.
type PolicyView struct {
	// Version is the revision the policy belongs to.
	Version                  int64         `json:"version"`
	Mode                     policy.Mode   `json:"mode"`
	ExplicitRequestExemption bool          `json:"explicit_request_exemption"`
	Rules                    []policy.Rule `json:"rules"`
}

// Overview is the whole configuration of a revision as GET /api/config
// returns it.
type Overview struct {
	Revision  int64             `json:"revision"`
	Parts     []Part            `json:"parts"`
	Sections  Sections          `json:"sections"`
	Skills    map[string]string `json:"skills"`
	Policy    PolicyView        `json:"policy"`
	Size      int               `json:"size"`
	SizeLimit int               `json:"size_limit"`
}

// Overview describes the latest revision part by part.
func (s *Service) Overview(ctx context.Context) (Overview, error) {
	if err := s.storeDefaults(ctx); err != nil {
		return Overview{}, err
	}
	v, err := s.Latest(ctx)
	if err != nil {
		return Overview{}, err
	}
	size, err := v.Settings.marshal()
	if err != nil {
		return Overview{}, err
	}
	o := Overview{
		Revision:  v.Revision,
		Sections:  v.Settings.Sections,
		Skills:    v.Settings.Skills,
		Size:      len(size),
		SizeLimit: s.cfg.SizeLimit,
		Policy: PolicyView{
			Version:                  v.Revision,
			Mode:                     v.Settings.Policy.Mode,
			ExplicitRequestExemption: v.Settings.Policy.ExplicitRequestExemption,
			Rules:                    v.Settings.Policy.Rules,
		},
	}
	if o.Skills == nil {
		o.Skills = map[string]string{}
	}
	if o.Policy.Rules == nil {
		o.Policy.Rules = []policy.Rule{}
	}
	if o.Sections.Communication.ReviewBots == nil {
		o.Sections.Communication.ReviewBots = []string{}
	}
	if o.Sections.DeliveryRequirements.AutoMerge.Checks == nil {
		o.Sections.DeliveryRequirements.AutoMerge.Checks = []string{}
	}
	for _, key := range s.reg.Keys() {
		p, err := s.part(ctx, key, v.Settings)
		if err != nil {
			return Overview{}, err
		}
		o.Parts = append(o.Parts, p)
	}
	return o, nil
}

func (s *Service) part(ctx context.Context, key string, settings Settings) (Part, error) {
	p := Part{
		Key:           key,
		Default:       s.reg.Text(key),
		DefaultSHA256: s.reg.SHA256(key),
		Placeholders:  Placeholders(key),
	}
	if p.Placeholders == nil {
		p.Placeholders = []string{}
	}
	o, ok := settings.Overrides[key]
	if ok {
		text, base := o.Text, o.BaseSHA256
		p.Override, p.BaseSHA256 = &text, &base
	}
	p.Status = DecideStatus(ok, SHA256(o.Text), o.BaseSHA256, p.DefaultSHA256)
	if p.Status == StatusDefaultUpdated {
		text, known, err := s.store.defaultText(ctx, s.db, o.BaseSHA256)
		if err != nil {
			return Part{}, fmt.Errorf("describing part %s: %w", key, err)
		}
		p.BaseKnown = &known
		if known {
			diff := LineDiff(text, p.Default)
			p.BaseText, p.DefaultDiff = &text, &diff
		}
	}
	return p, nil
}

// PromptsSummary is what the main Session reads with
// orchestrator_read {what: "prompts"}.
type PromptsSummary struct {
	Revision int64 `json:"revision"`
	// Overridden lists the parts the team overrides.
	Overridden []string `json:"overridden"`
	// DefaultChanged lists overridden parts whose built-in default a newer
	// release changed (status default_updated).
	DefaultChanged []string `json:"default_changed"`
	// Skills lists the team skills by name.
	Skills []string `json:"skills"`
	// Parts lists every part with its status.
	Parts []PartStatus `json:"parts"`
}

// PartStatus is a part key and its status.
type PartStatus struct {
	Key    string `json:"key"`
	Status Status `json:"status"`
}

// ReadPrompts summarizes the latest revision for the main Session.
func (s *Service) ReadPrompts(ctx context.Context) (PromptsSummary, error) {
	v, err := s.Latest(ctx)
	if err != nil {
		return PromptsSummary{}, err
	}
	sum := PromptsSummary{Revision: v.Revision, Overridden: []string{}, DefaultChanged: []string{}, Skills: sortedKeys(v.Settings.Skills)}
	for _, key := range s.reg.Keys() {
		o, ok := v.Settings.Overrides[key]
		st := DecideStatus(ok, SHA256(o.Text), o.BaseSHA256, s.reg.SHA256(key))
		sum.Parts = append(sum.Parts, PartStatus{Key: key, Status: st})
		switch st {
		case StatusOverridden:
			sum.Overridden = append(sum.Overridden, key)
		case StatusDefaultUpdated:
			sum.Overridden = append(sum.Overridden, key)
			sum.DefaultChanged = append(sum.DefaultChanged, key)
		}
	}
	return sum, nil
}

// Skill returns the text of a skill for skill_load from the latest
// revision: a built-in one ("github", "feishu" or "skill/github"…, as the
// team may have overridden it) or a team skill. ok is false for an unknown
// name.
func (s *Service) Skill(ctx context.Context, name string) (text string, rev int64, ok bool, err error) {
	head, err := s.latestRevision(ctx)
	if err != nil {
		return "", 0, false, err
	}
	c, err := s.compiled(ctx, head)
	if err != nil {
		return "", 0, false, fmt.Errorf("loading skill %q: %w", name, err)
	}
	key := "skill/" + strings.TrimPrefix(name, "skill/")
	if s.reg.Has(key) {
		return c.text(key), head, true, nil
	}
	if t, ok := c.settings.Skills[name]; ok {
		return t, head, true, nil
	}
	return "", head, false, nil
}
