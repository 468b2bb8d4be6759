package main

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// forkFixer plays the Executor of a request on a person's pull request
// from a fork: told that it works on their branch, it fixes the typo
// there and pushes; told that the fork takes no edits, it says so in one
// sentence and offers a pull request onto theirs.
func forkFixer(req fakeopenai.Request) fakeopenai.Reply {
	card, refusedFork := "0", false
	results := map[string]int{}
	byID := map[string]string{}
	for _, m := range req.Messages {
		if m.Role == "user" && card == "0" {
			if c := candidateCard.FindStringSubmatch(m.Content); c != nil {
				card = c[1]
			}
		}
		refusedFork = refusedFork || (m.Role == "user" && strings.Contains(m.Content, "does not allow edits by maintainers"))
		for _, c := range m.ToolCalls {
			byID[c.ID] = c.Name
		}
		if m.Role == "tool" && !strings.HasPrefix(m.Content, "refused") && !strings.HasPrefix(m.Content, "error") {
			results[byID[m.ToolCallID]]++
		}
	}
	call := func(name, args string) fakeopenai.Reply { return fakeopenai.Calls(fakeopenai.Call("", name, args)) }
	switch {
	case refusedFork && results["reply"] == 0:
		return call("reply", `{"purpose":"decline","in_reply_to":`+card+`,"text":"I cannot push to your fork's branch because it does not allow edits by maintainers, so I can open a pull request onto yours with the fix instead."}`)
	case refusedFork:
		return fakeopenai.Text("Offered a pull request onto theirs.")
	case results["reply"] == 0:
		return call("reply", `{"purpose":"confirm","in_reply_to":`+card+`,"text":"I will fix the misspelled word that makes ./test.sh fail, on your pull request's branch."}`)
	case results["edit_file"] == 0:
		return call("edit_file", `{"path":"README.md","old_text":"projetc","new_text":"project"}`)
	case results["git_commit"] == 0:
		return call("git_commit", `{"message":"Fix the README typo that fails test.sh"}`)
	case results["git_push"] == 0:
		return call("git_push", `{}`)
	case results["report"] == 0:
		return call("report", `{"state":"done","summary":"Fixed the README typo on the pull request's branch; ./test.sh passes on it now."}`)
	}
	return fakeopenai.Text("Done.")
}

// TestFixOnAPersonsPullRequestFromAFork asks the bot, through the binary,
// to fix the failing test on two people's pull requests from forks: the
// one whose author allows edits by maintainers gets the fix pushed to the
// fork's branch (and no branch or pull request of the bot's); the other
// gets one sentence offering a pull request onto theirs, and nothing is
// pushed anywhere for it.
func TestFixOnAPersonsPullRequestFromAFork(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		files := map[string]string{
			"README.md": "# Hello World\n\nThis projetc says hello.\n",
			"test.sh":   "#!/bin/sh\nif grep -q projetc README.md; then echo 'typo still there'; exit 1; fi\necho ok\n",
		}
		bare := gh.AddRepo(t, helloRepo, "main", files)
		gh.SetPermission(helloRepo, "Codertocat", "write")
		// Each person's branch is in their fork; GitHub keeps the pull
		// request's commits in the base repository too.
		fork := func(owner, branch string, allow bool) (int, string, string) {
			sha := gh.PushAs(t, helloRepo, branch, map[string]string{"GREETING.md": "Hello from " + owner + "!\n"}, "Add a greeting")
			forkBare := gh.AddRepo(t, owner+"/Hello-World", "main", files)
			out, err := exec.Command("git", "--git-dir", forkBare, "fetch", "--quiet", bare, "refs/heads/"+branch+":refs/heads/"+branch).CombinedOutput()
			require.NoError(t, err, string(out))
			pr := gh.AddPullRequest(t, helloRepo, fakegithub.PullRequestSpec{Login: owner, Head: branch, HeadRepo: owner + "/Hello-World",
				Title: "Add a greeting", MaintainerCanModify: allow})
			return pr, sha, forkBare
		}
		open, openSHA, openFork := fork("octocat", "greeting", true)
		closed, closedSHA, closedFork := fork("hubot", "hubot-greeting", false)

		model := scriptedModel(t, forkFixer)
		const secret, token = "fork-webhook-secret", "fork-admin-token-0123456789"
		p, _ := serveFor(t, dbURL, gh, model, secret, token, nil)
		repoJSON := helloRepoJSON(t)
		ask := func(guid string, pr int) {
			c := readFixture(t, "issue_comment.created.json")
			c["installation"] = map[string]any{"id": 957387, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTU3Mzg3"}
			issue := c["issue"].(map[string]any)
			issue["number"] = pr
			pulls := repoJSON["html_url"].(string) + "/pull/" + strconv.Itoa(pr)
			issue["pull_request"] = map[string]any{"url": repoJSON["url"].(string) + "/pulls/" + strconv.Itoa(pr), "html_url": pulls,
				"diff_url": pulls + ".diff", "patch_url": pulls + ".patch", "merged_at": nil}
			c["comment"].(map[string]any)["body"] = "@superagent fix the failing test"
			c["comment"].(map[string]any)["id"] = 7000 + pr
			deliverGitHub(t, p, secret, "issue_comment", guid, marshal(t, c))
		}
		ask("fork-allowed", open)
		ask("fork-refused", closed)

		waitFor(t, 3*time.Minute, "the fix on the fork's branch", func() bool {
			return gh.PullRequests(helloRepo)[0].HeadSHA != openSHA
		})
		declined := func() int {
			n := 0
			for _, c := range gh.Comments() {
				if c.Number == closed && strings.Contains(c.Body, "does not allow edits by maintainers") {
					n++
				}
			}
			return n
		}
		waitFor(t, 3*time.Minute, "the one sentence on the other pull request", func() bool { return declined() > 0 })
		code, _ := p.stop(10 * time.Second)
		require.Equal(t, 0, code)

		// Allowed: the fix is on the fork's branch, on top of their work;
		// the pull request shows it; the bot has no branch of its own.
		out, err := exec.Command("git", "--git-dir", openFork, "show", "refs/heads/greeting:README.md").CombinedOutput()
		require.NoError(t, err, string(out))
		require.Contains(t, string(out), "This project says hello.")
		out, err = exec.Command("git", "--git-dir", openFork, "show", "refs/heads/greeting:GREETING.md").CombinedOutput()
		require.NoError(t, err, string(out))
		require.Equal(t, "Hello from octocat!\n", string(out))
		forkHead, err := exec.Command("git", "--git-dir", openFork, "rev-parse", "refs/heads/greeting").Output()
		require.NoError(t, err)
		require.Equal(t, strings.TrimSpace(string(forkHead)), gh.PullRequests(helloRepo)[0].HeadSHA)
		require.Equal(t, 1, gh.Pushes("octocat/Hello-World", "refs/heads/greeting"))

		// Refused: one sentence, nothing pushed to theirs.
		require.Equal(t, 1, declined())
		require.Equal(t, closedSHA, gh.PullRequests(helloRepo)[1].HeadSHA)
		head, err := exec.Command("git", "--git-dir", closedFork, "rev-parse", "refs/heads/hubot-greeting").Output()
		require.NoError(t, err)
		require.Equal(t, closedSHA, strings.TrimSpace(string(head)))
		require.Zero(t, gh.Pushes("hubot/Hello-World", "refs/heads/hubot-greeting"))

		require.Len(t, gh.PullRequests(helloRepo), 2, "no pull request of the bot's")
		for _, ref := range []string{"superagent/ticket-1", "superagent/ticket-2"} {
			_, ok := gh.Branch(t, helloRepo, ref)
			require.False(t, ok, "no branch %s pushed", ref)
		}
		var input strings.Builder
		for _, r := range model.Requests() {
			input.WriteString(r.Text())
		}
		require.Contains(t, input.String(), "this Ticket works on its branch greeting (in octocat/Hello-World)")
		require.Contains(t, input.String(), "from hubot/Hello-World:hubot-greeting, a fork whose author does not allow edits by maintainers")
	})
}
