package promptparts

import (
	"fmt"
	"strings"
)

// unifiedContext is how many unchanged lines surround a change in a
// unified diff, as diff -u and git show them.
const unifiedContext = 3

// Unified renders the diff as unified diffs, one per changed item, the
// format diff -u, git and patch read: "--- a/<key>" and "+++ b/<key>"
// headers, then hunks of changed lines with three lines of context. from
// and to label the two sides in the headers ("revision 3", a directory).
func (d Diff) Unified(from, to string) string {
	var b strings.Builder
	for _, c := range d.Changes {
		fmt.Fprintf(&b, "--- a/%s\t%s\n+++ b/%s\t%s\n", c.Key, from, c.Key, to)
		if c.Note != "" {
			fmt.Fprintf(&b, "# %s\n", c.Note)
		}
		writeHunks(&b, c.Lines())
	}
	return b.String()
}

// writeHunks writes the hunks of a line diff.
func writeHunks(b *strings.Builder, lines []DiffLine) {
	n := len(lines)
	// before[i] counts the old and new lines above line i of the diff.
	oldBefore, newBefore := make([]int, n+1), make([]int, n+1)
	var changes []int
	for i, l := range lines {
		oldBefore[i+1], newBefore[i+1] = oldBefore[i], newBefore[i]
		if l.Op != LineAdded {
			oldBefore[i+1]++
		}
		if l.Op != LineDeleted {
			newBefore[i+1]++
		}
		if l.Op != LineSame {
			changes = append(changes, i)
		}
	}
	for h := 0; h < len(changes); {
		start := max(changes[h]-unifiedContext, 0)
		end := min(changes[h]+unifiedContext+1, n)
		// Changes closer than twice the context share a hunk.
		for h++; h < len(changes) && changes[h]-unifiedContext <= end; h++ {
			end = min(changes[h]+unifiedContext+1, n)
		}
		fmt.Fprintf(b, "@@ -%s +%s @@\n", hunkRange(oldBefore[start], oldBefore[end]-oldBefore[start]),
			hunkRange(newBefore[start], newBefore[end]-newBefore[start]))
		for _, l := range lines[start:end] {
			switch l.Op {
			case LineAdded:
				b.WriteByte('+')
			case LineDeleted:
				b.WriteByte('-')
			default:
				b.WriteByte(' ')
			}
			b.WriteString(l.Text)
			b.WriteByte('\n')
		}
	}
}

// hunkRange is a hunk header's "start,count": an empty side names the line
// before it, a one-line side omits the count.
func hunkRange(before, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", before)
	case 1:
		return fmt.Sprintf("%d", before+1)
	}
	return fmt.Sprintf("%d,%d", before+1, count)
}
