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
	// Note says when a side is not exact: a built-in text the revision was
	// saved with was not recorded, so this release's is shown.
	Note string `json:"note,omitempty"`

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

// DiffRevisions compares two revisions item by item, each with the
// built-in texts it was saved with: what the agents read under it, however
// many releases later.
func (s *Service) DiffRevisions(ctx context.Context, from, to int64) (Diff, error) {
	a, ba, err := s.versionWithBuiltins(ctx, from)
	if err != nil {
		return Diff{}, err
	}
	b, bb, err := s.versionWithBuiltins(ctx, to)
	if err != nil {
		return Diff{}, err
	}
	return Diff{From: from, To: to, Changes: s.diffSettings(a.Settings, ba, b.Settings, bb)}, nil
}

// versionWithBuiltins loads a revision and the built-in texts it was saved
// with; revision 0 is this release's defaults.
func (s *Service) versionWithBuiltins(ctx context.Context, rev int64) (Version, *builtinTexts, error) {
	v, err := s.Version(ctx, rev)
	if err != nil {
		return Version{}, nil, err
	}
	if rev == 0 {
		b := s.thisRelease()
		b.state = BuiltinsThisRelease
		return v, b, nil
	}
	b, err := s.builtins(ctx, v.BuiltinSet)
	if err != nil {
		return Version{}, nil, fmt.Errorf("loading prompt revision %d: %w", rev, err)
	}
	return v, b, nil
}

// item is one named text of a configuration; unknown says a built-in text
// stands in for one that was not recorded.
type item struct {
	text    string
	unknown bool
}

// items flattens a configuration into named texts for comparison and
// export: each part as the team overrode it or as b's built-in text.
func (s *Service) items(st Settings, b *builtinTexts) map[string]item {
	items := map[string]item{}
	for _, key := range b.keys {
		if o, ok := st.Overrides[key]; ok {
			items[key] = item{text: o.Text}
		} else if text, ok := b.text(key); ok {
			items[key] = item{text: text}
		} else {
			items[key] = item{text: s.reg.Text(key), unknown: true}
		}
	}
	for key, o := range st.Overrides {
		if _, ok := items[key]; !ok {
			items[key] = item{text: o.Text}
		}
	}
	c := st.Sections.Communication
	items["sections/communication"] = item{text: sectionText(c.Text, map[string]any{"agent_line": c.AgentLine, "review_bots": orEmpty(c.ReviewBots)})}
	items["sections/ticket_scope"] = item{text: sectionText(st.Sections.TicketScope.Text, nil)}
	dr := st.Sections.DeliveryRequirements
	am := dr.AutoMerge
	am.Checks = orEmpty(am.Checks)
	items["sections/delivery_requirements"] = item{text: sectionText(dr.Text, map[string]any{"auto_merge": am, "commit_author": dr.CommitAuthor})}
	for name, text := range st.Skills {
		items["skills/"+name] = item{text: text}
	}
	p, _ := json.MarshalIndent(st.Policy, "", "  ")
	items["policy"] = item{text: string(p) + "\n"}
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

func (s *Service) diffSettings(a Settings, ba *builtinTexts, b Settings, bb *builtinTexts) []Change {
	ia, ib := s.items(a, ba), s.items(b, bb)
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
		x, y := ia[k], ib[k]
		if x.text == y.text {
			continue
		}
		c := NewChange(k, x.text, y.text)
		switch {
		case x.unknown && y.unknown:
			c.Note = "the built-in text of this part was not recorded on either side; this release's is shown"
		case x.unknown:
			c.Note = "the built-in text of this part was not recorded for the first revision; this release's is shown"
		case y.unknown:
			c.Note = "the built-in text of this part was not recorded for the second revision; this release's is shown"
		}
		changes = append(changes, c)
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
		fmt.Fprintf(&b, "=== %s\n", c.Key)
		if c.Note != "" {
			fmt.Fprintf(&b, "# %s\n", c.Note)
		}
		b.WriteString(c.Diff)
	}
	return b.String()
}
