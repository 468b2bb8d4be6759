package promptparts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnified(t *testing.T) {
	t.Parallel()
	var a, b strings.Builder
	for i := 1; i <= 20; i++ {
		line := "line " + string(rune('a'+i-1)) + "\n"
		a.WriteString(line)
		switch i {
		case 2:
			b.WriteString("changed b\n")
		case 18:
		default:
			b.WriteString(line)
		}
		if i == 20 {
			b.WriteString("added at the end\n")
		}
	}
	d := Diff{Changes: []Change{NewChange("runtime/work", a.String(), b.String()), NewChange("skills/new", "", "one\ntwo\n")}}
	got := d.Unified("revision 1", "prompts/")
	require.Equal(t, "--- a/runtime/work\trevision 1\n+++ b/runtime/work\tprompts/\n"+
		"@@ -1,5 +1,5 @@\n line a\n-line b\n+changed b\n line c\n line d\n line e\n"+
		"@@ -15,6 +15,6 @@\n line o\n line p\n line q\n-line r\n line s\n line t\n+added at the end\n"+
		"--- a/skills/new\trevision 1\n+++ b/skills/new\tprompts/\n@@ -0,0 +1,2 @@\n+one\n+two\n", got)

	// patch(1) applies it: the format is the real one.
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("patch is not installed")
	}
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "runtime"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runtime", "work"), []byte(a.String()), 0o644))
	cmd := exec.Command("patch", "-p1", "--quiet")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(d.Unified("revision 1", "prompts/"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	patched, err := os.ReadFile(filepath.Join(dir, "runtime", "work"))
	require.NoError(t, err)
	require.Equal(t, b.String(), string(patched))
}
