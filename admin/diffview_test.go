package admin

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/promptparts"
)

func TestSideBySide(t *testing.T) {
	rows := sideBySide(promptparts.DiffLines("a\nb\nc\nd\n", "a\nB\nd\ne\n"))
	require.Equal(t, []diffRow{
		{Left: "a", Right: "a", LeftKind: "same", RightKind: "same", LeftNo: 1, RightNo: 1},
		{Left: "b", Right: "B", LeftKind: "del", RightKind: "add", LeftNo: 2, RightNo: 2},
		{Left: "c", LeftKind: "del", LeftNo: 3},
		{Left: "d", Right: "d", LeftKind: "same", RightKind: "same", LeftNo: 4, RightNo: 3},
		{Right: "e", RightKind: "add", RightNo: 4},
	}, rows)
	require.Equal(t, []diffLine{{"same", "a"}, {"del", "b"}, {"add", "B"}}, diffLines(promptparts.DiffLines("a\nb\n", "a\nB\n")))
	require.Nil(t, diffLines(nil), "no lines: the template says there is no difference")
}
