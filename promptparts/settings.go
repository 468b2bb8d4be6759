package promptparts

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/superagent-dev/superagent/policy"
)

// DefaultAgentLine begins every GitHub message the agents send unless the
// team's Communication section sets another line.
const DefaultAgentLine = "This is by an automated agent, not a human"

// Settings is the team's whole prompt configuration: what one version holds.
// Revision 0, before any save, is DefaultSettings.
type Settings struct {
	// Overrides replace built-in parts, by key.
	Overrides map[string]Override `json:"overrides,omitempty"`
	// Sections are the three team sections.
	Sections Sections `json:"sections"`
	// Skills are the team's skills by name, loaded on demand.
	Skills map[string]string `json:"skills,omitempty"`
	// Policy is the admission policy.
	Policy policy.Policy `json:"policy"`
}

// Override is the team's text for a built-in part and the SHA-256 of the
// built-in text it was based on.
type Override struct {
	Text       string `json:"text"`
	BaseSHA256 string `json:"base_sha256"`
}

// Sections are the team sections, each a text plus the settings the host
// enforces.
type Sections struct {
	Communication        Communication        `json:"communication"`
	TicketScope          TicketScope          `json:"ticket_scope"`
	DeliveryRequirements DeliveryRequirements `json:"delivery_requirements"`
}

// Communication says when and how the agents message people.
type Communication struct {
	Text string `json:"text"`
	// AgentLine begins every GitHub message. Default DefaultAgentLine.
	AgentLine string `json:"agent_line"`
	// ReviewBots are ordinary accounts (logins) to treat as automated
	// reviewers.
	ReviewBots []string `json:"review_bots"`
}

// TicketScope says when a Ticket goes on and when it stops with a draft.
type TicketScope struct {
	Text string `json:"text"`
}

// DeliveryRequirements says what a delivery must show, when the host may
// merge on its own and who commits.
type DeliveryRequirements struct {
	Text         string       `json:"text"`
	AutoMerge    AutoMerge    `json:"auto_merge"`
	CommitAuthor CommitAuthor `json:"commit_author"`
}

// AutoMerge is the condition under which the host merges a pull request
// without a person. The host checks it, never the model.
type AutoMerge struct {
	Enabled bool `json:"enabled"`
	// MaxChangedLines is the largest diff (added plus removed lines) that may
	// merge automatically; 0 means no auto-merge at any size.
	MaxChangedLines int `json:"max_changed_lines"`
	// Checks are the check names that must pass; empty means every check on
	// the head commit must be green.
	Checks []string `json:"checks"`
	// Approvals is the number of approving reviews required.
	Approvals int `json:"approvals"`
}

// CommitAuthor is who the Executors commit as. Empty fields mean the GitHub
// App's bot account and its no-reply address, which the host resolves.
type CommitAuthor struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// DefaultSettings is the configuration before any save.
func DefaultSettings() Settings {
	return Settings{
		Sections: Sections{Communication: Communication{AgentLine: DefaultAgentLine}},
		Policy:   policy.Default(),
	}
}

// clone returns a deep copy, so that a cached version can be patched.
func (s Settings) clone() Settings {
	c := s
	c.Overrides = maps.Clone(s.Overrides)
	c.Skills = maps.Clone(s.Skills)
	c.Sections.Communication.ReviewBots = slices.Clone(s.Sections.Communication.ReviewBots)
	c.Sections.DeliveryRequirements.AutoMerge.Checks = slices.Clone(s.Sections.DeliveryRequirements.AutoMerge.Checks)
	c.Policy.Rules = slices.Clone(s.Policy.Rules)
	return c
}

// normalize makes equal configurations serialize equally: empty maps and
// lists become nil.
func (s *Settings) normalize() {
	if len(s.Overrides) == 0 {
		s.Overrides = nil
	}
	if len(s.Skills) == 0 {
		s.Skills = nil
	}
	if len(s.Sections.Communication.ReviewBots) == 0 {
		s.Sections.Communication.ReviewBots = nil
	}
	if len(s.Sections.DeliveryRequirements.AutoMerge.Checks) == 0 {
		s.Sections.DeliveryRequirements.AutoMerge.Checks = nil
	}
	if len(s.Policy.Rules) == 0 {
		s.Policy.Rules = nil
	}
}

// marshal is the canonical serialization: what is stored, compared for
// identical saves and measured against the size limit. encoding/json sorts
// map keys, so equal settings give equal bytes.
func (s Settings) marshal() ([]byte, error) {
	s.normalize()
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("serializing prompt configuration: %w", err)
	}
	return b, nil
}

// unmarshalSettings reads a stored configuration. Fields a stored version
// lacks take their defaults.
func unmarshalSettings(b []byte) (Settings, error) {
	s := DefaultSettings()
	if err := json.Unmarshal(b, &s); err != nil {
		return Settings{}, fmt.Errorf("reading stored prompt configuration: %w", err)
	}
	s.normalize()
	return s, nil
}
