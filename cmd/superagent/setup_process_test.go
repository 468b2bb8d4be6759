package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
)

// Through the binary: a repository secret and the default setup script are
// set over /api with the admin token; the secret is listed by name only,
// stored sealed, and never logged; without the token nothing changes.
func TestSecretsAPIThroughTheBinary(t *testing.T) {
	const token = "admin-token-for-the-setup-test"
	const value = "tok-PROCESS-SECRET-4410aa"
	databases(t, func(t *testing.T, url string) {
		p := start(t, "serve", map[string]string{
			"SUPERAGENT_ADDR": freeAddr(t), "SUPERAGENT_DATA_DIR": t.TempDir(), "SUPERAGENT_DATABASE_URL": url,
			"SUPERAGENT_ADMIN_TOKEN": token, "SUPERAGENT_SECRETS_KEY": strings.Repeat("5a", 32),
		}, "serve")
		p.waitHTTP("/readyz", 30*time.Second)
		call := func(method, path, body, bearer string) (int, string) {
			t.Helper()
			req, err := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			if bearer != "" {
				req.Header.Set("Authorization", "Bearer "+bearer)
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			return res.StatusCode, string(b)
		}
		code, _ := call("PUT", "/api/repos/octo/hello/secrets/API_TOKEN", `{"value":"`+value+`"}`, "")
		require.Equal(t, http.StatusUnauthorized, code)
		code, body := call("PUT", "/api/repos/octo/hello/secrets/API_TOKEN", `{"value":"`+value+`"}`, token)
		require.Equal(t, http.StatusNoContent, code, body)
		code, body = call("GET", "/api/repos/octo/hello/secrets", "", token)
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `"name":"API_TOKEN"`)
		require.NotContains(t, body, value)
		code, body = call("PUT", "/api/setup/default", `{"script":"echo warm\n"}`, token)
		require.Equal(t, http.StatusOK, code, body)

		d, err := db.Open(context.Background(), url, db.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		var sealed string
		require.NoError(t, d.QueryRow(context.Background(), `SELECT sealed FROM repo_secrets WHERE repo = 'octo/hello'`).Scan(&sealed))
		require.NotContains(t, sealed, value)
		code, _ = p.stop(10 * time.Second)
		require.Equal(t, 0, code)
		require.NotContains(t, p.stderr.String()+p.stdout.String(), value)
	})
}
