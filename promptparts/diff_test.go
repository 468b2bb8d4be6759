package promptparts

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDiffLines(t *testing.T) {
	same, del, add := LineSame, LineDeleted, LineAdded
	cases := []struct {
		name string
		a, b string
		want []DiffLine
		text string
	}{
		{"equal", "a\n", "a\n", []DiffLine{{same, "a"}}, " a\n"},
		{"both empty", "", "", nil, ""},
		{"all new", "", "a\nb\n", []DiffLine{{add, "a"}, {add, "b"}}, "+a\n+b\n"},
		{"one line replaced", "a\nb\nc\n", "a\nB\nc\n",
			[]DiffLine{{same, "a"}, {del, "b"}, {add, "B"}, {same, "c"}}, " a\n-b\n+B\n c\n"},
		{"an empty line added", "a\n", "a\n\n", []DiffLine{{same, "a"}, {add, ""}}, " a\n+\n"},
		{"a final line break added", "a", "a\n", []DiffLine{{del, "a"}, {add, "a"}}, "-a\n+a\n"},
		{"signs in the text stay text", "-x\n", "+x\n", []DiffLine{{del, "-x"}, {add, "+x"}}, "--x\n++x\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, DiffLines(c.a, c.b))
			require.Equal(t, c.text, LineDiff(c.a, c.b))
			ch := NewChange("k", c.a, c.b)
			require.Equal(t, c.text, ch.Diff)
			require.Equal(t, c.want, ch.Lines())
			require.Equal(t, c.want, Change{From: c.a, To: c.b}.Lines(), "a Change made by hand diffs on demand")
		})
	}
}
