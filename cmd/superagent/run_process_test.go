package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// localTypoRepo is a git checkout on branch main with a typo in its README
// and a test that fails while the typo is there.
func localTypoRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hello")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Hello World\n\nThis projetc says hello.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "test.sh"), []byte("#!/bin/sh\nif grep -q projetc README.md; then echo 'typo still there'; exit 1; fi\necho ok\n"), 0o755))
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "."},
		{"-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-q", "-m", "first"},
	} {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	return dir
}

// localFixer plays the Executor of a local run: it fixes the README,
// tests, commits, pushes and reports done, deciding each step from the
// results it has read.
func localFixer(req fakeopenai.Request) fakeopenai.Reply {
	done := map[string]int{}
	byID := map[string]string{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			byID[c.ID] = c.Name
		}
		if m.Role == "tool" && !strings.HasPrefix(m.Content, "refused") && !strings.HasPrefix(m.Content, "error") {
			done[byID[m.ToolCallID]]++
		}
	}
	call := func(name, args string) fakeopenai.Reply {
		return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("", name, args)}, Usage: fakeopenai.UsageOpenAI(3000, 0, 100)}
	}
	switch {
	case done["edit_file"] == 0:
		return call("edit_file", `{"path":"README.md","old_text":"projetc","new_text":"project"}`)
	case done["run_command"] == 0:
		return call("run_command", `{"command":"sh test.sh","timeout_seconds":30}`)
	case done["git_commit"] == 0:
		return call("git_commit", `{"message":"Fix a typo in the README"}`)
	case done["git_push"] == 0:
		return call("git_push", `{}`)
	case done["report"] == 0:
		return call("report", `{"state":"done","summary":"Fixed the README typo on the Ticket's branch; verified with sh test.sh, which passes."}`)
	}
	return fakeopenai.Text("Done.")
}

// TestRunWorksATicketOnALocalCheckout: `superagent run` on a local
// repository, with no GitHub App, works one Ticket with the scripted
// model in the sandbox: the Executor is offered no GitHub tool, its push
// lands as a branch of the checkout with the change, the Report is
// printed, and the Ticket's page shows the transcript when the service
// serves the same database.
func TestRunWorksATicketOnALocalCheckout(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		dir := localTypoRepo(t)
		model := fakeopenai.New(t)
		model.Fallback(fakeopenai.Respond(localFixer))
		const token = "run-admin-token-0123456789"
		env := map[string]string{
			"SUPERAGENT_ADDR":           freeAddr(t),
			"SUPERAGENT_DATA_DIR":       t.TempDir(),
			"SUPERAGENT_DATABASE_URL":   dbURL,
			"SUPERAGENT_ADMIN_TOKEN":    token,
			"SUPERAGENT_MODEL_BASE_URL": model.URL(),
			"SUPERAGENT_MODEL":          "executor-model",
		}
		run := start(t, "run", env, "run", "-repo", dir, "Fix the typo in the README\n\nIt says projetc.")
		select {
		case <-run.done:
		case <-time.After(3 * time.Minute):
			t.Fatalf("the run did not end; model requests: %d", len(model.Requests()))
		}
		require.NoError(t, run.err, "exit 0: the Ticket is done\n%s\n%s", run.stdout, tail(run.stderr.String(), 30))
		out := run.stdout.String()
		require.Contains(t, out, "Ticket 1: done")
		require.Contains(t, out, "Branch superagent/ticket-1 in "+dir+": ")
		require.Contains(t, out, "Report (done):\nFixed the README typo")
		require.Contains(t, out, "the Ticket's budget: 10,000,000 tokens.", "the usage line states the default budget")

		readme, err := exec.Command("git", "-C", dir, "show", "superagent/ticket-1:README.md").CombinedOutput()
		require.NoError(t, err, string(readme))
		require.Contains(t, string(readme), "This project says hello.")
		head, err := exec.Command("git", "-C", dir, "rev-parse", "--abbrev-ref", "HEAD").Output()
		require.NoError(t, err)
		require.Equal(t, "main", strings.TrimSpace(string(head)), "the person's checkout stays on its branch")
		refs, err := exec.Command("git", "-C", dir, "for-each-ref", "--format=%(refname)").Output()
		require.NoError(t, err)
		require.Equal(t, "refs/heads/main\nrefs/heads/superagent/ticket-1\n", string(refs), "no hidden checkpoint ref in the person's repository")

		first := model.Requests()[0]
		require.Contains(t, first.Text(), "It says projetc.", "the task reaches the model")
		tools := first.ToolNames()
		require.Contains(t, tools, "git_push")
		for _, gh := range []string{"pr_open", "pr_update", "github_read", "reply", "review_reply"} {
			require.NotContains(t, tools, gh, "a local run offers no GitHub tool")
		}

		serve := start(t, "serve", env, "serve")
		serve.waitHTTP("/readyz", 30*time.Second)
		page := panelPage(t, "http://"+serve.addr, token, "/admin/tickets/1")
		require.Contains(t, page, "Fix the typo in the README")
		require.Contains(t, page, "git_push")
		require.Contains(t, page, "10,000,000 tokens (the default); spent ")
	})
}

// TestRunRefusesBadInputAndHelpOnlyHelps: --help prints the help and
// touches nothing; a directory that is not a checkout, a missing task or
// model, and an unreadable budget are each named, with exit status 2.
func TestRunRefusesBadInputAndHelpOnlyHelps(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	env := map[string]string{"SUPERAGENT_DATA_DIR": data, "SUPERAGENT_DATABASE_URL": "sqlite://" + filepath.Join(data, "db.sqlite")}
	help := start(t, "run-help", env, "run", "--help")
	<-help.done
	require.NoError(t, help.err)
	require.Contains(t, help.stdout.String(), "superagent run -repo DIR")
	_, err := os.Stat(filepath.Join(data, "db.sqlite"))
	require.ErrorIs(t, err, os.ErrNotExist, "help opens no database")

	bad := start(t, "run-bad", env, "run", "-repo", t.TempDir(), "-budget", "lots")
	<-bad.done
	var exit *exec.ExitError
	require.ErrorAs(t, bad.err, &exit)
	require.Equal(t, 2, exit.ExitCode())
	msg := bad.stderr.String()
	for _, want := range []string{"say what to do", "no model is configured", `-budget "lots"`, "is not a git checkout"} {
		require.Contains(t, msg, want)
	}
	_, err = os.Stat(filepath.Join(data, "db.sqlite"))
	require.ErrorIs(t, err, os.ErrNotExist, "bad input changes nothing")
}
