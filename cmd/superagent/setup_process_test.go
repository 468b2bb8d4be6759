package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

// apiCall makes an /api request to p with the admin token (none when
// bearer is empty) and returns the status and body.
func apiCall(t *testing.T, p *proc, method, path, body, bearer string) (int, string) {
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

// Through the binary, sandbox on: the repository's setup.sh runs before
// the Executor's first step and installs a tool in /cache; the
// repository's test.sh uses that tool and a secret set over /api. The test
// passes (the value was in its environment), and the value is in neither
// the stored transcript, the model's input nor the process's logs.
func TestRepositorySetupAndSecretThroughTheBinary(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	const value = "tok-BINARY-SECRET-77c1d0"
	sum := sha256.Sum256([]byte(value))
	databases(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		gh.AddRepo(t, helloRepo, "main", map[string]string{
			"README.md": "# Hello World\n\nThis projetc says hello.\n",
			".superagent/setup.sh": "#!/bin/sh\nset -e\nmkdir -p \"$SUPERAGENT_CACHE/bin\"\n" +
				"printf '#!/bin/sh\\necho made-by-setup\\n' > \"$SUPERAGENT_CACHE/bin/hello-tool\"\nchmod +x \"$SUPERAGENT_CACHE/bin/hello-tool\"\n",
			"test.sh": "#!/bin/sh\nhello-tool || exit 1\n" +
				"if [ \"$(printf %s \"$API_TOKEN\" | sha256sum | cut -c1-64)\" != " + hex.EncodeToString(sum[:]) + " ]; then echo 'API_TOKEN is wrong'; exit 1; fi\n" +
				"echo \"token is $API_TOKEN\"\nif grep -q projetc README.md; then echo 'typo still there'; exit 1; fi\necho ok\n",
		})
		gh.SetPermission(helloRepo, "Codertocat", "write")
		model := scriptedModel(t, readmeFixer)
		const secret, token = "setup-webhook-secret", "setup-admin-token-0123456789"
		p, d := serveFor(t, dbURL, gh, model, secret, token, map[string]string{"SUPERAGENT_SECRETS_KEY": strings.Repeat("5a", 32)})
		code, body := apiCall(t, p, "PUT", "/api/repos/"+helloRepo+"/secrets/API_TOKEN", `{"value":"`+value+`"}`, token)
		require.Equal(t, http.StatusNoContent, code, body)

		deliverGitHub(t, p, secret, "issue_comment", "setup-1", commentPayload(t, "@superagent please fix the typo in the README"))
		waitOneInReview(t, p, token)
		code, _ = p.stop(shutdownWithin)
		require.Equal(t, 0, code)

		var ran []string
		for _, r := range model.Requests() {
			for _, m := range r.Messages {
				if m.Role == "tool" && strings.Contains(m.Content, "made-by-setup") {
					ran = append(ran, m.Content)
				}
			}
		}
		require.NotEmpty(t, ran, "test.sh ran")
		require.Regexp(t, `^exit code 0 `, ran[len(ran)-1], "the test passed: it had the tool and the secret")
		require.Contains(t, ran[len(ran)-1], "token is [REDACTED]")

		logs := p.stderr.String() + p.stdout.String()
		var setupLines int
		for _, l := range logLines(t, p.stderr.String()) {
			if l["msg"] == "setup ran" {
				setupLines++
				require.Equal(t, true, l["ok"], "%v", l)
				require.Equal(t, helloRepo, l["repo"])
				require.Positive(t, l["ticket"])
				require.Positive(t, l["session"])
			}
		}
		require.Equal(t, 1, setupLines)
		all := logs
		for _, r := range model.Requests() {
			raw, err := json.Marshal(r.Messages)
			require.NoError(t, err)
			all += string(raw)
		}
		rows, err := d.Query(context.Background(), `SELECT content || reasoning || tool_calls FROM session_messages`)
		require.NoError(t, err)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			all += s
		}
		require.NoError(t, rows.Err())
		rows.Close()
		require.NotContains(t, all, value)
	})
}

// Through the binary: a repository secret and the default setup script are
// set over /api with the admin token; the secret is listed by name only,
// stored sealed, and never logged; without the token nothing changes.
func TestSecretsAPIThroughTheBinary(t *testing.T) {
	t.Parallel()
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
			return apiCall(t, p, method, path, body, bearer)
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
		code, _ = p.stop(shutdownWithin)
		require.Equal(t, 0, code)
		require.NotContains(t, p.stderr.String()+p.stdout.String(), value)
	})
}
