package promptparts

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMerge3(t *testing.T) {
	t.Parallel()
	const base = "# Work\n\nConfirm once.\nDeliver honestly.\nReport at the end.\n"
	tests := []struct {
		name, ours, theirs string
		want               string
		conflicts          int
	}{
		{
			name:   "only the default changed",
			ours:   base,
			theirs: "# Work\n\nConfirm once, concretely.\nDeliver honestly.\nReport at the end.\n",
			want:   "# Work\n\nConfirm once, concretely.\nDeliver honestly.\nReport at the end.\n",
		},
		{
			name:   "only the team changed",
			ours:   "# Work\n\nConfirm once.\nDeliver honestly, with evidence.\nReport at the end.\n",
			theirs: base,
			want:   "# Work\n\nConfirm once.\nDeliver honestly, with evidence.\nReport at the end.\n",
		},
		{
			// Like diff3 and git, a change right beside another one is a
			// conflict: no line both kept separates them.
			name:   "adjacent changes conflict",
			ours:   "# Work\n\nConfirm once.\nDeliver honestly.\nReport at the end, in English.\n",
			theirs: base + "Yield to duplicates.\n",
			want: "# Work\n\nConfirm once.\nDeliver honestly.\n" +
				"<<<<<<< your text\nReport at the end, in English.\n" +
				"||||||| old default\nReport at the end.\n" +
				"=======\nReport at the end.\nYield to duplicates.\n" +
				">>>>>>> new default\n",
			conflicts: 1,
		},
		{
			name:   "changes on different lines apply cleanly",
			ours:   "# Our work\n\nConfirm once.\nDeliver honestly.\nReport at the end, in English.\n",
			theirs: "# Work\n\nConfirm once, concretely.\nDeliver honestly.\nReport at the end.\n",
			want:   "# Our work\n\nConfirm once, concretely.\nDeliver honestly.\nReport at the end, in English.\n",
		},
		{
			name:   "the same change on both sides",
			ours:   "# Work\n\nConfirm once, concretely.\nDeliver honestly.\nReport at the end.\n",
			theirs: "# Work\n\nConfirm once, concretely.\nDeliver honestly.\nReport at the end.\n",
			want:   "# Work\n\nConfirm once, concretely.\nDeliver honestly.\nReport at the end.\n",
		},
		{
			name:   "different changes to one line conflict",
			ours:   "# Work\n\nConfirm in the team's words.\nDeliver honestly.\nReport at the end.\n",
			theirs: "# Work\n\nConfirm once, concretely.\nDeliver honestly.\nReport at the end.\n",
			want: "# Work\n\n" +
				"<<<<<<< your text\nConfirm in the team's words.\n" +
				"||||||| old default\nConfirm once.\n" +
				"=======\nConfirm once, concretely.\n" +
				">>>>>>> new default\n" +
				"Deliver honestly.\nReport at the end.\n",
			conflicts: 1,
		},
		{
			name:   "a deletion against an edit conflicts",
			ours:   "# Work\n\nDeliver honestly.\nReport at the end.\n",
			theirs: "# Work\n\nConfirm once, concretely.\nDeliver honestly.\nReport at the end.\n",
			want: "# Work\n\n" +
				"<<<<<<< your text\n" +
				"||||||| old default\nConfirm once.\n" +
				"=======\nConfirm once, concretely.\n" +
				">>>>>>> new default\n" +
				"Deliver honestly.\nReport at the end.\n",
			conflicts: 1,
		},
		{
			name:   "additions at the same place conflict",
			ours:   base + "Ours at the end.\n",
			theirs: base + "Theirs at the end.\n",
			want: base +
				"<<<<<<< your text\nOurs at the end.\n" +
				"||||||| old default\n" +
				"=======\nTheirs at the end.\n" +
				">>>>>>> new default\n",
			conflicts: 1,
		},
		{
			name:   "a missing final line break is kept",
			ours:   "a\nb\nc\nD",
			theirs: "a\nB\nc\nd",
			want:   "a\nB\nc\nD",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := base
			if strings.HasPrefix(tt.ours, "a\n") {
				b = "a\nb\nc\nd"
			}
			m := Merge3(b, tt.ours, tt.theirs)
			require.Equal(t, tt.want, m.Text())
			require.Equal(t, tt.conflicts, m.Conflicts())
			markers := FindConflictMarkers(m.Text())
			require.Len(t, markers, tt.conflicts)
		})
	}
}

// The merge of a text with itself, or with no change on one side, is the
// other side exactly; a merge's chunks give the three texts back.
func TestMerge3Identities(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		base, ours, theirs := randomText(r), randomText(r), randomText(r)
		require.Equal(t, ours, Merge3(base, ours, base).Text())
		require.Equal(t, theirs, Merge3(base, base, theirs).Text())
		require.Equal(t, ours, Merge3(base, ours, ours).Text())
		m := Merge3(base, ours, theirs)
		var gotBase, gotOurs, gotTheirs strings.Builder
		for _, c := range m.Chunks {
			gotBase.WriteString(strings.Join(c.Base, ""))
			gotOurs.WriteString(strings.Join(c.Ours, ""))
			gotTheirs.WriteString(strings.Join(c.Theirs, ""))
		}
		require.Equal(t, base, gotBase.String())
		require.Equal(t, ours, gotOurs.String())
		require.Equal(t, theirs, gotTheirs.String())
	}
}

// lcs finds a common subsequence as long as the textbook dynamic program's.
func TestLCSIsLongest(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		x, y := splitLines(randomText(r)), splitLines(randomText(r))
		pairs := lcs(x, y)
		pi, pj := -1, -1
		for _, p := range pairs {
			require.Greater(t, p[0], pi)
			require.Greater(t, p[1], pj)
			require.Equal(t, x[p[0]], y[p[1]])
			pi, pj = p[0], p[1]
		}
		require.Equal(t, lcsLength(x, y), len(pairs), "x=%q y=%q", x, y)
	}
}

func lcsLength(x, y []string) int {
	dp := make([][]int, len(x)+1)
	for i := range dp {
		dp[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// randomText is up to 12 lines drawn from a small alphabet, so that texts
// share lines; sometimes without the final line break.
func randomText(r *rand.Rand) string {
	words := []string{"a\n", "b\n", "c\n", "d\n", "e\n", "\n"}
	var b strings.Builder
	for range r.IntN(13) {
		b.WriteString(words[r.IntN(len(words))])
	}
	s := b.String()
	if s != "" && r.IntN(4) == 0 {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

func TestFindConflictMarkers(t *testing.T) {
	t.Parallel()
	text := "Title\n=======\n\n<<<<<<< your text\nours\n=======\ntheirs\n>>>>>>> new default\nok\n<<<<<<< again\nnever closed\n"
	require.Equal(t, []ConflictMarker{{Start: 4, End: 8}, {Start: 10}}, FindConflictMarkers(text))
	require.Empty(t, FindConflictMarkers("A heading\n=======\n\nText.\n"), "a Markdown underline is no conflict")
}

func FuzzMerge3(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n", "a\nb\nC\n")
	f.Add("", "x", "y")
	f.Fuzz(func(t *testing.T, base, ours, theirs string) {
		m := Merge3(base, ours, theirs)
		if m.Conflicts() == 0 && len(FindConflictMarkers(m.Text())) > len(FindConflictMarkers(ours))+len(FindConflictMarkers(theirs)) {
			t.Fatalf("a clean merge wrote markers: %q", m.Text())
		}
		if got := Merge3(base, ours, base).Text(); got != ours {
			t.Fatalf("merging no change onto ours gave %q, want %q", got, ours)
		}
	})
}
