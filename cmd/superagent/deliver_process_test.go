package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
)

// deliverRun runs `superagent deliver` with env and returns its exit code,
// stdout and stderr.
func deliverRun(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	p := start(t, "deliver", env, "deliver", args...)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatal("deliver did not end")
	}
	code := 0
	if exit := (*exec.ExitError)(nil); p.err != nil {
		require.ErrorAs(t, p.err, &exit)
		code = exit.ExitCode()
	}
	return code, p.stdout.String(), p.stderr.String()
}

// TestDeliverSignsAndSendsPayloads: `superagent deliver` sends a GitHub
// payload file signed with the service's own webhook secret (read from
// the same settings), guessing its event, and a Feishu event encrypted
// and signed with the Encrypt Key, its missing token and app id filled in
// from the settings: the running service accepts and stores both, and
// refuses a delivery signed with the wrong secret.
func TestDeliverSignsAndSendsPayloads(t *testing.T) {
	t.Parallel()
	databases(t, func(t *testing.T, dbURL string) {
		fs := fakefeishu.New(t)
		env := map[string]string{
			"SUPERAGENT_ADDR":                      freeAddr(t),
			"SUPERAGENT_DATA_DIR":                  t.TempDir(),
			"SUPERAGENT_DATABASE_URL":              dbURL,
			"SUPERAGENT_ADMIN_TOKEN":               "deliver-admin-token-0123456789",
			"SUPERAGENT_GITHUB_WEBHOOK_SECRET":     "deliver-webhook-secret",
			"SUPERAGENT_FEISHU_APP_ID":             fakefeishu.AppID,
			"SUPERAGENT_FEISHU_APP_SECRET":         "deliver-app-secret",
			"SUPERAGENT_FEISHU_VERIFICATION_TOKEN": "deliver-verification-token",
			"SUPERAGENT_FEISHU_ENCRYPT_KEY":        "deliver-encrypt-key",
			"SUPERAGENT_FEISHU_BASE_URL":           fs.URL,
		}
		p := start(t, "serve", env, "serve")
		p.waitHTTP("/readyz", 30*time.Second)

		// GitHub: the event is guessed from the payload; the URL comes
		// from SUPERAGENT_ADDR.
		code, out, errs := deliverRun(t, env, filepath.Join("testdata", "issue_comment.created.json"))
		require.Equal(t, 0, code, "%s\n%s", out, errs)
		require.Contains(t, out, "/webhooks/github 202 Accepted")

		code, out, _ = deliverRun(t, env, "-secret", "not-the-secret", "-url", "http://"+p.addr, filepath.Join("testdata", "issue_comment.created.json"))
		require.Equal(t, 1, code)
		require.Contains(t, out, "401")

		// Feishu: the fixture's token and app id are left out, and the
		// settings fill them in.
		raw, err := os.ReadFile(filepath.Join("..", "..", "internal", "feishu", "testdata", "im.message.receive_v1.p2p.json"))
		require.NoError(t, err)
		var event map[string]any
		require.NoError(t, json.Unmarshal(raw, &event))
		header := event["header"].(map[string]any)
		delete(header, "token")
		delete(header, "app_id")
		header["event_id"] = "deliver-feishu-event-1"
		file := filepath.Join(t.TempDir(), "message.json")
		b, err := json.Marshal(event)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(file, b, 0o600))
		code, out, errs = deliverRun(t, env, "-url", "http://"+p.addr, file)
		require.Equal(t, 0, code, "%s\n%s", out, errs)
		require.Contains(t, out, "/webhooks/feishu 200 OK")

		d := openDB(t, dbURL)
		stored := func(source, event string) int {
			var n int
			require.NoError(t, d.QueryRow(context.Background(), `SELECT COUNT(*) FROM deliveries WHERE source = $1 AND event = $2`, source, event).Scan(&n))
			return n
		}
		require.Equal(t, 1, stored("feishu", "im.message.receive_v1"), "the Feishu event is stored")
		require.Equal(t, 1, stored("github", "issue_comment"), "the signed GitHub delivery is stored once; the badly signed one is not")

		// A URL check answers with its challenge.
		check := filepath.Join(t.TempDir(), "check.json")
		require.NoError(t, os.WriteFile(check, []byte(`{"challenge":"deliver-challenge","type":"url_verification"}`), 0o600))
		code, out, _ = deliverRun(t, env, "-url", "http://"+p.addr, check)
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "deliver-challenge")
		require.False(t, strings.Contains(out+p.stderr.String(), "deliver-encrypt-key"), "the key is never printed")
	})
}
