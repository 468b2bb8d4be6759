package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

type composeFile struct {
	Services map[string]struct {
		Image         string                       `yaml:"image"`
		Build         struct{ Context string }     `yaml:"build"`
		Command       []string                     `yaml:"command"`
		Ports         []string                     `yaml:"ports"`
		ContainerName string                       `yaml:"container_name"`
		DependsOn     map[string]map[string]string `yaml:"depends_on"`
		Environment   map[string]string            `yaml:"environment"`
		Volumes       []string                     `yaml:"volumes"`
	} `yaml:"services"`
}

// TestComposeFile checks the compose file's premises: one migration before
// any process starts (two processes migrating at once race), workers that
// can be scaled, and every process on the image built from the Dockerfile.
func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile("compose.yaml")
	require.NoError(t, err)
	var c composeFile
	require.NoError(t, yaml.Unmarshal(raw, &c))

	require.True(t, strings.HasPrefix(c.Services["postgres"].Image, "postgres:16"))
	require.Equal(t, "service_healthy", c.Services["migrate"].DependsOn["postgres"]["condition"])
	for name, command := range map[string]string{"migrate": "migrate", "serve": "serve", "worker": "worker"} {
		s := c.Services[name]
		require.Equal(t, []string{command}, s.Command, name)
		require.FileExists(t, filepath.Join(s.Build.Context, "Dockerfile"), name)
		require.True(t, strings.HasPrefix(s.Environment["SUPERAGENT_DATABASE_URL"], "postgres://"), name)
		require.Equal(t, "/data", s.Environment["SUPERAGENT_DATA_DIR"], name)
		require.Contains(t, s.Volumes, "data:/data", name)
		if name != "migrate" {
			require.Equal(t, "service_completed_successfully", s.DependsOn["migrate"]["condition"], name)
		}
	}
	require.Empty(t, c.Services["worker"].Ports, "published ports stop `--scale worker=N`")
	require.Empty(t, c.Services["worker"].ContainerName, "a container name stops `--scale worker=N`")
	require.NotEmpty(t, c.Services["serve"].Ports)
}
