package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// helloRepoJSON is the fixtures' repository object, as webhooks carry it.
func helloRepoJSON(t *testing.T) map[string]any {
	t.Helper()
	return readFixture(t, "issue_comment.created.json")["repository"].(map[string]any)
}

// readFixture reads a webhook fixture of testdata as a JSON object.
func readFixture(t *testing.T, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// serveFor starts serve on dbURL against the fake GitHub and model, with
// the App installed on helloRepo (the installation fixture delivered and
// recorded); extra adds or overrides settings.
func serveFor(t *testing.T, dbURL string, gh *fakegithub.Server, model *fakeopenai.Server, secret, token string, extra map[string]string) (*proc, *db.DB) {
	t.Helper()
	env := serviceEnv(t, dbURL, gh, model, secret, token)
	for k, v := range extra {
		env[k] = v
	}
	p := start(t, "serve", env, "serve")
	p.waitHTTP("/readyz", 30*time.Second)
	installApp(t, p, secret, "install-"+token, dbURL)
	return p, openDB(t, dbURL)
}

var failingCheck = regexp.MustCompile(`FAIL: NOTES\.md must mention (attempt [0-9]+)`)

// reviewer plays the Executor after its first report: a failed job's log,
// given by the host, says what NOTES.md must hold; it writes, commits and
// pushes that. Before, it is readmeFixer.
func reviewer(req fakeopenai.Request) fakeopenai.Reply {
	last := -1
	for i, m := range req.Messages {
		if m.Role == "user" && strings.Contains(m.Content, "host: job ") {
			last = i
		}
	}
	if last < 0 {
		return readmeFixer(req)
	}
	m := failingCheck.FindStringSubmatch(req.Messages[last].Content)
	done := map[string]bool{}
	for _, msg := range req.Messages[last:] {
		for _, c := range msg.ToolCalls {
			done[c.Name] = true
		}
	}
	call := func(name, args string) fakeopenai.Reply { return fakeopenai.Calls(fakeopenai.Call("", name, args)) }
	switch {
	case m == nil:
		return fakeopenai.Text("Nothing to fix.")
	case !done["write_file"]:
		return call("write_file", `{"path":"NOTES.md","content":"`+m[1]+`\n"}`)
	case !done["git_commit"]:
		return call("git_commit", `{"message":"Mention `+m[1]+` in NOTES.md"}`)
	case !done["git_push"]:
		return call("git_push", `{}`)
	}
	return fakeopenai.Text("Pushed the fix.")
}

// TestLabeledIssueToMergedPullRequest follows a Ticket through the binary
// from the trigger label to the merge: the label is an explicit request,
// the draft pull request leaves the Ticket in review, a failed GitHub
// Actions run (its jobs listed by the run's id, the failing job's log read
// by the job's id) reaches the Executor, which pushes a fix to the same
// branch, and the person's merge ends the Ticket and removes its
// workspace.
func TestLabeledIssueToMergedPullRequest(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh, bare := typoRepo(t)
		model := scriptedModel(t, reviewer)
		const secret, token = "review-webhook-secret", "review-admin-token-0123456789"
		dataDir := t.TempDir()
		p, _ := serveFor(t, dbURL, gh, model, secret, token, map[string]string{"SUPERAGENT_DATA_DIR": dataDir, "SUPERAGENT_GITHUB_TRIGGER_LABEL": "agent-please"})
		inst := map[string]any{"id": 957387, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTU3Mzg3"}

		// The trigger label, added by a writer: an explicit request.
		labeled := readFixture(t, "issues.labeled.json")
		labeled["installation"] = inst
		labeled["label"].(map[string]any)["name"] = "agent-please"
		labeled["issue"].(map[string]any)["body"] = "The README says projetc; please fix the typo."
		deliverGitHub(t, p, secret, "issues", "review-label", marshal(t, labeled))

		var ticket struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
			PR    int    `json:"pull_request"`
		}
		ticketState := func() string {
			var list struct {
				Tickets []json.RawMessage `json:"tickets"`
			}
			getJSON(t, "http://"+p.addr+"/api/tickets", token, &list)
			if len(list.Tickets) != 1 {
				return ""
			}
			require.NoError(t, json.Unmarshal(list.Tickets[0], &ticket))
			return ticket.State
		}
		waitFor(t, 3*time.Minute, "the labeled issue's Ticket to be in review", func() bool { return ticketState() == "in_review" })
		pr := gh.PullRequests(helloRepo)[0]
		require.True(t, pr.Draft)
		require.Equal(t, ticket.PR, pr.Number)
		workspace := filepath.Join(dataDir, "workspaces", "ticket-"+strconv.FormatInt(ticket.ID, 10))
		require.DirExists(t, workspace, "in review, the workspace stays")

		// GitHub Actions fails on the pull request; workflow_run says so.
		run := gh.AddWorkflowRun(helloRepo, pr.HeadSHA, fakegithub.WorkflowRunSpec{Name: "CI", HeadBranch: pr.Head, Jobs: []fakegithub.JobSpec{
			{Name: "lint", Conclusion: "success", Log: "lint: ok\n"},
			{Name: "notes", Conclusion: "failure", Steps: []fakegithub.StepSpec{{Name: "Set up job", Conclusion: "success"},
				{Name: "Run ./check.sh", Conclusion: "failure"}},
				Log: "##[group]Run ./check.sh\nFAIL: NOTES.md must mention attempt 1\n##[error]Process completed with exit code 1.\n"},
		}})
		repoJSON := helloRepoJSON(t)
		wf := readFixture(t, "workflow_run.completed.json")
		wf["installation"], wf["repository"] = inst, repoJSON
		w := wf["workflow_run"].(map[string]any)
		w["id"], w["name"], w["conclusion"], w["html_url"] = run.ID, "CI", "failure", run.HTMLURL
		// A workflow run names its repositories in their short form: the
		// fixture's fields, with this repository's values.
		lite := map[string]any{}
		for k, v := range w["repository"].(map[string]any) {
			lite[k] = v
			if mine, ok := repoJSON[k]; ok && k != "owner" {
				lite[k] = mine
			}
		}
		w["head_sha"], w["head_branch"], w["repository"], w["head_repository"] = pr.HeadSHA, pr.Head, lite, lite
		ref := func(branch, sha string) map[string]any {
			return map[string]any{"ref": branch, "sha": sha, "repo": map[string]any{"id": repoJSON["id"], "url": repoJSON["url"], "name": repoJSON["name"]}}
		}
		w["pull_requests"] = []any{map[string]any{"id": 1, "number": pr.Number, "url": repoJSON["url"].(string) + "/pulls/" + strconv.Itoa(pr.Number),
			"head": ref(pr.Head, pr.HeadSHA), "base": ref("main", "")}}
		deliverGitHub(t, p, secret, "workflow_run", "review-run", marshal(t, wf))
		waitFor(t, 2*time.Minute, "the fix to be pushed to the pull request's branch", func() bool {
			return gh.PullRequests(helloRepo)[0].HeadSHA != pr.HeadSHA
		})
		fixed := gh.PullRequests(helloRepo)[0]
		require.Equal(t, pr.Head, fixed.Head)
		out, err := exec.Command("git", "--git-dir", bare, "show", fixed.HeadSHA+":NOTES.md").CombinedOutput()
		require.NoError(t, err, string(out))
		require.Equal(t, "attempt 1\n", string(out))
		var input strings.Builder
		for _, r := range model.Requests() {
			input.WriteString(r.Text())
		}
		require.Contains(t, input.String(), `host: job "notes" of workflow run `+strconv.FormatInt(run.ID, 10)+` failed at step "Run ./check.sh"`)
		require.Contains(t, input.String(), "host: failure 1; fix attempts used 0 of 3.")

		// The person marks it ready and merges it: the Ticket ends.
		gh.ReadyForReview(t, helloRepo, pr.Number)
		gh.MergeAs(t, helloRepo, pr.Number)
		closed := readFixture(t, "pull_request.closed.json")
		closed["installation"], closed["repository"] = inst, repoJSON
		cpr := closed["pull_request"].(map[string]any)
		cpr["number"], cpr["merged"], cpr["draft"] = pr.Number, true, false
		cpr["head"].(map[string]any)["ref"], cpr["head"].(map[string]any)["sha"] = fixed.Head, fixed.HeadSHA
		cpr["head"].(map[string]any)["repo"], cpr["base"].(map[string]any)["repo"] = repoJSON, repoJSON
		deliverGitHub(t, p, secret, "pull_request", "review-merged", marshal(t, closed))
		waitFor(t, time.Minute, "the Ticket to be done", func() bool { return ticketState() == "done" })
		waitFor(t, time.Minute, "the workspace to be removed", func() bool {
			_, err := os.Stat(workspace)
			return os.IsNotExist(err)
		})

		code, _ := p.stop(shutdownWithin)
		require.Equal(t, 0, code)
		byMsg := map[string][]map[string]any{}
		for _, l := range logLines(t, p.stderr.String()) {
			if l["level"] == "INFO" {
				byMsg[l["msg"].(string)] = append(byMsg[l["msg"].(string)], l)
			}
		}
		id := float64(ticket.ID)
		for _, msg := range []string{"ticket opened", "pull request opened", "ticket in review", "pull request merged", "ticket ended"} {
			require.Len(t, byMsg[msg], 1, "%q once", msg)
			require.Equal(t, id, byMsg[msg][0]["ticket"], msg)
		}
		require.Equal(t, "Codertocat", byMsg["pull request merged"][0]["by"])
		require.Equal(t, "issue_labeled", byMsg["card made"][0]["kind"])
	})
}

// TestStopCommandMidSession stops a Ticket with "@superagent stop" while
// its Executor's model is thinking: the push the model asks for next is
// refused, and the stop is said once under the command, held back until
// the Executor's job has made its last writes (the progress comment's
// edit to "stopped", the deletion of its checkpoint ref), so nothing at
// all is written on GitHub after that acknowledgement.
func TestStopCommandMidSession(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		bare := gh.AddRepo(t, helloRepo, "main", map[string]string{"README.md": "# Hello World\n\nThis projetc says hello.\n", "test.sh": "#!/bin/sh\necho ok\n"})
		gh.SetPermission(helloRepo, "Codertocat", "write")
		thinking := make(chan struct{})
		store := openDB(t, dbURL)
		stopped := func() bool {
			var n int
			err := store.QueryRow(context.Background(), "SELECT count(*) FROM tickets WHERE stopped_at IS NOT NULL").Scan(&n)
			return err == nil && n == 1
		}
		var signalled bool
		model := fakeopenai.New(t)
		model.Fallback(fakeopenai.Respond(func(req fakeopenai.Request) fakeopenai.Reply {
			if req.Model == "router-model" {
				return router(req)
			}
			r := readmeFixer(req)
			if len(r.ToolCalls) == 1 && r.ToolCalls[0].Name == "run_command" && !signalled {
				// The model thinks while a person stops the Ticket; then it
				// asks to push.
				signalled = true
				close(thinking)
				deadline := time.Now().Add(time.Minute)
				for !stopped() && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond) // the fake model's think time, not a wait for the code under test
				}
				return fakeopenai.Calls(fakeopenai.Call("", "git_push", `{}`))
			}
			return r
		}))
		const secret, token = "stop-webhook-secret", "stop-admin-token-0123456789"
		p, _ := serveFor(t, dbURL, gh, model, secret, token, nil)
		comment := func(guid, text string) {
			c := readFixture(t, "issue_comment.created.json")
			c["installation"] = map[string]any{"id": 957387, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTU3Mzg3"}
			c["comment"].(map[string]any)["body"] = text
			c["comment"].(map[string]any)["id"] = len(guid) * 1000
			deliverGitHub(t, p, secret, "issue_comment", guid, marshal(t, c))
		}
		comment("stop-request", "@superagent please fix the typo in the README")
		select {
		case <-thinking:
		case <-time.After(3 * time.Minute):
			t.Fatal("the Executor never got to think")
		}
		comment("stop-command-1", "@superagent stop, I will do it myself")

		isAck := func(r fakegithub.Request) bool {
			return r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/issues/1/comments") && strings.Contains(string(r.Body), "Stopped ticket")
		}
		waitFor(t, time.Minute, "the stop to be acknowledged and the work to end", func() bool {
			acked := false
			for _, r := range gh.Requests() {
				acked = acked || isAck(r)
			}
			var busy int
			require.NoError(t, store.QueryRow(context.Background(),
				`SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'cancelled', 'discarded')`).Scan(&busy))
			return acked && busy == 0 && strings.Contains(p.stderr.String(), `"msg":"executor stopped"`)
		})
		code, _ := p.stop(shutdownWithin)
		require.Equal(t, 0, code)

		reqs := gh.Requests()
		ack := -1
		for i, r := range reqs {
			if isAck(r) {
				require.Equal(t, -1, ack, "the stop is said once")
				ack = i
			}
		}
		progress := regexp.MustCompile(`^/repos/` + helloRepo + `/issues/comments/[0-9]+$`)
		edited, wipDeleted := -1, -1
		for i, r := range reqs {
			write := r.Method != http.MethodGet && !strings.HasSuffix(r.Path, "/git-upload-pack")
			if i > ack {
				// Reads only: a git fetch, a GET.
				require.False(t, write, "nothing is written after the acknowledgement: %s %s %s", r.Method, r.Path, r.Body)
			}
			if r.Method == http.MethodPatch && progress.MatchString(r.Path) && strings.Contains(string(r.Body), "stopped") {
				edited = i
			}
			if strings.HasSuffix(r.Path, "/git-receive-pack") && strings.Contains(string(r.Body), strings.Repeat("0", 40)+" refs/superagent/wip/1\x00") {
				wipDeleted = i
			}
		}
		require.Positive(t, edited, "the progress comment says it stopped")
		require.Less(t, edited, ack, "before the acknowledgement")
		require.Positive(t, wipDeleted, "the checkpoint ref is deleted")
		require.Less(t, wipDeleted, ack, "before the acknowledgement")
		require.Zero(t, gh.Pushes(helloRepo, "refs/heads/superagent/ticket-1"), "the push asked for after the stop never happened")
		_, err := exec.Command("git", "--git-dir", bare, "rev-parse", "--verify", "--quiet", "refs/superagent/wip/1").Output()
		require.Error(t, err, "the stopped Ticket's checkpoint ref is gone")
		require.Empty(t, gh.PullRequests(helloRepo))
		require.Contains(t, string(reqs[ack].Body), "I will do it myself")
		var refused int
		require.NoError(t, store.QueryRow(context.Background(), `SELECT count(*) FROM session_messages
WHERE role = 'tool' AND content LIKE 'refused: ticket % was stopped by github:Codertocat: nothing more is written%'`).Scan(&refused))
		require.Equal(t, 1, refused, "the push was answered with the stop")
	})
}
