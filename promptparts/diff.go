package promptparts

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// LineOp is what a line diff does with one line.
type LineOp int8

// The line diff operations.
const (
	LineSame    LineOp = iota // the line is in both texts
	LineDeleted               // only the old text has it
	LineAdded                 // only the new text has it
)

// DiffLine is one line of a line diff.
type DiffLine struct {
	Op   LineOp
	Text string // the line without its line break
}

// DiffLines compares a and b line by line.
func DiffLines(a, b string) []DiffLine {
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(a, b)
	var out []DiffLine
	for _, d := range dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines) {
		op := LineSame
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			op = LineAdded
		case diffmatchpatch.DiffDelete:
			op = LineDeleted
		}
		for _, line := range strings.Split(strings.TrimSuffix(d.Text, "\n"), "\n") {
			out = append(out, DiffLine{Op: op, Text: line})
		}
	}
	return out
}

// LineDiff renders the change from a to b line by line: "-" for a removed
// line, "+" for an added one, " " for one both share.
func LineDiff(a, b string) string { return formatLines(DiffLines(a, b)) }

func formatLines(lines []DiffLine) string {
	var out strings.Builder
	for _, l := range lines {
		switch l.Op {
		case LineAdded:
			out.WriteByte('+')
		case LineDeleted:
			out.WriteByte('-')
		default:
			out.WriteByte(' ')
		}
		out.WriteString(l.Text)
		out.WriteByte('\n')
	}
	return out.String()
}

// Change is one item that differs between two configurations.
type Change struct {
	// Key names the item: a part key ("runtime/work"), "sections/<name>",
	// "skills/<name>" or "policy".
	Key string `json:"key"`
	// From and To are the effective texts on each side; a part without an
	// override reads as its current default.
	From string `json:"from"`
	To   string `json:"to"`
	// Diff is the line diff from From to To, as LineDiff renders it.
	Diff string `json:"diff"`

	lines []DiffLine
}

// NewChange describes the change of the item key from one text to another.
func NewChange(key, from, to string) Change {
	lines := DiffLines(from, to)
	return Change{Key: key, From: from, To: to, Diff: formatLines(lines), lines: lines}
}

// Lines is the line diff from From to To, as data for a view to lay out.
func (c Change) Lines() []DiffLine {
	if c.lines == nil {
		return DiffLines(c.From, c.To) // a Change not made by NewChange
	}
	return c.lines
}

// Diff is the difference between two configurations.
type Diff struct {
	// From and To are the revisions compared; To is -1 when the new side is
	// a directory (DiffDir).
	From    int64    `json:"from"`
	To      int64    `json:"to"`
	Changes []Change `json:"changes"`
}

// DiffRevisions compares two revisions item by item.
func (s *Service) DiffRevisions(ctx context.Context, from, to int64) (Diff, error) {
	a, err := s.Version(ctx, from)
	if err != nil {
		return Diff{}, err
	}
	b, err := s.Version(ctx, to)
	if err != nil {
		return Diff{}, err
	}
	return Diff{From: from, To: to, Changes: s.diffSettings(a.Settings, b.Settings)}, nil
}

// items flattens a configuration into named texts for comparison and
// export.
func (s *Service) items(st Settings) map[string]string {
	items := map[string]string{}
	for _, key := range s.reg.Keys() {
		if o, ok := st.Overrides[key]; ok {
			items[key] = o.Text
		} else {
			items[key] = s.reg.Text(key)
		}
	}
	for key, o := range st.Overrides {
		if !s.reg.Has(key) {
			items[key] = o.Text
		}
	}
	c := st.Sections.Communication
	items["sections/communication"] = sectionText(c.Text, map[string]any{"agent_line": c.AgentLine, "review_bots": orEmpty(c.ReviewBots)})
	items["sections/ticket_scope"] = sectionText(st.Sections.TicketScope.Text, nil)
	dr := st.Sections.DeliveryRequirements
	am := dr.AutoMerge
	am.Checks = orEmpty(am.Checks)
	items["sections/delivery_requirements"] = sectionText(dr.Text, map[string]any{"auto_merge": am, "commit_author": dr.CommitAuthor})
	for name, text := range st.Skills {
		items["skills/"+name] = text
	}
	p, _ := json.MarshalIndent(st.Policy, "", "  ")
	items["policy"] = string(p) + "\n"
	return items
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// sectionText shows a section's text followed by its settings, so that a
// diff shows a change of either.
func sectionText(text string, settings map[string]any) string {
	if settings == nil {
		return text
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return fmt.Sprintf("%s\n<!-- settings -->\n%s\n", text, b)
}

func (s *Service) diffSettings(a, b Settings) []Change {
	ia, ib := s.items(a), s.items(b)
	keys := make([]string, 0, len(ia)+len(ib))
	for k := range ia {
		keys = append(keys, k)
	}
	for k := range ib {
		if _, ok := ia[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	changes := []Change{}
	for _, k := range keys {
		if ia[k] == ib[k] {
			continue
		}
		changes = append(changes, NewChange(k, ia[k], ib[k]))
	}
	return changes
}

// Text renders a diff for a terminal: a header per changed item and its
// line diff.
func (d Diff) Text() string {
	if len(d.Changes) == 0 {
		return "no differences\n"
	}
	var b strings.Builder
	for _, c := range d.Changes {
		fmt.Fprintf(&b, "=== %s\n%s", c.Key, c.Diff)
	}
	return b.String()
}
