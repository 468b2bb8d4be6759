package promptparts

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecideStatus(t *testing.T) {
	t.Parallel()
	const (
		oldDefault = "sha-old-default"
		newDefault = "sha-new-default"
		team       = "sha-team-text"
	)
	tests := []struct {
		name        string
		hasOverride bool
		overrideSHA string
		baseSHA     string
		defaultSHA  string
		want        Status
	}{
		{"no override follows the default", false, "", "", newDefault, StatusDefault},
		{"no override ignores stray values", false, team, oldDefault, newDefault, StatusDefault},
		{"override based on the current default", true, team, newDefault, newDefault, StatusOverridden},
		{"override based on an older default", true, team, oldDefault, newDefault, StatusDefaultUpdated},
		{"override without a recorded base", true, team, "", newDefault, StatusDefaultUpdated},
		{"override equal to the current default, current base", true, newDefault, newDefault, newDefault, StatusDefault},
		{"override equal to the current default, old base", true, newDefault, oldDefault, newDefault, StatusDefault},
		{"override equal to the old default it was based on", true, oldDefault, oldDefault, newDefault, StatusDefaultUpdated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, DecideStatus(tt.hasOverride, tt.overrideSHA, tt.baseSHA, tt.defaultSHA))
		})
	}
}

func TestCheckTemplate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		key  string
		text string
		want []string
	}{
		{"not a template", KeyWork, "{anything} goes {here}", nil},
		{"complete environment", KeyEnvironment, "# Env\n{variables}", nil},
		{"missing placeholder", KeyEnvironment, "# Env", []string{"template must keep the placeholder {variables}"}},
		{"unknown placeholder, reported once", KeyPolicyNone, "{version} {mode} {rules} {rules}", []string{"unknown placeholder {rules} (allowed: {version}, {mode})"}},
		{"JSON in braces is not a placeholder", KeyPolicy, `{version} {mode} {rules} {"a": 1} {Mode}`, nil},
		{"several problems", KeyPolicy, "{version} {colour}", []string{
			"template must keep the placeholder {mode}",
			"template must keep the placeholder {rules}",
			"unknown placeholder {colour} (allowed: {version}, {mode}, {rules})",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, checkTemplate(tt.key, tt.text))
		})
	}
}

func TestRegistryRefusesIncompleteRelease(t *testing.T) {
	t.Parallel()
	fsys := testDefaults()
	delete(fsys, KeyCoding+".md")
	fsys[KeyEnvironment+".md"].Data = []byte("no placeholder")
	_, err := NewRegistry(fsys)
	require.EqualError(t, err, "invalid built-in prompt parts: coding: missing built-in part coding.md; runtime/environment: template must keep the placeholder {variables}")
}

func TestBuiltinDefaultsAreComplete(t *testing.T) {
	t.Parallel()
	reg, err := NewRegistry(BuiltinDefaults())
	require.NoError(t, err)
	for _, key := range RequiredKeys {
		require.True(t, reg.Has(key), key)
	}
	require.Equal(t, []string{"feishu", "github"}, reg.SkillNames())
}
