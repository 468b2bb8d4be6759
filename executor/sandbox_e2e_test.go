package executor_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// webhookSecret is a secret the service holds in its environment.
const webhookSecret = "whsec-SANDBOX-PROBE-4242"

// script is a model that makes the given calls one per step, whatever
// they return, then ends its turn.
func callsInOrder(calls ...[2]string) func(fakeopenai.Request) fakeopenai.Reply {
	return func(req fakeopenai.Request) fakeopenai.Reply {
		if n := len(steps(req)); n < len(calls) {
			return call(calls[n][0], calls[n][1])
		}
		return fakeopenai.Text("Done.")
	}
}

func runCall(cmd string) [2]string {
	args, _ := json.Marshal(map[string]any{"command": cmd, "timeout_seconds": 20})
	return [2]string{"run_command", string(args)}
}

// Commands the Executor runs cannot reach what the service holds: its
// environment, its database file, its data directory or the network.
func TestSandboxKeepsTheServiceSecretsOutOfReach(t *testing.T) {
	t.Setenv("SUPERAGENT_GITHUB_WEBHOOK_SECRET", webhookSecret)
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		var dataDir, ghPort string
		probes := func() []string {
			return []string{
				fmt.Sprintf("cat /proc/%d/environ", os.Getpid()),
				"cat /proc/1/environ",
				"env",
				"cat " + filepath.Join(dataDir, "superagent.db"),
				"ls " + dataDir,
				"cat ../../superagent.db",
				"cat ../superagent.db",
				"bash -c 'echo probe > /dev/tcp/127.0.0.1/5432' || sh -c 'exec 3<>/dev/tcp/127.0.0.1/5432'",
				"bash -c 'echo probe > /dev/tcp/127.0.0.1/" + ghPort + "'",
			}
		}
		var calls [][2]string
		e := setup(t, d, func(req fakeopenai.Request) fakeopenai.Reply { return callsInOrder(calls...)(req) })
		dataDir = e.dataDir
		u, err := url.Parse(e.gh.URL)
		require.NoError(t, err)
		ghPort = u.Port()
		for _, p := range probes() {
			calls = append(calls, runCall(p))
		}
		calls = append(calls, [2]string{"read_file", `{"path":"../../superagent.db"}`},
			[2]string{"read_file", `{"path":"` + filepath.Join(dataDir, "superagent.db") + `"}`})
		if _, err := exec.LookPath("bash"); err != nil {
			t.Log("bash is missing: the TCP probes fail for that reason too")
		}
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)

		ss := steps(e.model.Last())
		require.Len(t, ss, len(calls), "every probe ran and the model read its result")
		secrets := []string{webhookSecret, "DATABASE-FILE-SECRET", modelKey, "PRIVATE KEY", "SUPERAGENT_"}
		for i, s := range ss {
			require.Equal(t, calls[i][0], s.name)
			for _, secret := range secrets {
				require.NotContains(t, s.result, secret, "step %d (%s) leaked", i, calls[i][1])
			}
		}
		failed := func(i int) {
			t.Helper()
			require.Regexp(t, `^exit code [1-9][0-9]* `, ss[i].result, "%s should fail", calls[i][1])
		}
		// The test process is outside the sandbox's PID namespace.
		failed(0)
		// PID 1 is the sandbox's own init: its environment is the cleared one.
		require.NotContains(t, ss[1].result, "HOME=/root")
		// The environment is the sandbox's, without the service's variables.
		require.Regexp(t, `^exit code 0 `, ss[2].result)
		require.Contains(t, ss[2].result, "PATH=")
		// The data directory and its database are not in the sandbox.
		failed(3)
		failed(4)
		failed(5)
		failed(6)
		// No network, loopback included: neither the database nor GitHub.
		failed(7)
		failed(8)
		// The file tools refuse paths outside the workspace.
		for _, i := range []int{9, 10} {
			require.True(t, strings.HasPrefix(ss[i].result, "error") || strings.HasPrefix(ss[i].result, "refused"),
				"read_file %s: %q", calls[i][1], ss[i].result)
		}

		// Nothing of it reached the stored transcript or the logs either.
		all := e.transcript(t) + e.logs.String()
		for _, r := range e.model.Requests() {
			all += r.Text()
		}
		for _, secret := range []string{webhookSecret, "DATABASE-FILE-SECRET", modelKey} {
			require.NotContains(t, all, secret)
		}
	})
}

// A FIFO a command makes is refused by the file tools at once, instead of
// holding the call (and the Executor's slot) until the process is killed;
// the Session goes on.
func TestFileToolsRefuseAFIFOACommandMade(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		calls := [][2]string{
			runCall("mkfifo pipe && mkfifo src-pipe.go"),
			{"read_file", `{"path":"pipe"}`},
			{"edit_file", `{"path":"pipe","old_text":"a","new_text":"b"}`},
			{"write_file", `{"path":"pipe","content":"x"}`},
			{"search_code", `{"pattern":"projetc"}`},
			{"read_file", `{"path":"README.md"}`},
		}
		e := setup(t, d, callsInOrder(calls...))
		tk, _ := e.request(t, "@superagent please fix the typo in the README")
		e.run(t, tk.ID)

		ss := steps(e.model.Last())
		require.Len(t, ss, len(calls), "every call returned and the model read its result")
		require.Regexp(t, `^exit code 0 `, ss[0].result)
		for _, s := range ss[1:4] {
			require.Contains(t, s.result, "is a named pipe (FIFO); the file tools only handle regular files", "%s", s.name)
		}
		require.Contains(t, ss[4].result, "README.md:3: This projetc says hello.")
		require.NotContains(t, ss[4].result, "pipe")
		require.Contains(t, ss[5].result, "projetc")
	})
}
