package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

var checkpointedHead = regexp.MustCompile(`"msg":"work checkpointed".*"head":"([0-9a-f]{40})"`)

// TestUnpushedCommitSurvivesTheMachine kills the process whose Executor
// has committed the fix but not pushed it (its model request for the push
// hangs), and lets another machine finish the Ticket: the pull request's
// branch holds the very commit the killed process made, which reached the
// other machine only through the Ticket's checkpoint ref. On PostgreSQL a
// serve and a worker with their own data directories share the database;
// on SQLite the one process is started again on a fresh data directory
// (its workspace gone) and the same database file.
func TestUnpushedCommitSurvivesTheMachine(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh, bare := typoRepo(t)
		hanging := make(chan struct{})
		var hang sync.Once
		model := fakeopenai.New(t)
		model.Fallback(fakeopenai.Respond(func(req fakeopenai.Request) fakeopenai.Reply {
			if req.Model == "router-model" {
				return router(req)
			}
			reply := readmeFixer(req)
			if len(reply.ToolCalls) == 1 && reply.ToolCalls[0].Name == "git_push" {
				hung := false
				hang.Do(func() { hung = true; close(hanging) })
				if hung {
					return fakeopenai.Reply{Hang: true}
				}
			}
			return reply
		}))

		const secret = "checkpoint-webhook-secret"
		env := map[string]string{
			"SUPERAGENT_ADDR":                  freeAddr(t),
			"SUPERAGENT_DATA_DIR":              t.TempDir(),
			"SUPERAGENT_DATABASE_URL":          dbURL,
			"SUPERAGENT_ADMIN_TOKEN":           "checkpoint-admin-token-0123456789",
			"SUPERAGENT_GITHUB_APP_ID":         fmt.Sprint(gh.AppID),
			"SUPERAGENT_GITHUB_PRIVATE_KEY":    string(gh.PrivateKey()),
			"SUPERAGENT_GITHUB_API_URL":        gh.URL,
			"SUPERAGENT_GITHUB_WEBHOOK_SECRET": secret,
			"SUPERAGENT_MODEL_BASE_URL":        model.URL(),
			"SUPERAGENT_MODEL_API_KEY":         "sk-test-checkpoint-key-0001",
			"SUPERAGENT_MODEL":                 "executor-model",
			"SUPERAGENT_ROUTER_MODEL":          "router-model",
			"SUPERAGENT_ROUTING_DEBOUNCE":      "100ms",
			"SUPERAGENT_EXECUTOR_LEASE":        "3s",
		}
		elsewhere := func() map[string]string {
			other := map[string]string{}
			for k, v := range env {
				other[k] = v
			}
			other["SUPERAGENT_DATA_DIR"] = t.TempDir() // another machine
			return other
		}
		serve := start(t, "serve", env, "serve")
		serve.waitHTTP("/readyz", 30*time.Second)
		var worker *proc
		if strings.HasPrefix(dbURL, "postgres") {
			worker = start(t, "worker", elsewhere(), "worker")
			worker.waitLog(`"msg":"working"`, 30*time.Second)
		}

		installApp(t, serve, secret, "checkpoint-install", dbURL)
		deliverGitHub(t, serve, secret, "issue_comment", "checkpoint-1", commentPayload(t, "@superagent please fix the typo in the README"))
		select {
		case <-hanging:
		case <-time.After(2 * time.Minute):
			t.Fatal("the Executor never reached its push")
		}
		victim := serve
		if worker != nil && !strings.Contains(serve.stderr.String(), `"msg":"executor started"`) {
			victim = worker
		}
		require.Contains(t, victim.stderr.String(), `"msg":"executor started"`)
		heads := checkpointedHead.FindAllStringSubmatch(victim.stderr.String(), -1)
		require.NotEmpty(t, heads, "the victim checkpointed its work")
		commit := heads[len(heads)-1][1]
		const branch = "superagent/ticket-1"
		_, pushed := gh.Branch(t, helloRepo, branch)
		require.False(t, pushed, "the commit was not pushed before the kill")
		require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
		<-victim.done

		survivor := worker
		switch {
		case worker == nil:
			// SQLite: the same binary again, on a machine without the workspace.
			survivor = start(t, "serve again", elsewhere(), "serve")
		case victim == worker:
			survivor = serve
		}
		d := openDB(t, dbURL)
		waitFor(t, 2*time.Minute, "the Ticket to be in review", func() bool {
			var state string
			err := d.QueryRow(context.Background(), "SELECT state FROM tickets ORDER BY id LIMIT 1").Scan(&state)
			return err == nil && state == "in_review"
		})
		prs := gh.PullRequests(helloRepo)
		require.Len(t, prs, 1, "one pull request")
		require.Equal(t, branch, prs[0].Head)
		head, ok := gh.Branch(t, helloRepo, branch)
		require.True(t, ok)
		require.Equal(t, commit, head, "the pull request holds the commit the killed process made")
		readme, err := exec.Command("git", "--git-dir", bare, "show", commit+":README.md").Output()
		require.NoError(t, err)
		require.Contains(t, string(readme), "This project says hello.")
		require.Contains(t, survivor.stderr.String(), `"msg":"work restored"`)
		require.NotContains(t, survivor.stderr.String(), "cloned again")
	})
}
