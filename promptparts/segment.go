package promptparts

import (
	"strings"
)

// PartOrigin says where a stretch of an assembled prompt comes from.
type PartOrigin string

// The origins of a prompt's stretches.
const (
	// OriginBuiltin: a built-in part's text, as the release shipped it.
	OriginBuiltin PartOrigin = "built-in"
	// OriginOverride: the team's override of a built-in part.
	OriginOverride PartOrigin = "team override"
	// OriginTeam: the team sections, their enforced settings and the index
	// of team skills.
	OriginTeam PartOrigin = "team section"
	// OriginGenerated: written by the host for the request: the
	// Environment and Policy sections from their templates, the AGENTS.md
	// heading, the inferred-Ticket note.
	OriginGenerated PartOrigin = "generated"
	// OriginRepository: a repository's AGENTS.md file.
	OriginRepository PartOrigin = "repository"
)

// Segment is one stretch of an assembled prompt; a prompt's segments,
// joined, are the prompt byte for byte.
type Segment struct {
	// Key names the stretch: a part key, "sections", "agents/<path>" or
	// "inferred".
	Key    string     `json:"key"`
	Origin PartOrigin `json:"origin"`
	// Template is, for a generated section filled from a part (Environment,
	// Policy), where that part's text came from.
	Template PartOrigin `json:"template,omitempty"`
	Text     string     `json:"text"`
}

func nonEmpty(segs ...Segment) []Segment {
	out := segs[:0]
	for _, s := range segs {
		if s.Text != "" {
			out = append(out, s)
		}
	}
	return out
}

func joinSegments(segs []Segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.Text)
	}
	return b.String()
}

// explain returns the prompt build(in) writes, as segments.
func (c *compiled) explain(in Input) ([]Segment, error) {
	var segs []Segment
	env := func() Segment {
		var b strings.Builder
		writeEnvironment(&b, c, in.Environment)
		return Segment{Key: KeyEnvironment, Origin: OriginGenerated, Template: c.origins[KeyEnvironment], Text: b.String()}
	}
	switch in.Role {
	case RoleMain:
		segs = append(segs, c.mainSegments...)
		segs = append(segs, env(), c.policySegment)
	case RoleExecutor:
		segs = append(segs, c.executorSegments...)
		if len(in.AgentsMD) > 0 {
			segs = append(segs, Segment{Key: "agents", Origin: OriginGenerated, Text: agentsHeading})
			for _, f := range in.AgentsMD {
				var fb strings.Builder
				writeAgentsFile(&fb, f)
				segs = append(segs, Segment{Key: "agents/" + f.Path, Origin: OriginRepository, Text: fb.String()})
			}
		}
		segs = append(segs, env())
		if len(in.InferredRules) > 0 {
			var b strings.Builder
			writeInferred(&b, in.InferredRules)
			segs = append(segs, Segment{Key: "inferred", Origin: OriginGenerated, Text: b.String()})
		}
	default:
		return nil, errUnknownRole(in.Role)
	}
	segs = nonEmpty(segs...)
	// The prompt ends with one newline, not a part's blank line.
	if n := len(segs); n > 0 {
		segs[n-1].Text = strings.TrimSuffix(segs[n-1].Text, "\n")
	}
	return segs, nil
}
