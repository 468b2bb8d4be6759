package main

import (
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A worker started with --metrics-addr serves its metrics and probes (and
// nothing else), and `superagent healthcheck` tells a ready process from
// one that is not there.
func TestWorkerMetricsAndHealthcheck(t *testing.T) {
	t.Parallel()
	databases(t, func(t *testing.T, url string) {
		dataDir := t.TempDir()
		env := map[string]string{
			"SUPERAGENT_ADDR":         freeAddr(t),
			"SUPERAGENT_DATA_DIR":     dataDir,
			"SUPERAGENT_DATABASE_URL": url,
		}
		serve := start(t, "serve", env, "serve")
		serve.waitHTTP("/readyz", 30*time.Second)

		metricsAddr := freeAddr(t)
		worker := start(t, "worker", env, "worker", "--metrics-addr", metricsAddr)
		waitFor(t, 30*time.Second, "the worker's listener", func() bool {
			resp, err := http.Get("http://" + metricsAddr + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		get := func(path string) (int, string) {
			resp, err := http.Get("http://" + metricsAddr + path)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp.StatusCode, string(b)
		}
		code, body := get("/metrics")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `superagent_tickets{state="open"} 0`, "the service's metrics, read from the database")
		require.Contains(t, body, "go_goroutines")
		code, _ = get("/api/tickets")
		require.Equal(t, http.StatusNotFound, code, "a worker serves no API")
		code, _ = get("/admin/")
		require.Equal(t, http.StatusNotFound, code, "nor the panel")

		check := func(args ...string) (int, string) {
			cmd := exec.Command(binPath, append([]string{"healthcheck"}, args...)...)
			cmd.Env = []string{"SUPERAGENT_ADDR=" + env["SUPERAGENT_ADDR"]}
			out, err := cmd.CombinedOutput()
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				return ee.ExitCode(), string(out)
			}
			require.NoError(t, err)
			return 0, string(out)
		}
		code, out := check()
		require.Equal(t, 0, code, out)
		require.Empty(t, out, "a ready process: no output")
		code, out = check("--addr", metricsAddr)
		require.Equal(t, 0, code, out)

		code, _ = worker.stop(10 * time.Second)
		require.Equal(t, 0, code)
		code, out = check("--addr", metricsAddr, "--timeout", "2s")
		require.Equal(t, 1, code, "nothing listens any more")
		require.True(t, strings.HasPrefix(out, "superagent healthcheck: http://"+metricsAddr+"/readyz"), out)
		code, out = check("--addr", "nonsense")
		require.Equal(t, 2, code, out)

		code, _ = serve.stop(10 * time.Second)
		require.Equal(t, 0, code)
	})
}
