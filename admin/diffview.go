package admin

import "github.com/superagent-dev/superagent/promptparts"

// diffLine is one row of the "diff" template.
type diffLine struct {
	// Kind is "same", "del" or "add", the row's CSS class.
	Kind string
	Text string
}

func lineKind(op promptparts.LineOp) string {
	switch op {
	case promptparts.LineDeleted:
		return "del"
	case promptparts.LineAdded:
		return "add"
	}
	return "same"
}

// diffLines lays a line diff out for the "diff" template.
func diffLines(lines []promptparts.DiffLine) []diffLine {
	var out []diffLine
	for _, l := range lines {
		out = append(out, diffLine{Kind: lineKind(l.Op), Text: l.Text})
	}
	return out
}

// diffRow is one row of a side-by-side diff. An empty Kind on a side means
// the side has no line there.
type diffRow struct {
	Left, Right         string
	LeftKind, RightKind string
	LeftNo, RightNo     int
}

// sideBySide lays a line diff out in two columns: unchanged lines on both
// sides, and each run of removed and added lines paired up row by row.
func sideBySide(lines []promptparts.DiffLine) []diffRow {
	var (
		rows       []diffRow
		dels, adds []string
		ln, rn     int
	)
	flush := func() {
		for i := range max(len(dels), len(adds)) {
			var row diffRow
			if i < len(dels) {
				ln++
				row.Left, row.LeftKind, row.LeftNo = dels[i], "del", ln
			}
			if i < len(adds) {
				rn++
				row.Right, row.RightKind, row.RightNo = adds[i], "add", rn
			}
			rows = append(rows, row)
		}
		dels, adds = dels[:0], adds[:0]
	}
	for _, l := range lines {
		switch l.Op {
		case promptparts.LineDeleted:
			dels = append(dels, l.Text)
		case promptparts.LineAdded:
			adds = append(adds, l.Text)
		default:
			flush()
			ln++
			rn++
			rows = append(rows, diffRow{Left: l.Text, Right: l.Text, LeftKind: "same", RightKind: "same", LeftNo: ln, RightNo: rn})
		}
	}
	flush()
	return rows
}
