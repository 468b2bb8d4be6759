package admin

import "strings"

// diffLine is one line of a unified line diff.
type diffLine struct {
	// Kind is "same", "del" or "add".
	Kind string
	Text string
}

// diffLines reads promptparts.LineDiff output: each line prefixed with " ",
// "-" or "+".
func diffLines(diff string) []diffLine {
	diff = strings.TrimSuffix(diff, "\n")
	if diff == "" {
		return nil
	}
	var out []diffLine
	for _, l := range strings.Split(diff, "\n") {
		kind := "same"
		if l != "" {
			switch l[0] {
			case '-':
				kind = "del"
			case '+':
				kind = "add"
			}
			l = l[1:]
		}
		out = append(out, diffLine{Kind: kind, Text: l})
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
func sideBySide(diff string) []diffRow {
	var (
		rows       []diffRow
		dels, adds []string
		ln, rn     int
	)
	flush := func() {
		for i := 0; i < max(len(dels), len(adds)); i++ {
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
	for _, l := range diffLines(diff) {
		switch l.Kind {
		case "del":
			dels = append(dels, l.Text)
		case "add":
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
