package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
)

// superagent prompts try, on three recorded requests against the fake
// model: three pairs of answers, the prompt diff of each, and not one row
// written anywhere.
func TestPromptsTry(t *testing.T) {
	t.Parallel()
	databases(t, func(t *testing.T, url string) {
		ctx := context.Background()
		srv := fakeopenai.New(t)
		env := map[string]string{
			"SUPERAGENT_DATABASE_URL": url, "SUPERAGENT_DATA_DIR": t.TempDir(),
			"SUPERAGENT_MODEL_BASE_URL": srv.URL(), "SUPERAGENT_MODEL": "fake-model", "SUPERAGENT_MODEL_API_KEY": "sk-test-0123456789abcdefXYZ",
			"SUPERAGENT_MODEL_PRICE": "2,0.5,8",
		}
		runCmd := commandRunner(env)
		dir := filepath.Join(t.TempDir(), "draft")
		code, _, stderr := runCmd("prompts", "export", dir)
		require.Equal(t, 0, code, stderr)

		// Three model requests, recorded as the service records them: the
		// main Session routes with a tool call, then an Executor works.
		d, err := db.Open(ctx, url, db.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		prompts, err := promptparts.New(promptparts.Config{}, d)
		require.NoError(t, err)
		client, err := model.New(model.Config{BaseURL: srv.URL(), Model: "fake-model", Prices: map[string]model.Price{"fake-model": {Input: 2, CachedInput: 0.5, Output: 8}}})
		require.NoError(t, err)
		rt := session.New(session.Config{}, d, client, session.PromptFunc(func(ctx context.Context, s *session.Session) (string, int64, error) {
			return prompts.Assemble(ctx, promptparts.Input{Role: promptparts.Role(s.Role), Environment: []promptparts.Var{{Name: "GitHub App", Value: "@superagent"}}})
		}), nil, nil)
		tools, err := session.NewRegistry(session.Spec[map[string]any]{Name: "orchestrator_read", Description: "reads",
			Handler: func(context.Context, session.Call, map[string]any) (string, error) { return "no tickets", nil }}.Tool())
		require.NoError(t, err)
		var ids []string
		for _, c := range []struct {
			role    session.Role
			ticket  int64
			text    string
			replies []fakeopenai.Reply
		}{
			{session.RoleMain, 0, "card 1 arrived", []fakeopenai.Reply{fakeopenai.Calls(fakeopenai.Call("r1", "orchestrator_read", `{"what":"tickets"}`)), fakeopenai.Text("routed card 1")}},
			{session.RoleExecutor, 4, "fix the typo in README.md", []fakeopenai.Reply{fakeopenai.Text("fixed the typo")}},
		} {
			srv.Push(c.replies...)
			s, err := rt.Create(ctx, d, c.role, c.ticket)
			require.NoError(t, err)
			_, err = rt.Append(ctx, d, s.ID, c.text)
			require.NoError(t, err)
			_, err = rt.Run(ctx, s.ID, tools, session.RunOptions{})
			require.NoError(t, err)
			reqs, err := rt.Store().Requests(ctx, d, s.ID)
			require.NoError(t, err)
			for _, r := range reqs {
				ids = append(ids, strconv.FormatInt(r.ID, 10))
			}
		}
		require.Len(t, ids, 3)

		// The draft: replies in one sentence.
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "parts", "runtime"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "parts", "runtime", "replies.md"), []byte("# Replies\n\nAnswer in one sentence.\n"), 0o644))
		srv.Push(fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{fakeopenai.Call("d1", "orchestrator_read", `{"what":"threads"}`)}, Usage: fakeopenai.UsageOpenAI(2000, 500, 40)},
			fakeopenai.Text("routed card 1, briefly"), fakeopenai.Text("fixed, briefly"))

		before := dbtest.RowCounts(t, d)
		code, out, stderr := runCmd("prompts", "try", "-dir", dir, "-request", strings.Join(ids, ","))
		require.Equal(t, 0, code, stderr)
		require.Equal(t, before, dbtest.RowCounts(t, d), "try wrote no row in any table")

		require.Equal(t, 3, strings.Count(out, "=== request "))
		require.Equal(t, 3, strings.Count(out, "recorded answer (fake-model"))
		require.Equal(t, 3, strings.Count(out, "draft answer (fake-model"))
		require.Equal(t, 3, strings.Count(out, "\n+Answer in one sentence.\n"), "each prompt diff shows the draft's change")
		require.NotContains(t, out, "does not match the hash", "every left side is what was sent")
		require.Contains(t, out, "=== request "+ids[2]+": executor Session 2 (Ticket 4), revision 0, step")
		require.Contains(t, out, "recorded answer (fake-model, tool_calls): 100 input, 0 cached, 10 output tokens, cost 0.000280\n  tool call orchestrator_read {\"what\":\"tickets\"}\n")
		require.Contains(t, out, "draft answer (fake-model, tool_calls): 1500 input, 500 cached, 40 output tokens, cost 0.003570\n  tool call orchestrator_read {\"what\":\"threads\"}\n")
		require.Contains(t, out, "recorded answer (fake-model, stop): 100 input, 0 cached, 10 output tokens, cost 0.000280\n  fixed the typo\ndraft answer (fake-model, stop): 100 input, 0 cached, 10 output tokens, cost 0.000280\n  fixed, briefly\n")
		require.NotContains(t, out, env["SUPERAGENT_MODEL_API_KEY"])
		for _, r := range srv.Requests()[3:] {
			require.Contains(t, r.System(), "Answer in one sentence.", "the draft's prompt reached the model")
		}

		// The latest main Session requests, prompt diffs only.
		code, out, stderr = runCmd("prompts", "try", "-dir", dir, "-last", "2", "-role", "main", "-no-model")
		require.Equal(t, 0, code, stderr)
		require.Equal(t, 2, strings.Count(out, "=== request "))
		require.Equal(t, 2, strings.Count(out, "draft: not sent"))
		require.Len(t, srv.Requests(), 6, "-no-model sends nothing")

		code, _, stderr = runCmd("prompts", "try", "-dir", dir)
		require.Equal(t, 2, code, "neither -request nor -last: usage")
		require.Contains(t, stderr, "Usage:")
		code, _, stderr = runCmd("prompts", "try", "-dir", dir, "-request", "999")
		require.Equal(t, 1, code)
		require.Contains(t, stderr, "model request not found")
	})
}

// The loop a team runs on a fresh install: export with today's default
// texts, edit a part, import, edit it again, import again — through the
// binary, without a new export in between. The untouched default texts
// stay no override.
func TestPromptsExportImportTwice(t *testing.T) {
	t.Parallel()
	databases(t, func(t *testing.T, url string) {
		runCmd := commandRunner(map[string]string{"SUPERAGENT_DATABASE_URL": url, "SUPERAGENT_DATA_DIR": t.TempDir()})
		read := func(path string) string {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			return string(b)
		}

		// Without -defaults a fresh install has no part to edit, and says
		// how to get them.
		bare := filepath.Join(t.TempDir(), "bare")
		code, out, stderr := runCmd("prompts", "export", bare)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, out, "no part is overridden, so parts/ is empty; -defaults writes today's default texts there to edit")
		require.NoDirExists(t, filepath.Join(bare, "parts"))

		dir := filepath.Join(t.TempDir(), "prompts")
		code, out, stderr = runCmd("prompts", "export", "-defaults", dir)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, "exported revision 0 to "+dir+"\n", out)
		work := filepath.Join(dir, "parts", "runtime", "work.md")
		def := read("../../promptparts/defaults/runtime/work.md")
		require.Equal(t, def, read(work), "today's default text, to edit")
		require.Equal(t, read("../../promptparts/defaults/skill/github.md"), read(filepath.Join(dir, "parts", "skill", "github.md")))

		// Importing the untouched export changes nothing.
		code, out, stderr = runCmd("prompts", "import", dir)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, "nothing changed; the latest revision is still 0\n", out)

		require.NoError(t, os.WriteFile(work, []byte(def+"\nAlways run the tests named in the issue.\n"), 0o644))
		code, out, stderr = runCmd("prompts", "import", dir)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, "saved revision 1\n", out)
		require.Contains(t, read(filepath.Join(dir, "manifest.json")), `"revision": 1`, "the folder now builds on what it saved")

		require.NoError(t, os.WriteFile(work, []byte(def+"\nAlways run the tests named in the issue, twice.\n"), 0o644))
		code, out, stderr = runCmd("prompts", "import", dir)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, "saved revision 2\n", out)

		// Only the edited part is an override: the diff between the
		// revisions and from the folder says so.
		code, out, stderr = runCmd("prompts", "diff", "-from", "0", "-to", "2")
		require.Equal(t, 1, code, stderr)
		require.Equal(t, 1, strings.Count(out, "--- a/"), out)
		require.Contains(t, out, "--- a/runtime/work\trevision 0\n")
		require.Contains(t, out, "+Always run the tests named in the issue, twice.\n")
		code, out, stderr = runCmd("prompts", "diff", dir)
		require.Equal(t, 0, code, stderr+out)

		// Importing the same folder again saves nothing.
		code, out, stderr = runCmd("prompts", "import", dir)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, "nothing changed; the latest revision is still 2\n", out)
	})
}

// commandRunner runs the binary with only env (and PATH) and returns its
// exit code, stdout and stderr.
func commandRunner(env map[string]string) func(args ...string) (int, string, string) {
	return func(args ...string) (int, string, string) {
		cmd := exec.Command(binPath, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		_ = cmd.Run()
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}
}
