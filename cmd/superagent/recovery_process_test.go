package main

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// TestKilledExecutorResumesOnAnotherProcess kills the process whose
// Executor is waiting for the model, on a serve and a worker sharing one
// PostgreSQL, and measures how long the other process takes to carry the
// Ticket on: from the SIGKILL to its first model request. Every process
// watches the leases itself, so this does not wait for River to elect a
// new leader. The figure is logged, not asserted (see docs/benchmarks.md).
func TestKilledExecutorResumesOnAnotherProcess(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	dbURL := postgresURL(t)
	gh, _ := typoRepo(t)

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
	env := serviceEnv(t, dbURL, gh, model, secret, token)
	env["SUPERAGENT_EXECUTOR_LEASE"] = lease.String()
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
