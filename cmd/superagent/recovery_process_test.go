package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// TestKilledExecutorResumesOnAnotherProcess kills the process whose
// Executor is waiting for the model, on a serve and a worker sharing one
// PostgreSQL, and measures how long the other process takes to carry the
// Ticket on: from the SIGKILL to its first model request. Every process
// watches the leases itself, so this does not wait for River to elect a
// new leader. The figure is logged, not asserted (see docs/benchmarks.md).
func TestKilledExecutorResumesOnAnotherProcess(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("bwrap is not installed")
	}
	dbURL := postgresURL(t)
	gh := fakegithub.New(t)
	gh.AddRepo(t, helloRepo, "main", map[string]string{
		"README.md": "# Hello World\n\nThis projetc says hello.\n",
		"test.sh":   "#!/bin/sh\nif grep -q projetc README.md; then echo 'typo still there'; exit 1; fi\necho ok\n",
	})
	gh.SetPermission(helloRepo, "Codertocat", "write")

	var (
		mu       sync.Mutex
		hung     bool
		requests []time.Time // the Executor's model requests after the hang
	)
	hanging := make(chan struct{})
	model := fakeopenai.New(t)
	model.Fallback(fakeopenai.Respond(func(req fakeopenai.Request) fakeopenai.Reply {
		if req.Model == "router-model" {
			return router(req)
		}
		reply := readmeFixer(req)
		mu.Lock()
		defer mu.Unlock()
		if hung {
			requests = append(requests, time.Now())
			return reply
		}
		if len(reply.ToolCalls) == 1 && reply.ToolCalls[0].Name == "edit_file" {
			hung = true
			close(hanging)
			return fakeopenai.Reply{Hang: true}
		}
		return reply
	}))

	const secret, token, lease = "recovery-webhook-secret", "recovery-admin-token-0123456789", 3 * time.Second
	env := map[string]string{
		"SUPERAGENT_ADDR":                  freeAddr(t),
		"SUPERAGENT_DATA_DIR":              t.TempDir(),
		"SUPERAGENT_DATABASE_URL":          dbURL,
		"SUPERAGENT_ADMIN_TOKEN":           token,
		"SUPERAGENT_GITHUB_APP_ID":         fmt.Sprint(gh.AppID),
		"SUPERAGENT_GITHUB_PRIVATE_KEY":    string(gh.PrivateKey()),
		"SUPERAGENT_GITHUB_API_URL":        gh.URL,
		"SUPERAGENT_GITHUB_WEBHOOK_SECRET": secret,
		"SUPERAGENT_MODEL_BASE_URL":        model.URL(),
		"SUPERAGENT_MODEL_API_KEY":         "sk-test-recovery-key-0001",
		"SUPERAGENT_MODEL":                 "executor-model",
		"SUPERAGENT_ROUTER_MODEL":          "router-model",
		"SUPERAGENT_ROUTING_DEBOUNCE":      "100ms",
		"SUPERAGENT_EXECUTOR_LEASE":        lease.String(),
	}
	serve := start(t, "serve", env, "serve")
	serve.waitHTTP("/readyz", 30*time.Second)
	workerEnv := map[string]string{}
	for k, v := range env {
		workerEnv[k] = v
	}
	workerEnv["SUPERAGENT_DATA_DIR"] = t.TempDir() // another machine
	worker := start(t, "worker", workerEnv, "worker")
	worker.waitLog(`"msg":"working"`, 30*time.Second)

	installApp(t, serve, secret, "recovery-install", dbURL)
	deliverGitHub(t, serve, secret, "issue_comment", "recovery-1", commentPayload(t, "@superagent please fix the typo in the README"))

	select {
	case <-hanging:
	case <-time.After(2 * time.Minute):
		t.Fatal("the Executor never reached its edit")
	}
	victim, survivor := serve, worker
	if !strings.Contains(serve.stderr.String(), `"msg":"executor started"`) {
		victim, survivor = worker, serve
	}
	require.Contains(t, victim.stderr.String(), `"msg":"executor started"`)
	require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	<-victim.done

	waitFor(t, time.Minute, "the other process to carry the Ticket on", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(requests) > 0
	})
	mu.Lock()
	resumed := requests[0].Sub(killed)
	mu.Unlock()
	t.Logf("the %s's Executor was killed; the %s made its next model request %s later (lease %s: %.1f leases)",
		victim.name, survivor.name, resumed.Round(10*time.Millisecond), lease, resumed.Seconds()/lease.Seconds())

	waitFor(t, 2*time.Minute, "the Ticket to be in review", func() bool {
		var state string
		err := openDB(t, dbURL).QueryRow(context.Background(), "SELECT state FROM tickets ORDER BY id LIMIT 1").Scan(&state)
		return err == nil && state == "in_review"
	})
	require.Len(t, gh.PullRequests(helloRepo), 1, "one pull request")
	require.Contains(t, survivor.stderr.String(), "restarting an executor whose process stopped renewing its lease")
}
