package admin

import (
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/promptparts"
)

// foldContext is how many unchanged lines stay visible on each side of a
// change; longer unchanged runs are folded.
const foldContext = 2

// diffBlock is a stretch of a side-by-side diff: a change, which jump links
// name by ID, or unchanged lines, folded when there are many.
type diffBlock struct {
	ID     string
	Change bool
	Folded bool
	Rows   []diffRow
}

// compareView is a side-by-side diff cut into blocks.
type compareView struct {
	Blocks  []diffBlock
	Changes []string // the IDs of the changed blocks, in order
}

// foldRows cuts side-by-side rows into changed and unchanged blocks,
// folding an unchanged run but for foldContext lines at each end.
func foldRows(rows []diffRow, idPrefix string) compareView {
	var v compareView
	changed := func(r diffRow) bool { return r.LeftKind != "same" || r.RightKind != "same" }
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && changed(rows[j]) == changed(rows[i]) {
			j++
		}
		run := rows[i:j]
		if changed(rows[i]) {
			id := fmt.Sprintf("%s-%d", idPrefix, len(v.Changes)+1)
			v.Changes = append(v.Changes, id)
			v.Blocks = append(v.Blocks, diffBlock{ID: id, Change: true, Rows: run})
		} else {
			v.Blocks = append(v.Blocks, foldSame(run, i == 0, j == len(rows))...)
		}
		i = j
	}
	return v
}

// foldSame keeps foldContext lines of an unchanged run next to each
// change (none at the text's start or end) and folds the rest.
func foldSame(run []diffRow, first, last bool) []diffBlock {
	head, tail := foldContext, foldContext
	if first {
		head = 0
	}
	if last {
		tail = 0
	}
	if len(run) <= head+tail+1 {
		return []diffBlock{{Rows: run}}
	}
	var out []diffBlock
	if head > 0 {
		out = append(out, diffBlock{Rows: run[:head]})
	}
	out = append(out, diffBlock{Folded: true, Rows: run[head : len(run)-tail]})
	if tail > 0 {
		out = append(out, diffBlock{Rows: run[len(run)-tail:]})
	}
	return out
}

// mergeBlock is one stretch of a three-way merge as the page shows it.
type mergeBlock struct {
	// Kind is the promptparts.ChunkKind; ID names changed blocks for the
	// jump links.
	Kind   string
	ID     string
	Folded bool
	// Lines are what the merge takes; a conflict shows Ours and Theirs.
	Lines        []string
	Ours, Theirs []string
}

// mergeView is the merge of the new default into the team's text.
type mergeView struct {
	Blocks []mergeBlock
	// Conflicts are the IDs of the blocks a person must resolve; Applied
	// those the merge took from the new default.
	Conflicts []string
	Applied   []string
	// Text is the merged text, conflicts between markers, for the editor.
	Text string
}

// newMergeView merges the change from base to theirs into ours.
func newMergeView(base, ours, theirs string) *mergeView {
	m := promptparts.Merge3(base, ours, theirs)
	v := &mergeView{Text: m.Text()}
	for i, c := range m.Chunks {
		b := mergeBlock{Kind: string(c.Kind), Lines: trimLines(c.Result())}
		switch c.Kind {
		case promptparts.ChunkConflict:
			b.ID = fmt.Sprintf("conflict-%d", len(v.Conflicts)+1)
			b.Ours, b.Theirs = trimLines(c.Ours), trimLines(c.Theirs)
			v.Conflicts = append(v.Conflicts, b.ID)
		case promptparts.ChunkTheirs, promptparts.ChunkBoth:
			b.ID = fmt.Sprintf("applied-%d", len(v.Applied)+1)
			v.Applied = append(v.Applied, b.ID)
		case promptparts.ChunkSame:
			b.Folded = len(c.Base) > 2*foldContext+1 && i > 0 && i < len(m.Chunks)-1
		}
		v.Blocks = append(v.Blocks, b)
	}
	return v
}

// trimLines drops the line breaks merge chunks keep, for display.
func trimLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimSuffix(l, "\n")
	}
	return out
}
