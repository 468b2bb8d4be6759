package promptparts

import (
	"fmt"
	"slices"
	"strings"
)

// The conflict markers Merge writes around a block it cannot resolve, as
// git writes them, so that editors and people recognise them.
const (
	markerOurs   = "<<<<<<< "
	markerBase   = "||||||| "
	markerSplit  = "======="
	markerTheirs = ">>>>>>> "
)

// ChunkKind says how a stretch of a three-way merge was decided.
type ChunkKind string

// The kinds of merge chunks.
const (
	// ChunkSame: all three texts agree.
	ChunkSame ChunkKind = "same"
	// ChunkOurs: only our text changed this stretch; ours is taken.
	ChunkOurs ChunkKind = "ours"
	// ChunkTheirs: only their text changed it; theirs is taken.
	ChunkTheirs ChunkKind = "theirs"
	// ChunkBoth: both changed it in the same way.
	ChunkBoth ChunkKind = "both"
	// ChunkConflict: both changed it differently; a person decides.
	ChunkConflict ChunkKind = "conflict"
)

// MergeChunk is one stretch of a three-way merge. Lines keep their line
// breaks, so joining them gives the texts back byte for byte.
type MergeChunk struct {
	Kind ChunkKind
	// Base, Ours and Theirs are the stretch in each text.
	Base, Ours, Theirs []string
}

// Result is the lines the merge takes for the chunk; nil for a conflict.
func (c MergeChunk) Result() []string {
	switch c.Kind {
	case ChunkSame:
		return c.Base
	case ChunkOurs, ChunkBoth:
		return c.Ours
	case ChunkTheirs:
		return c.Theirs
	}
	return nil
}

// Merge is the outcome of a three-way merge.
type Merge struct {
	Chunks []MergeChunk
	// Labels name the three texts in conflict markers.
	OursLabel, BaseLabel, TheirsLabel string
}

// Conflicts counts the chunks a person must decide.
func (m Merge) Conflicts() int {
	n := 0
	for _, c := range m.Chunks {
		if c.Kind == ChunkConflict {
			n++
		}
	}
	return n
}

// Text is the merged text, each conflict written out between markers:
// our lines, the base's, their lines (diff3 style).
func (m Merge) Text() string {
	var b strings.Builder
	for _, c := range m.Chunks {
		if c.Kind != ChunkConflict {
			for _, l := range c.Result() {
				b.WriteString(l)
			}
			continue
		}
		side := func(marker string, lines []string) {
			b.WriteString(marker + "\n")
			for _, l := range lines {
				b.WriteString(l)
			}
			if n := len(lines); n > 0 && !strings.HasSuffix(lines[n-1], "\n") {
				b.WriteByte('\n')
			}
		}
		side(markerOurs+m.OursLabel, c.Ours)
		side(markerBase+m.BaseLabel, c.Base)
		side(markerSplit, c.Theirs)
		b.WriteString(markerTheirs + m.TheirsLabel + "\n")
	}
	return b.String()
}

// Merge3 applies the change from base to theirs onto ours, line by line:
// the classic diff3. Stretches where all three agree are kept; a stretch
// only one side changed takes that side; one both changed alike takes the
// change; one both changed differently is a conflict. For a part whose
// default was updated, base is the old default, theirs the new one and
// ours the team's text.
func Merge3(base, ours, theirs string) Merge {
	o, a, b := splitLines(base), splitLines(ours), splitLines(theirs)
	ma, mb := matchLines(o, a), matchLines(o, b)
	m := Merge{OursLabel: "your text", BaseLabel: "old default", TheirsLabel: "new default"}
	add := func(c MergeChunk) {
		if len(c.Base) == 0 && len(c.Ours) == 0 && len(c.Theirs) == 0 {
			return
		}
		// Consecutive stable lines make one chunk.
		if n := len(m.Chunks); c.Kind == ChunkSame && n > 0 && m.Chunks[n-1].Kind == ChunkSame {
			m.Chunks[n-1].Base = append(m.Chunks[n-1].Base, c.Base...)
			m.Chunks[n-1].Ours = m.Chunks[n-1].Base
			m.Chunks[n-1].Theirs = m.Chunks[n-1].Base
			return
		}
		m.Chunks = append(m.Chunks, c)
	}
	lo, la, lb := 0, 0, 0
	for {
		// The next base line both sides kept.
		i := lo
		for i < len(o) && (ma[i] < 0 || mb[i] < 0) {
			i++
		}
		if i == len(o) {
			add(unstable(o[lo:], a[la:], b[lb:]))
			return m
		}
		ja, kb := ma[i], mb[i]
		if i == lo && ja == la && kb == lb {
			add(MergeChunk{Kind: ChunkSame, Base: o[i : i+1], Ours: o[i : i+1], Theirs: o[i : i+1]})
			lo, la, lb = i+1, ja+1, kb+1
			continue
		}
		add(unstable(o[lo:i], a[la:ja], b[lb:kb]))
		lo, la, lb = i, ja, kb
	}
}

// unstable decides a stretch the sides do not all keep.
func unstable(o, a, b []string) MergeChunk {
	c := MergeChunk{Base: o, Ours: a, Theirs: b}
	switch {
	case slices.Equal(a, o) && slices.Equal(b, o):
		c.Kind = ChunkSame
	case slices.Equal(a, o):
		c.Kind = ChunkTheirs
	case slices.Equal(b, o):
		c.Kind = ChunkOurs
	case slices.Equal(a, b):
		c.Kind = ChunkBoth
	default:
		c.Kind = ChunkConflict
	}
	return c
}

// splitLines cuts text into lines that keep their "\n"; the last may lack
// one.
func splitLines(text string) []string {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// matchLines returns, for each line of x, the index of the line of y it is
// matched with in a longest common subsequence, or -1.
func matchLines(x, y []string) []int {
	match := make([]int, len(x))
	for i := range match {
		match[i] = -1
	}
	for _, p := range lcs(x, y) {
		match[p[0]] = p[1]
	}
	return match
}

// maxEdit bounds the edit distance lcs searches; texts further apart than
// that share only their common prefix and suffix, which keeps the search's
// memory (about maxEdit² words) small.
const maxEdit = 2000

// lcs returns the pairs (i, j) of a longest common subsequence of x and y,
// in order. The common prefix and suffix are matched first; the middle is
// searched with Myers' greedy O(ND) algorithm, keeping each round's
// frontier to trace the path back.
func lcs(x, y []string) [][2]int {
	var pairs [][2]int
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pairs = append(pairs, [2]int{pre, pre})
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	for _, p := range myers(x[pre:len(x)-suf], y[pre:len(y)-suf]) {
		pairs = append(pairs, [2]int{p[0] + pre, p[1] + pre})
	}
	for s := suf; s > 0; s-- {
		pairs = append(pairs, [2]int{len(x) - s, len(y) - s})
	}
	return pairs
}

func myers(x, y []string) [][2]int {
	n, m := len(x), len(y)
	if n == 0 || m == 0 {
		return nil
	}
	maxD := min(n+m, maxEdit)
	// v[off+k] is the furthest x reached on diagonal k = x - y; trace[d]
	// keeps v as it was before round d, for diagonals -d-1…d+1 (trace[d][0]
	// is diagonal -d-1).
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	found := false
	for d := 0; d <= maxD && !found; d++ {
		trace = append(trace, slices.Clone(v[off-d-1:off+d+2]))
		for k := -d; k <= d; k += 2 {
			var i int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				i = v[off+k+1] // from the diagonal above: a line of y inserted
			} else {
				i = v[off+k-1] + 1 // from the one below: a line of x deleted
			}
			j := i - k
			for i < n && j < m && x[i] == y[j] {
				i++
				j++
			}
			v[off+k] = i
			if i >= n && j >= m {
				found = true
				break
			}
		}
	}
	if !found {
		return nil
	}
	var pairs [][2]int
	i, j := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		at := func(k int) int { return trace[d][k+d+1] }
		k := i - j
		prevK := k - 1
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		}
		prevI := at(prevK)
		prevJ := prevI - prevK
		for i > prevI && j > prevJ {
			i--
			j--
			pairs = append(pairs, [2]int{i, j})
		}
		if d > 0 {
			i, j = prevI, prevJ
		}
	}
	slices.Reverse(pairs)
	return pairs
}

// ConflictMarker is one unresolved conflict left in a text.
type ConflictMarker struct {
	// Start and End are the 1-based lines of its first and last marker;
	// End is 0 when the block is never closed.
	Start, End int
}

func (c ConflictMarker) String() string {
	if c.End == 0 {
		return fmt.Sprintf("line %d (never closed)", c.Start)
	}
	return fmt.Sprintf("lines %d–%d", c.Start, c.End)
}

// ConflictMessage is the problem a save with markers left reports: where
// each block is and what to do.
func ConflictMessage(markers []ConflictMarker) string {
	at := make([]string, len(markers))
	for i, m := range markers {
		at[i] = m.String()
	}
	return fmt.Sprintf("unresolved merge conflict at %s: keep the lines you want and delete the <<<<<<<, |||||||, ======= and >>>>>>> marker lines", strings.Join(at, ", "))
}

// FindConflictMarkers lists the conflict blocks left in text: a line that
// begins with "<<<<<<<" up to the next line that begins with ">>>>>>>". A
// lone "=======" (a Markdown heading underline) is no conflict.
func FindConflictMarkers(text string) []ConflictMarker {
	var out []ConflictMarker
	open := 0
	for n, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "<<<<<<<"):
			if open != 0 {
				out = append(out, ConflictMarker{Start: open})
			}
			open = n + 1
		case strings.HasPrefix(line, ">>>>>>>") && open != 0:
			out = append(out, ConflictMarker{Start: open, End: n + 1})
			open = 0
		}
	}
	if open != 0 {
		out = append(out, ConflictMarker{Start: open})
	}
	return out
}
