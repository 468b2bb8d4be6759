package executor_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/secret"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/tickets"
)

// pushFiles commits files onto branch main of the bare repository.
func pushFiles(t *testing.T, bare string, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git("clone", "--quiet", bare, ".")
	for name, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755))
		require.NoError(t, os.Chmod(filepath.Join(dir, name), 0o755))
	}
	git("add", "-A")
	git("commit", "--quiet", "-m", "add files")
	git("push", "--quiet", "origin", "HEAD:main")
}

// secondTicket makes a second request, on issue 2, a Ticket.
func (e *env) secondTicket(t *testing.T) tickets.Ticket {
	t.Helper()
	e.gh.AddIssue(repo, 2, "Another typo", "Please check the README again.", "alice")
	c := e.admit(t, 2, "alice", "@superagent please look at the README again")
	return e.ticketOf(t, c, "Check the README again")
}

// lastResults are the results of the run_command calls the model read in
// its last request.
func lastResults(e *env) []string {
	var out []string
	for _, s := range steps(e.model.Last()) {
		if s.name == "run_command" {
			out = append(out, s.result)
		}
	}
	return out
}

// The repository's .superagent/setup.sh runs for its first Ticket, in the
// sandbox with the cache writable; the second Ticket of the repository
// starts warm: setup does not run again, and its command finds the tool
// setup installed in the cache, read-only, with the dependency caches'
// variables pointing into it.
func TestSetupRunsOnceAndTheSecondTicketStartsWarm(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		probe := runCall(`hello-tool; echo "gomodcache=$GOMODCACHE npm=$npm_config_cache"; ` +
			`(touch /cache/x 2>/dev/null && echo CACHE-WRITABLE) || echo cache-read-only; ls $GOMODCACHE/example.com`)
		e := setup(t, d, callsInOrder(probe))
		pushFiles(t, e.bare, map[string]string{".superagent/setup.sh": "#!/bin/sh\nset -e\n" +
			"test -f /workspace/README.md\n" +
			"(touch /workspace/planted 2>/dev/null && echo WORKSPACE-WRITABLE) || echo workspace-read-only\n" +
			"mkdir -p \"$SUPERAGENT_CACHE/bin\" \"$GOMODCACHE/example.com/dep@v1.0.0\"\n" +
			"printf '#!/bin/sh\\necho made-by-setup\\n' > \"$SUPERAGENT_CACHE/bin/hello-tool\"\n" +
			"chmod +x \"$SUPERAGENT_CACHE/bin/hello-tool\"\necho setup-done\n"})

		first, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, first.ID)
		out := lastResults(e)
		require.Len(t, out, 1)
		require.Regexp(t, `^exit code 0 `, out[0], "%s", e.model.Last().Text())
		require.Contains(t, out[0], "made-by-setup")
		require.Contains(t, out[0], "gomodcache=/build-cache/go-mod npm=/build-cache/npm")
		require.Contains(t, out[0], "cache-read-only")
		require.Contains(t, out[0], "dep@v1.0.0")
		require.Contains(t, e.logs.String(), "setup ran")
		require.NotContains(t, e.logs.String(), "setup cache hit")
		o, ok, err := repoenv.New(d, nil, nil).Ticket(context.Background(), d, first.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, o.OK, "%+v", o)
		require.False(t, o.Cached)
		require.Contains(t, o.Tail, "workspace-read-only")
		require.Contains(t, o.Tail, "setup-done")

		second := e.secondTicket(t)
		e.run(t, second.ID)
		out = lastResults(e)
		require.Len(t, out, 1)
		require.Contains(t, out[0], "made-by-setup", "the second Ticket's command sees what setup made")
		require.Contains(t, out[0], "cache-read-only")
		require.Equal(t, 1, strings.Count(e.logs.String(), "setup ran"), "setup ran once: %s", e.logs.String())
		require.Regexp(t, `setup cache hit" ticket=`+strconv.FormatInt(second.ID, 10)+` session=\d+ repo=octo/hello`, e.logs.String())
		o, ok, err = repoenv.New(d, nil, nil).Ticket(context.Background(), d, second.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, o.OK && o.Cached, "%+v", o)
		// The Session is told, in its Environment.
		require.Contains(t, e.model.Last().Text(), "succeeded earlier for this repository; its cache was reused")

		// A changed script is a new key: it runs again.
		pushFiles(t, e.bare, map[string]string{".superagent/setup.sh": "#!/bin/sh\necho version-two\n"})
		third := e.secondTicket(t)
		e.run(t, third.ID)
		require.Equal(t, 2, strings.Count(e.logs.String(), "setup ran"))
		require.NotContains(t, lastResults(e)[0], "made-by-setup", "the new script's cache has no tool")
	})
}

// A failing setup (here the team's default, as the repository has no
// script) is reported to the Session with the end of its output, scrubbed,
// and recorded for the Ticket page; the Session still runs, without a
// cache.
func TestFailingSetupIsReportedAndTheSessionRuns(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, callsInOrder(runCall("echo still-working; ls /cache || echo no-cache")))
		e.repoEnv = repoenv.New(d, testBox(t), nil)
		e.x = e.executor(t)
		ctx := context.Background()
		require.NoError(t, e.repoEnv.SetSecret(ctx, d, repo, "API_TOKEN", apiToken, "admin", nil))
		require.NoError(t, e.repoEnv.SetDefault(ctx, d, "echo fetching dependencies\necho \"cannot reach the registry with $API_TOKEN\" >&2\nexit 3\n", "admin"))

		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)

		out := lastResults(e)
		require.Len(t, out, 1, "the Session ran its step after the failed setup")
		require.Contains(t, out[0], "still-working")
		require.Contains(t, out[0], "no-cache")
		text := e.model.Last().Text()
		require.Contains(t, text, "host: the team's default setup script failed: exit code 3")
		require.Contains(t, text, "cannot reach the registry with [REDACTED]")
		o, ok, err := e.repoEnv.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.False(t, o.OK)
		require.Equal(t, repoenv.SourceDefault, o.Source)
		require.Equal(t, 3, o.ExitCode)
		require.Contains(t, o.Tail, "fetching dependencies")
		require.Regexp(t, `setup ran" ticket=\d+ session=\d+ repo=octo/hello source=default .* ok=false exit_code=3`, e.logs.String())
		requireNowhere(t, e, apiToken)

		// Not tried again for the same Ticket and script.
		e.run(t, tk.ID)
		require.Equal(t, 1, strings.Count(e.logs.String(), "setup ran"))
	})
}

const apiToken = "tok-REPO-SECRET-93f1c2"

func testBox(t *testing.T) *secret.Box {
	t.Helper()
	b, err := secret.NewBox([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	return b
}

// requireNowhere checks that value reached neither the stored
// transcript, the model's input nor the logs, in any encoding the
// scrubber knows.
func requireNowhere(t *testing.T, e *env, value string) {
	t.Helper()
	all := e.transcript(t) + e.logs.String()
	for _, r := range e.model.Requests() {
		all += r.Text()
	}
	for _, form := range []string{value, base64.StdEncoding.EncodeToString([]byte(value))[:16]} {
		require.NotContains(t, all, form)
	}
}

// The repository's test.sh uses a secret set for it: the value is in the
// command's environment, so the test passes, and it is scrubbed from the
// output, so neither the transcript, the model's input nor the logs hold
// it.
func TestRepositorySecretReachesTheTestButNothingElse(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		sum := sha256.Sum256([]byte(apiToken))
		e := setup(t, d, callsInOrder(runCall("./test.sh"), runCall("env; printf %s \"$API_TOKEN\" | base64")))
		pushFiles(t, e.bare, map[string]string{"test.sh": "#!/bin/sh\n" +
			"if [ \"$(printf %s \"$API_TOKEN\" | sha256sum | cut -c1-64)\" != " + hex.EncodeToString(sum[:]) + " ]; then echo 'API_TOKEN is wrong'; exit 1; fi\n" +
			"echo \"token is $API_TOKEN\"\necho ok\n"})
		e.repoEnv = repoenv.New(d, testBox(t), nil)
		e.x = e.executor(t)
		ctx := context.Background()
		require.NoError(t, e.repoEnv.SetSecret(ctx, d, repo, "API_TOKEN", apiToken, "admin", nil))
		// Stored sealed.
		var sealed string
		require.NoError(t, d.QueryRow(ctx, `SELECT sealed FROM repo_secrets WHERE name = 'API_TOKEN'`).Scan(&sealed))
		require.NotContains(t, sealed, apiToken)

		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)

		out := lastResults(e)
		require.Len(t, out, 2)
		require.Regexp(t, `^exit code 0 `, out[0], "the test saw the secret")
		require.Contains(t, out[0], "token is [REDACTED]")
		require.Contains(t, out[1], "API_TOKEN=[REDACTED]")
		require.Contains(t, e.model.Last().Text(), "API_TOKEN (in every command's environment for the repository's tests")
		requireNowhere(t, e, apiToken)
	})
}
