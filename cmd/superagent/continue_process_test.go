package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// stuckThenResumed plays an Executor that fixes and commits the typo, then
// goes round in circles until its Session's step limit stops it; the new
// Session a person's "please continue" starts reads the handoff and pushes
// what the first one committed, opening the draft pull request.
func stuckThenResumed(req fakeopenai.Request) fakeopenai.Reply {
	text := req.Text()
	results := map[string]int{}
	byID := map[string]string{}
	card := "0"
	for _, m := range req.Messages {
		if m.Role == "user" && card == "0" {
			if c := candidateCard.FindStringSubmatch(m.Content); c != nil {
				card = c[1]
			}
		}
		for _, c := range m.ToolCalls {
			byID[c.ID] = c.Name
		}
		if m.Role == "tool" && !strings.HasPrefix(m.Content, "refused") && !strings.HasPrefix(m.Content, "error") {
			results[byID[m.ToolCallID]]++
		}
	}
	call := func(name, args string) fakeopenai.Reply { return fakeopenai.Calls(fakeopenai.Call("", name, args)) }
	if !strings.Contains(text, "asked to continue") {
		switch {
		case results["reply"] == 0:
			return call("reply", `{"purpose":"confirm","in_reply_to":`+card+`,"text":"I will fix the misspelled word in README.md and open a pull request with the change."}`)
		case results["edit_file"] == 0:
			return call("edit_file", `{"path":"README.md","old_text":"projetc","new_text":"project"}`)
		case results["git_commit"] == 0:
			return call("git_commit", `{"message":"Fix a typo in the README"}`)
		}
		return call("git_status", `{}`) // round in circles
	}
	switch {
	case results["git_push"] == 0:
		return call("git_push", `{}`)
	case results["pr_open"] == 0:
		return call("pr_open", `{"title":"Fix a typo in the README","body":"Fixes the misspelled word."}`)
	case results["report"] == 0:
		return call("report", `{"state":"done","summary":"Pushed the README fix committed before the limit, in a draft pull request.",`+
			`"human_action":"Please review the draft pull request and mark it ready if the wording suits you."}`)
	}
	return fakeopenai.Text("Done.")
}

// TestPleaseContinueAfterALimit stops a Ticket's Session at its step
// limit, through the binary: the Ticket waits, and the requester's
// "Please continue." starts a new Session of the same Ticket whose
// handoff says who asked and why the last one stopped; it pushes the
// commit the first Session made to the Ticket's branch.
func TestPleaseContinueAfterALimit(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		bare := gh.AddRepo(t, helloRepo, "main", map[string]string{"README.md": "# Hello World\n\nThis projetc says hello.\n", "test.sh": "#!/bin/sh\necho ok\n"})
		gh.SetPermission(helloRepo, "Codertocat", "write")
		model := scriptedModel(t, stuckThenResumed)
		const secret, token = "continue-webhook-secret", "continue-admin-token-0123456789"
		// The step limit is the setting's; the repeated git_status would
		// otherwise be stopped as a loop first.
		p, store := serveFor(t, dbURL, gh, model, secret, token, map[string]string{
			"SUPERAGENT_EXECUTOR_MAX_STEPS": "12", "SUPERAGENT_EXECUTOR_REPEAT_LIMIT": "1000"})
		deliverGitHub(t, p, secret, "issue_comment", "continue-request", commentPayload(t, "@superagent please fix the typo in the README"))
		sessions := func() int {
			var n int
			_ = store.QueryRow(t.Context(), `SELECT count(*) FROM sessions WHERE ticket_id = 1`).Scan(&n)
			return n
		}
		waitFor(t, 5*time.Minute, "the Session to stop at its limit", func() bool {
			return strings.Contains(p.stderr.String(), `"msg":"executor stopped","ticket":1`) && strings.Contains(p.stderr.String(), `"why":"max_steps"`)
		})
		require.Equal(t, 1, sessions())
		require.Zero(t, gh.Pushes(helloRepo, "refs/heads/superagent/ticket-1"), "nothing pushed before the limit")

		c := readFixture(t, "issue_comment.created.json")
		c["installation"] = map[string]any{"id": 957387, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTU3Mzg3"}
		c["comment"].(map[string]any)["body"] = "Please continue."
		c["comment"].(map[string]any)["id"] = 424242
		deliverGitHub(t, p, secret, "issue_comment", "continue-please", marshal(t, c))
		waitFor(t, 3*time.Minute, "the draft pull request of the new Session", func() bool { return len(gh.PullRequests(helloRepo)) == 1 })
		code, _ := p.stop(10 * time.Second)
		require.Equal(t, 0, code)

		require.Equal(t, 2, sessions(), "a new Session of the same Ticket")
		pr := gh.PullRequests(helloRepo)[0]
		require.Equal(t, "superagent/ticket-1", pr.Head, "on the Ticket's branch")
		out, err := exec.Command("git", "--git-dir", bare, "show", pr.HeadSHA+":README.md").CombinedOutput()
		require.NoError(t, err, string(out))
		require.Contains(t, string(out), "This project says hello.", "the first Session's commit")
		var handoff string
		for _, r := range model.Requests() {
			if t := r.Text(); r.Model != "router-model" && strings.Contains(t, "asked to continue") {
				handoff = t
				break
			}
		}
		require.Contains(t, handoff, "@Codertocat asked to continue ticket 1")
		require.Contains(t, handoff, "max_steps")
		require.Contains(t, handoff, "Please continue.")
		require.Contains(t, p.stderr.String(), "a person's message continues a ticket stopped at a limit")
	})
}
