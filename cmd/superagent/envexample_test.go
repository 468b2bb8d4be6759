package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	settingName = regexp.MustCompile(`"(SUPERAGENT_[A-Z0-9_]+)"`)
	// exampleLine is a setting in the example, set or left out behind a #.
	exampleLine = regexp.MustCompile(`^(#\s*)?(SUPERAGENT_[A-Z0-9_]+)=(.*)$`)
)

// settingsRead lists the SUPERAGENT_* names the command's own code (not
// its tests) reads.
func settingsRead(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range settingName.FindAllStringSubmatch(string(b), -1) {
			seen[m[1]] = true
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestEnvExampleListsEverySettingAndLoads holds deploy/superagent.env.example
// to the code: every setting the service reads is in it, it names no setting
// the service does not read, each line is a comment or NAME=value as
// Compose's env_file reads it (no quotes, no comment after a value), and
// with every example value set at once the configuration loads.
func TestEnvExampleListsEverySettingAndLoads(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "superagent.env.example"))
	require.NoError(t, err)
	read := settingsRead(t)
	require.Contains(t, read, "SUPERAGENT_PUBLIC_URL")

	listed := map[string]string{}
	var problems []string
	for n, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		m := exampleLine.FindStringSubmatch(line)
		switch {
		case m == nil && (line == "" || strings.HasPrefix(line, "#")):
			continue
		case m == nil:
			problems = append(problems, "line "+strconv.Itoa(n+1)+" is neither a comment nor NAME=value: "+line)
			continue
		case strings.ContainsAny(m[3], `"'`) || strings.Contains(m[3], " #") || strings.ContainsAny(strings.TrimSpace(m[3]), " \t"):
			problems = append(problems, "line "+strconv.Itoa(n+1)+": keep the value unquoted, without spaces or a comment after it: "+line)
		}
		if _, dup := listed[m[2]]; dup {
			problems = append(problems, m[2]+" is listed twice")
		}
		listed[m[2]] = m[3]
		if !slices.Contains(read, m[2]) {
			problems = append(problems, m[2]+" is not a setting the service reads")
		}
	}
	for _, name := range read {
		if _, ok := listed[name]; !ok {
			problems = append(problems, name+" is read by cmd/superagent but missing from deploy/superagent.env.example")
		}
	}
	require.Empty(t, problems)

	env := map[string]string{}
	for k, v := range listed {
		if v != "" {
			env[k] = v
		}
	}
	env["SUPERAGENT_DATA_DIR"] = t.TempDir()
	cfg, err := loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err, "the example's values, all set")
	require.Equal(t, "https://agent.example.com", cfg.PublicURL)
	require.True(t, cfg.SecureCookie)
}
