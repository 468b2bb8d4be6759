package main

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/executor"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadConfigDefaults(t *testing.T) {
	c, err := loadConfig(envOf(map[string]string{"SUPERAGENT_MODEL": "m1"}))
	require.NoError(t, err)
	require.Equal(t, ":8080", c.Addr)
	require.Equal(t, "./data", c.DataDir)
	require.Equal(t, "sqlite://data/superagent.db", c.DatabaseURL)
	require.Equal(t, "webhook", c.FeishuMode)
	require.Equal(t, "m1", c.RouterModel, "the router model defaults to the Executor model")
	require.Equal(t, 30*time.Second, c.ShutdownTimeout)
	require.Equal(t, time.Hour, c.RescueAfter)
	require.Equal(t, "superagent", c.GitHubTriggerLabel)
	require.Zero(t, c.ExecutorMaxSteps+c.ExecutorRepeatLimit+c.ExecutorStallSteps, "the Executor's own defaults apply")

	c, err = loadConfig(envOf(map[string]string{"SUPERAGENT_EXECUTOR_MAX_STEPS": "50", "SUPERAGENT_EXECUTOR_REPEAT_LIMIT": "4",
		"SUPERAGENT_EXECUTOR_STALL_STEPS": "20"}))
	require.NoError(t, err)
	require.Equal(t, []int{50, 4, 20}, []int{c.ExecutorMaxSteps, c.ExecutorRepeatLimit, c.ExecutorStallSteps})
}

func TestLoadConfigRefusesBadValues(t *testing.T) {
	tests := []struct {
		name, key, value, want string
	}{
		{"address", "SUPERAGENT_ADDR", "8080", `SUPERAGENT_ADDR: must be host:port or :port, got "8080"`},
		{"port", "SUPERAGENT_ADDR", ":http-ish", `SUPERAGENT_ADDR: port must be a number from 0 to 65535, got "http-ish"`},
		{"database scheme", "SUPERAGENT_DATABASE_URL", "mysql://x", "SUPERAGENT_DATABASE_URL: must start with postgres:// or sqlite://"},
		{"app id", "SUPERAGENT_GITHUB_APP_ID", "-3", `SUPERAGENT_GITHUB_APP_ID: must be a positive integer, got "-3"`},
		{"key file", "SUPERAGENT_GITHUB_PRIVATE_KEY", "/nonexistent/key.pem", "SUPERAGENT_GITHUB_PRIVATE_KEY: is neither PEM text nor a readable file"},
		{"key text", "SUPERAGENT_GITHUB_PRIVATE_KEY", "-----BEGIN RSA PRIVATE KEY-----\nnope\n-----END RSA PRIVATE KEY-----\n", "SUPERAGENT_GITHUB_PRIVATE_KEY: is not an RSA private key in PEM form"},
		{"api url", "SUPERAGENT_GITHUB_API_URL", "ftp://example", `SUPERAGENT_GITHUB_API_URL: must be an http:// or https:// URL, got "ftp://example"`},
		{"feishu mode", "SUPERAGENT_FEISHU_MODE", "socket", `SUPERAGENT_FEISHU_MODE: must be webhook or longconn, got "socket"`},
		{"log level", "SUPERAGENT_LOG_LEVEL", "loud", `SUPERAGENT_LOG_LEVEL: must be debug, info, warn or error, got "loud"`},
		{"shutdown", "SUPERAGENT_SHUTDOWN_TIMEOUT", "soon", `SUPERAGENT_SHUTDOWN_TIMEOUT: must be a positive duration such as 30s or 5m, got "soon"`},
		{"short token", "SUPERAGENT_ADMIN_TOKEN", "short", "SUPERAGENT_ADMIN_TOKEN: must be at least 16 characters"},
		{"price", "SUPERAGENT_MODEL_PRICE", "3,15", `SUPERAGENT_MODEL_PRICE: must be input,cached-input,output prices per million tokens such as 3,0.3,15, got "3,15"`},
		{"router model alone", "SUPERAGENT_ROUTER_MODEL", "gpt-router", "SUPERAGENT_MODEL: required when SUPERAGENT_ROUTER_MODEL is set"},
		{"sandbox", "SUPERAGENT_SANDBOX", "docker", `SUPERAGENT_SANDBOX: must be bwrap or none, got "docker"`},
		{"sandbox network", "SUPERAGENT_SANDBOX_NETWORK", "maybe", `SUPERAGENT_SANDBOX_NETWORK: must be on or off, got "maybe"`},
		{"sandbox paths", "SUPERAGENT_SANDBOX_READONLY", "usr/local/go", `SUPERAGENT_SANDBOX_READONLY: "usr/local/go" is not an absolute path`},
		{"sandbox cpu", "SUPERAGENT_SANDBOX_CPU_SECONDS", "1m", `SUPERAGENT_SANDBOX_CPU_SECONDS: must be a positive number of seconds, got "1m"`},
		{"sandbox processes", "SUPERAGENT_SANDBOX_PROCESSES", "0", `SUPERAGENT_SANDBOX_PROCESSES: must be a positive number of processes, got "0"`},
		{"github writes", "SUPERAGENT_GITHUB_WRITES_PER_HOUR", "lots", `SUPERAGENT_GITHUB_WRITES_PER_HOUR: must be a positive number of writes, got "lots"`},
		{"sandbox memory", "SUPERAGENT_SANDBOX_MEMORY", "8GB", `SUPERAGENT_SANDBOX_MEMORY: must be a positive size such as 8GiB, 512MiB or a number of bytes, got "8GB"`},
		{"sandbox disk", "SUPERAGENT_SANDBOX_DISK", "-1", `SUPERAGENT_SANDBOX_DISK: must be a positive size such as 8GiB, 512MiB or a number of bytes, got "-1"`},
		{"lease", "SUPERAGENT_EXECUTOR_LEASE", "-1s", "SUPERAGENT_EXECUTOR_LEASE: must be a positive duration"},
		{"max steps", "SUPERAGENT_EXECUTOR_MAX_STEPS", "0", `SUPERAGENT_EXECUTOR_MAX_STEPS: must be a number of model requests, at least 1, got "0"`},
		{"repeat limit", "SUPERAGENT_EXECUTOR_REPEAT_LIMIT", "1", `SUPERAGENT_EXECUTOR_REPEAT_LIMIT: must be a number of calls, at least 2, got "1"`},
		{"stall steps", "SUPERAGENT_EXECUTOR_STALL_STEPS", "many", `SUPERAGENT_EXECUTOR_STALL_STEPS: must be a number of model requests, at least 2, got "many"`},
		{"mcp timeout", "SUPERAGENT_MCP_TIMEOUT", "0s", `SUPERAGENT_MCP_TIMEOUT: must be a positive duration such as 30s or 5m, got "0s"`},
		{"setup timeout", "SUPERAGENT_SETUP_TIMEOUT", "later", `SUPERAGENT_SETUP_TIMEOUT: must be a positive duration such as 30s or 5m, got "later"`},
		{"setup disk", "SUPERAGENT_SETUP_DISK", "1TB", `SUPERAGENT_SETUP_DISK: must be a positive size`},
		{"secrets key", "SUPERAGENT_SECRETS_KEY", "too-short", "SUPERAGENT_SECRETS_KEY: the key must be 32 bytes"},
		{"budget", "SUPERAGENT_TICKET_TOKEN_BUDGET", "lots", `SUPERAGENT_TICKET_TOKEN_BUDGET: must be a number of tokens (0 for none), got "lots"`},
		{"trigger label", "SUPERAGENT_GITHUB_TRIGGER_LABEL", strings.Repeat("x", 51), `SUPERAGENT_GITHUB_TRIGGER_LABEL: must be a label name of 1 to 50 characters`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadConfig(envOf(map[string]string{tt.key: tt.value}))
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			require.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestLoadConfigRefusesUnsafeValues(t *testing.T) {
	data := t.TempDir()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"log level with an offset", map[string]string{"SUPERAGENT_LOG_LEVEL": "debug+100"}, `SUPERAGENT_LOG_LEVEL: must be debug, info, warn or error, got "debug+100"`},
		{"log level as a number", map[string]string{"SUPERAGENT_LOG_LEVEL": "ERROR-8"}, `SUPERAGENT_LOG_LEVEL: must be debug, info, warn or error, got "ERROR-8"`},
		{"blank admin token", map[string]string{"SUPERAGENT_ADMIN_TOKEN": strings.Repeat(" ", 16)}, "SUPERAGENT_ADMIN_TOKEN: must not be blank"},
		{"admin token with spaces", map[string]string{"SUPERAGENT_ADMIN_TOKEN": " correct horse battery staple "}, "SUPERAGENT_ADMIN_TOKEN: must not contain spaces or control characters"},
		{"admin token with a newline", map[string]string{"SUPERAGENT_ADMIN_TOKEN": "0123456789abcdef\n"}, "SUPERAGENT_ADMIN_TOKEN: must not contain spaces or control characters"},
		{"short admin token", map[string]string{"SUPERAGENT_ADMIN_TOKEN": "0123456789abcde"}, "SUPERAGENT_ADMIN_TOKEN: must be at least 16 characters"},
		{"encrypt key without verification token", map[string]string{"SUPERAGENT_FEISHU_ENCRYPT_KEY": "encrypt-key"},
			"SUPERAGENT_FEISHU_VERIFICATION_TOKEN: required when SUPERAGENT_FEISHU_ENCRYPT_KEY is set"},
		{"verification token without encrypt key", map[string]string{"SUPERAGENT_FEISHU_VERIFICATION_TOKEN": "verification-token"},
			"SUPERAGENT_FEISHU_ENCRYPT_KEY: required when SUPERAGENT_FEISHU_VERIFICATION_TOKEN is set"},
		{"data dir under a read-only path", map[string]string{"SUPERAGENT_DATA_DIR": filepath.Join(data, "superagent"), "SUPERAGENT_SANDBOX_READONLY": "/usr/local/go," + data},
			fmt.Sprintf("SUPERAGENT_SANDBOX_READONLY: %q overlaps the data directory", data)},
		{"read-only path inside the data dir", map[string]string{"SUPERAGENT_DATA_DIR": data, "SUPERAGENT_SANDBOX_READONLY": filepath.Join(data, "workspaces", "shared")},
			"overlaps the data directory"},
		{"the whole file system read-only", map[string]string{"SUPERAGENT_SANDBOX_READONLY": "/"}, `SUPERAGENT_SANDBOX_READONLY: "/" overlaps the data directory ./data`},
		{"relative data dir, same place", map[string]string{"SUPERAGENT_DATA_DIR": "./data", "SUPERAGENT_SANDBOX_READONLY": filepath.Join(mustGetwd(t), "data")}, "overlaps the data directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadConfig(envOf(tt.env))
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			require.NotContains(t, err.Error(), "\n", "one line")
		})
	}
	t.Run("accepted", func(t *testing.T) {
		for _, env := range []map[string]string{
			{"SUPERAGENT_LOG_LEVEL": "DEBUG"}, {"SUPERAGENT_LOG_LEVEL": "warn"},
			{"SUPERAGENT_ADMIN_TOKEN": "0123456789abcdef"},
			{"SUPERAGENT_FEISHU_ENCRYPT_KEY": "k", "SUPERAGENT_FEISHU_VERIFICATION_TOKEN": "v"},
			{"SUPERAGENT_FEISHU_MODE": "longconn", "SUPERAGENT_FEISHU_ENCRYPT_KEY": "k"},
			{"SUPERAGENT_DATA_DIR": filepath.Join(data, "data"), "SUPERAGENT_SANDBOX_READONLY": filepath.Join(data, "data-tools") + ",/usr/local/go"},
		} {
			_, err := loadConfig(envOf(env))
			require.NoError(t, err, "%v", env)
		}
	})
}

// One start names every bad setting, not only the first.
func TestLoadConfigListsEveryProblem(t *testing.T) {
	_, err := loadConfig(envOf(map[string]string{
		"SUPERAGENT_ADDR": "8080", "SUPERAGENT_LOG_LEVEL": "debug+100",
		"SUPERAGENT_ADMIN_TOKEN": strings.Repeat(" ", 16), "SUPERAGENT_FEISHU_ENCRYPT_KEY": "encrypt-key",
	}))
	require.Error(t, err)
	for _, name := range []string{"SUPERAGENT_ADDR:", "SUPERAGENT_LOG_LEVEL:", "SUPERAGENT_ADMIN_TOKEN:", "SUPERAGENT_FEISHU_VERIFICATION_TOKEN:"} {
		require.Contains(t, err.Error(), name)
	}
	require.NotContains(t, err.Error(), "\n", "one line")
	var setting *settingError
	require.ErrorAs(t, err, &setting)
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return wd
}

func TestLoadConfigReadsSandboxLimits(t *testing.T) {
	c, err := loadConfig(envOf(map[string]string{
		"SUPERAGENT_SANDBOX_CPU_SECONDS": "60", "SUPERAGENT_SANDBOX_PROCESSES": "200",
		"SUPERAGENT_SANDBOX_MEMORY": "512MiB", "SUPERAGENT_SANDBOX_DISK": "4GiB",
		"SUPERAGENT_SETUP_TIMEOUT": "20m", "SUPERAGENT_SETUP_DISK": "1GiB",
		"SUPERAGENT_SECRETS_KEY": strings.Repeat("ab", 32), "SUPERAGENT_MCP_TIMEOUT": "90s",
	}))
	require.NoError(t, err)
	require.Equal(t, 20*time.Minute, c.SetupTimeout)
	require.Equal(t, 90*time.Second, c.MCPTimeout)
	require.Equal(t, int64(1<<30), c.SetupDisk)
	require.NotNil(t, c.secretsBox)
	require.Contains(t, c.secrets(), strings.Repeat("ab", 32), "the key is known to the scrubber")
	require.Equal(t, 60, c.SandboxCPUSeconds)
	require.Equal(t, 200, c.SandboxProcesses)
	require.Equal(t, int64(512<<20), c.SandboxMemory)
	require.Equal(t, int64(4<<30), c.SandboxDisk)
	c, err = loadConfig(envOf(nil))
	require.NoError(t, err)
	require.Zero(t, c.SandboxCPUSeconds+c.SandboxProcesses, "zero means the workspace package's default")
	require.Equal(t, executor.DefaultMCPTimeout, c.MCPTimeout)
}

func TestLoadConfigReadsPrivateKeyFromTextOrPath(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pemText := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	path := filepath.Join(t.TempDir(), "app.pem")
	require.NoError(t, os.WriteFile(path, pemText, 0o600))

	for _, v := range []string{string(pemText), path} {
		c, err := loadConfig(envOf(map[string]string{"SUPERAGENT_GITHUB_PRIVATE_KEY": v}))
		require.NoError(t, err)
		require.Equal(t, pemText, c.GitHubPrivateKeyPEM)
		require.Contains(t, c.secrets(), string(pemText), "the key is known to the scrubber")
	}
}

func TestAdminTokenGeneratedOnceAndKeptPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var out bytes.Buffer
	tok, err := ensureAdminToken("", dir, &out)
	require.NoError(t, err)
	require.Len(t, tok, 64)
	require.Equal(t, 1, strings.Count(out.String(), tok), "printed once")

	info, err := os.Stat(filepath.Join(dir, adminTokenFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	out.Reset()
	again, err := ensureAdminToken("", dir, &out)
	require.NoError(t, err)
	require.Equal(t, tok, again)
	require.Empty(t, out.String(), "not printed on later starts")

	configured, err := ensureAdminToken("configured-token-123456", dir, &out)
	require.NoError(t, err)
	require.Equal(t, "configured-token-123456", configured)
}

func TestRunUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(nil, envOf(nil), &stdout, &stderr))
	require.Contains(t, stderr.String(), "Usage:")
	stderr.Reset()
	require.Equal(t, 2, run([]string{"fly"}, envOf(nil), &stdout, &stderr))
	require.Contains(t, stderr.String(), `unknown command "fly"`)
	require.Equal(t, 0, run([]string{"version"}, envOf(nil), &stdout, &stderr))
	require.True(t, strings.HasPrefix(stdout.String(), "superagent "))
}

func TestLogsNeverCarryConfiguredSecrets(t *testing.T) {
	c, err := loadConfig(envOf(map[string]string{
		"SUPERAGENT_GITHUB_WEBHOOK_SECRET": "whsec-0123456789abcdef",
		"SUPERAGENT_MODEL_API_KEY":         "sk-live-abcdefghijklmnop",
	}))
	require.NoError(t, err)
	var out bytes.Buffer
	logger := newLogger(&out, c, slog.LevelInfo)
	logger.Info("calling the model", "url", "https://x/?key=sk-live-abcdefghijklmnop", "err", errors.New("bad secret whsec-0123456789abcdef"))
	require.NotContains(t, out.String(), "sk-live-abcdefghijklmnop")
	require.NotContains(t, out.String(), "whsec-0123456789abcdef")
	require.Contains(t, out.String(), "[REDACTED]")
}

// Help only prints help: every command's -h or --help exits 0 with its
// usage on stdout, before any configuration is read, and leaves the working
// directory as it was (no data dir, no database, no token).
func TestHelpHasNoSideEffects(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{
		{"serve", "--help"}, {"worker", "-h"}, {"migrate", "--help"}, {"doctor", "--help"},
		{"prompts", "--help"}, {"prompts", "export", "-h"}, {"setup", "--help"}, {"setup", "github", "--help"},
		{"healthcheck", "--help"}, {"worker", "--metrics-addr", "127.0.0.1:1", "-h"},
		{"--help"}, {"help"},
	} {
		var stdout, stderr bytes.Buffer
		// A configuration that would fail to load shows help comes first.
		code := run(args, envOf(map[string]string{"SUPERAGENT_LOG_LEVEL": "loud"}), &stdout, &stderr)
		require.Equal(t, 0, code, "%v: %s", args, stderr.String())
		require.Contains(t, stdout.String(), "Usage:", "%v", args)
		require.Empty(t, stderr.String(), "%v", args)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "help left files behind")
}

func TestLoadConfigReadsGitHubWritePacing(t *testing.T) {
	c, err := loadConfig(envOf(map[string]string{"SUPERAGENT_GITHUB_WRITES_PER_MINUTE": "30", "SUPERAGENT_GITHUB_WRITES_PER_HOUR": "5000"}))
	require.NoError(t, err)
	require.Equal(t, 30, c.GitHubWritesPerMinute)
	require.Equal(t, 5000, c.GitHubWritesPerHour)
	c, err = loadConfig(envOf(nil))
	require.NoError(t, err)
	require.Zero(t, c.GitHubWritesPerMinute+c.GitHubWritesPerHour, "zero means GitHub's documented 80 a minute and 500 an hour")
}
