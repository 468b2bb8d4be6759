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
		Profiles      []string                     `yaml:"profiles"`
		Build         struct{ Context string }     `yaml:"build"`
		Command       []string                     `yaml:"command"`
		Ports         []string                     `yaml:"ports"`
		ContainerName string                       `yaml:"container_name"`
		DependsOn     map[string]map[string]string `yaml:"depends_on"`
		Environment   map[string]string            `yaml:"environment"`
		Volumes       []string                     `yaml:"volumes"`
		// EnvFile is a list of paths: the long form (path, required)
		// needs Compose 2.24.
		EnvFile     []string `yaml:"env_file"`
		SecurityOpt []string `yaml:"security_opt"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
}

// qualified reports whether an image reference names its registry, as
// podman requires without a search registry configured.
func qualified(ref string) bool {
	first, _, ok := strings.Cut(ref, "/")
	return ok && (strings.ContainsAny(first, ".:") || first == "localhost")
}

// TestComposeFile checks the compose file's premises: one migration before
// any process starts (two processes migrating at once race), workers that
// can be scaled, and every process on the image built from the Dockerfile.
func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile("compose.yaml")
	require.NoError(t, err)
	var c composeFile
	require.NoError(t, yaml.Unmarshal(raw, &c))

	require.True(t, strings.HasPrefix(c.Services["postgres"].Image, "docker.io/library/postgres:16"))
	require.Equal(t, "service_healthy", c.Services["migrate"].DependsOn["postgres"]["condition"])
	for name, command := range map[string]string{"migrate": "migrate", "serve": "serve", "worker": "worker"} {
		s := c.Services[name]
		require.Equal(t, command, s.Command[0], name)
		require.FileExists(t, filepath.Join(s.Build.Context, "Dockerfile"), name)
		require.True(t, strings.HasPrefix(s.Environment["SUPERAGENT_DATABASE_URL"], "postgres://"), name)
		require.Equal(t, "/data", s.Environment["SUPERAGENT_DATA_DIR"], name)
		require.Contains(t, s.Volumes, "data:/data", name)
		if name != "migrate" {
			require.Equal(t, "service_completed_successfully", s.DependsOn["migrate"]["condition"], name)
		}
	}
	for name, s := range c.Services {
		require.True(t, qualified(s.Image), "%s: image %q names its registry", name, s.Image)
	}
	for _, name := range []string{"migrate", "serve", "worker"} {
		s := c.Services[name]
		require.Equal(t, []string{"./superagent.env"}, s.EnvFile, name)
		require.FileExists(t, "superagent.env.example", "the file to copy to superagent.env")
		for _, opt := range []string{"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"} {
			require.Contains(t, s.SecurityOpt, opt, "%s: bubblewrap needs %s", name, opt)
		}
	}
	require.Equal(t, []string{"CMD", "/usr/local/bin/superagent", "healthcheck"}, c.Services["serve"].Healthcheck.Test)
	worker := c.Services["worker"]
	require.Equal(t, []string{"worker", "--metrics-addr", ":9091"}, worker.Command[:3])
	require.Equal(t, []string{"CMD", "/usr/local/bin/superagent", "healthcheck", "--addr", ":9091"}, worker.Healthcheck.Test,
		"the worker's healthcheck asks its metrics listener")

	dockerfile, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(dockerfile), "\n") {
		if from, ok := strings.CutPrefix(line, "FROM "); ok {
			require.True(t, qualified(strings.Fields(from)[0]), "Dockerfile: %s", line)
		}
	}
	require.Contains(t, string(dockerfile), `CMD ["/usr/local/bin/superagent", "healthcheck"]`)

	// `superagent setup github` on the data volume, by hand only: its page
	// listens inside the container and is published on the loopback.
	setup := c.Services["setup"]
	require.Equal(t, []string{"setup"}, setup.Profiles, "not started by `up`")
	require.Equal(t, []string{"setup", "github", "-listen", "0.0.0.0:8765"}, setup.Command)
	require.Equal(t, []string{"127.0.0.1:8765:8765"}, setup.Ports)
	require.Contains(t, setup.Volumes, "data:/data")
	require.Equal(t, "/data", setup.Environment["SUPERAGENT_DATA_DIR"])
	require.Equal(t, []string{"./superagent.env"}, setup.EnvFile)

	// The optional TLS front proxies to serve with deploy/Caddyfile.
	tls := c.Services["tls"]
	require.Equal(t, []string{"tls"}, tls.Profiles)
	require.Contains(t, tls.Volumes, "./Caddyfile:/etc/caddy/Caddyfile:ro")
	require.Equal(t, "service_healthy", tls.DependsOn["serve"]["condition"])
	caddyfile, err := os.ReadFile("Caddyfile")
	require.NoError(t, err)
	require.Contains(t, string(caddyfile), "{$DOMAIN} {")
	require.Contains(t, string(caddyfile), "reverse_proxy serve:8080")
	require.Contains(t, string(caddyfile), "respond /metrics 404", "the metrics stay off the internet")
	require.Equal(t, "${DOMAIN:-localhost}", tls.Environment["DOMAIN"])

	require.Empty(t, c.Services["worker"].Ports, "published ports stop `--scale worker=N`")
	require.Empty(t, c.Services["worker"].ContainerName, "a container name stops `--scale worker=N`")
	require.NotEmpty(t, c.Services["serve"].Ports)
}
