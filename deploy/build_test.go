// Package deploy_test checks the premises of the container image and the
// compose file without a container engine: the Dockerfile's build command is
// the one `make build` runs and yields a static binary that runs on an image
// with no C library, and the compose file can scale its workers.
package deploy_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const repoRoot = ".."

// buildCommand is a go build invocation in a comparable form: environment
// assignments, then the arguments with the output path and the version
// replaced by placeholders.
type buildCommand struct {
	Env  []string
	Args []string
}

// dockerBuild finds the RUN instruction that builds the binary.
func dockerBuild(t *testing.T) buildCommand {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	require.NoError(t, err)
	text := strings.ReplaceAll(string(raw), "\\\n", " ")
	var found []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "RUN ") && strings.Contains(line, " go build ") {
			found = append(found, strings.TrimPrefix(line, "RUN "))
		}
	}
	require.Len(t, found, 1, "the Dockerfile should build the binary in exactly one RUN instruction")
	words := shellWords(t, found[0])
	for len(words) > 0 && strings.HasPrefix(words[0], "--") { // RUN options such as --mount
		words = words[1:]
	}
	for i, w := range words {
		words[i] = strings.NewReplacer("${VERSION}", "VERSION", "$VERSION", "VERSION").Replace(w)
	}
	return parseBuild(t, words)
}

// makeBuild finds the build target's recipe in the Makefile and expands
// its variables.
func makeBuild(t *testing.T) buildCommand {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	require.NoError(t, err)
	text := string(raw)
	m := regexp.MustCompile(`(?m)^LDFLAGS\s*:?=\s*(.+)$`).FindStringSubmatch(text)
	require.NotNil(t, m, "no LDFLAGS in the Makefile")
	ldflags := strings.TrimSpace(m[1])
	r := regexp.MustCompile(`(?m)^build:.*\n\t(.+)$`).FindStringSubmatch(text)
	require.NotNil(t, r, "no build target in the Makefile")
	recipe := strings.NewReplacer("$(LDFLAGS)", ldflags).Replace(r[1])
	recipe = strings.NewReplacer("$(GO)", "go", "$(VERSION)", "VERSION").Replace(recipe)
	return parseBuild(t, shellWords(t, recipe))
}

func parseBuild(t *testing.T, words []string) buildCommand {
	t.Helper()
	var c buildCommand
	for len(words) > 0 && strings.Contains(words[0], "=") {
		c.Env = append(c.Env, words[0])
		words = words[1:]
	}
	require.GreaterOrEqual(t, len(words), 2, "no go build command in %q", words)
	require.Equal(t, []string{"go", "build"}, words[:2])
	for i := 2; i < len(words); i++ {
		if words[i] == "-o" && i+1 < len(words) {
			c.Args = append(c.Args, "-o", "OUT")
			i++
			continue
		}
		c.Args = append(c.Args, words[i])
	}
	return c
}

// shellWords splits a command line as sh would for the quoting used here:
// single and double quotes, no escapes inside single quotes.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	require.Zero(t, quote, "unterminated quote in %q", s)
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func TestDockerfileBuildsWhatMakeBuilds(t *testing.T) {
	require.Equal(t, makeBuild(t), dockerBuild(t))
}

func TestDockerfileBuildsAStaticBinary(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not installed")
	}
	c := dockerBuild(t)
	require.Contains(t, c.Env, "CGO_ENABLED=0")
	out := filepath.Join(t.TempDir(), "superagent")
	args := make([]string, 0, len(c.Args)+1)
	args = append(args, "build")
	for _, a := range c.Args {
		a = strings.ReplaceAll(a, "VERSION", "v0.0.0-static-test")
		if a == "OUT" {
			a = out
		}
		args = append(args, a)
	}
	cmd := exec.Command(gobin, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), c.Env...)
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "go %s\n%s", strings.Join(args, " "), output)

	f, err := elf.Open(out)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "the binary asks for an ELF interpreter (dynamic loader)")
		require.NotEqual(t, elf.PT_DYNAMIC, p.Type, "the binary has a dynamic section")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Empty(t, libs, "the binary needs shared libraries")
	require.Nil(t, f.Section(".interp"))

	// The version reaches the binary through -X main.version.
	v, err := exec.Command(out, "version").CombinedOutput()
	require.NoError(t, err, "%s", v)
	require.Equal(t, "superagent v0.0.0-static-test\n", string(v))
}
