package main

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

var (
	reviewLink  = regexp.MustCompile(`#discussion_r([0-9]+)`)
	yieldFacts  = regexp.MustCompile(`host: pull request \S+#([0-9]+) by (\S+) references #1, which this Ticket works on`)
	resultLines = func(req fakeopenai.Request) (map[string]string, int) {
		// The last result of each tool since the last user message, and
		// where that message is.
		last := 0
		for i, m := range req.Messages {
			if m.Role == "user" {
				last = i
			}
		}
		byID, out := map[string]string{}, map[string]string{}
		for _, m := range req.Messages[last:] {
			for _, c := range m.ToolCalls {
				byID[c.ID] = c.Name
			}
			if m.Role == "tool" && !strings.HasPrefix(m.Content, "refused") && !strings.HasPrefix(m.Content, "error") {
				out[byID[m.ToolCallID]] = m.Content
			}
		}
		return out, last
	}
)

// inReviewer plays the Executor: readmeFixer up to its report (done, the
// draft left to a person); then, given a review comment, it fixes what
// the comment asks on the same branch, pushes and resolves the comment's
// thread; given a person's pull request that fixes the same issue, it
// takes note and leaves it to them.
func inReviewer(req fakeopenai.Request) fakeopenai.Reply {
	reported := false
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			reported = reported || c.Name == "report"
		}
	}
	if !reported {
		return readmeFixer(req)
	}
	done, last := resultLines(req)
	input := req.Messages[last].Content
	call := func(name, args string) fakeopenai.Reply { return fakeopenai.Calls(fakeopenai.Call("", name, args)) }
	if m := reviewLink.FindStringSubmatch(input); m != nil {
		switch {
		case done["edit_file"] == "":
			return call("edit_file", `{"path":"README.md","old_text":"This project says hello.","new_text":"This project says hello to the world."}`)
		case done["git_commit"] == "":
			return call("git_commit", `{"message":"Say whom the README greets"}`)
		case done["git_push"] == "":
			return call("git_push", `{}`)
		case done["github_read"] == "":
			return call("github_read", `{"what":"review_threads"}`)
		case done["review_resolve"] == "":
			return call("review_resolve", `{"thread":"`+reviewThreadOf(done["github_read"], m[1])+`"}`)
		}
		return fakeopenai.Text("Fixed and resolved.")
	}
	if yieldFacts.MatchString(input) {
		return fakeopenai.Text("Their pull request makes the same fix; I leave the choice to the reviewers for now.")
	}
	return fakeopenai.Text("Nothing to do.")
}

// reviewThreadOf finds, in github_read's review_threads answer, the
// thread whose first comment is comment.
func reviewThreadOf(result, comment string) string {
	_, data, _ := strings.Cut(result, "\n")
	var threads []struct {
		ID       string `json:"id"`
		Comments struct {
			Nodes []struct {
				DatabaseID int64 `json:"databaseId"`
			} `json:"nodes"`
		} `json:"comments"`
	}
	if json.Unmarshal([]byte(data), &threads) != nil {
		return ""
	}
	for _, th := range threads {
		if len(th.Comments.Nodes) > 0 && strconv.FormatInt(th.Comments.Nodes[0].DatabaseID, 10) == comment {
			return th.ID
		}
	}
	return ""
}

// TestTicketInReviewTakesAReviewAndAPersonsPullRequest follows a Ticket
// in review through the binary: after the Executor reported its draft
// pull request, a review comment reaches it and the fix is pushed to the
// same branch with the thread resolved; then a person's pull request that
// says "Fixes #1" reaches it with the facts, and the Ticket stays with its
// work.
func TestTicketInReviewTakesAReviewAndAPersonsPullRequest(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh, bare := typoRepo(t)
		model := scriptedModel(t, inReviewer)
		const secret, token = "inreview-webhook-secret", "inreview-admin-token-0123456789"
		p, store := serveFor(t, dbURL, gh, model, secret, token, nil)
		inst := map[string]any{"id": 957387, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTU3Mzg3"}
		repoJSON := helloRepoJSON(t)
		deliverGitHub(t, p, secret, "issue_comment", "inreview-request", commentPayload(t, "@superagent please fix the typo in the README"))
		state := func() string {
			var s string
			_ = store.QueryRow(t.Context(), `SELECT state FROM tickets WHERE id = 1`).Scan(&s)
			return s
		}
		waitFor(t, 3*time.Minute, "the Ticket to be in review", func() bool { return state() == "in_review" })
		pr := gh.PullRequests(helloRepo)[0]
		require.True(t, pr.Draft)

		// A review comment after the report.
		commentID, threadID := gh.AddReviewComment(helloRepo, pr.Number, fakegithub.ReviewCommentSpec{Login: "Codertocat", Body: "Say whom the project greets.",
			Path: "README.md", Line: 3})
		rc := readFixture(t, "pull_request_review_comment.created.json")
		rc["installation"], rc["repository"] = inst, repoJSON
		c := rc["comment"].(map[string]any)
		c["id"], c["body"], c["path"], c["line"], c["commit_id"] = commentID, "Say whom the project greets.", "README.md", 3, pr.HeadSHA
		c["html_url"] = repoJSON["html_url"].(string) + "/pull/" + strconv.Itoa(pr.Number) + "#discussion_r" + strconv.FormatInt(commentID, 10)
		rpr := rc["pull_request"].(map[string]any)
		rpr["number"], rpr["draft"] = pr.Number, true
		rpr["head"].(map[string]any)["ref"], rpr["head"].(map[string]any)["sha"] = pr.Head, pr.HeadSHA
		rpr["head"].(map[string]any)["repo"], rpr["base"].(map[string]any)["repo"] = repoJSON, repoJSON
		deliverGitHub(t, p, secret, "pull_request_review_comment", "inreview-review", marshal(t, rc))
		waitFor(t, 2*time.Minute, "the review thread to be resolved", func() bool {
			ths := gh.ReviewThreads(helloRepo, pr.Number)
			return len(ths) == 1 && ths[0].Resolved
		})
		fixed := gh.PullRequests(helloRepo)[0]
		require.Equal(t, pr.Head, fixed.Head, "the same branch")
		require.NotEqual(t, pr.HeadSHA, fixed.HeadSHA, "the fix was pushed")
		out, err := exec.Command("git", "--git-dir", bare, "show", fixed.HeadSHA+":README.md").CombinedOutput()
		require.NoError(t, err, string(out))
		require.Contains(t, string(out), "This project says hello to the world.")
		require.Equal(t, threadID, gh.ReviewThreads(helloRepo, pr.Number)[0].ID)

		// A person's pull request that fixes the same issue.
		gh.PushAs(t, helloRepo, "octocat-typo", map[string]string{"README.md": "# Hello World\n\nThis project says hello.\n"}, "Fix the typo")
		theirs := gh.AddPullRequest(t, helloRepo, fakegithub.PullRequestSpec{Login: "octocat", Head: "octocat-typo", Title: "Fix the typo", Body: "Fixes #1."})
		opened := readFixture(t, "pull_request.opened.json")
		opened["installation"], opened["repository"] = inst, repoJSON
		opr := opened["pull_request"].(map[string]any)
		opr["number"], opr["title"], opr["body"] = theirs, "Fix the typo", "Fixes #1."
		opr["html_url"] = repoJSON["html_url"].(string) + "/pull/" + strconv.Itoa(theirs)
		opr["user"].(map[string]any)["login"] = "octocat"
		opr["head"].(map[string]any)["ref"], opr["head"].(map[string]any)["sha"] = "octocat-typo", gh.PullRequests(helloRepo)[1].HeadSHA
		opr["head"].(map[string]any)["repo"], opr["base"].(map[string]any)["repo"] = repoJSON, repoJSON
		opened["sender"].(map[string]any)["login"] = "octocat"
		deliverGitHub(t, p, secret, "pull_request", "inreview-theirs", marshal(t, opened))
		told := func() bool {
			for _, r := range model.Requests() {
				if r.Model != "router-model" && yieldFacts.MatchString(r.Text()) {
					return true
				}
			}
			return false
		}
		waitFor(t, 2*time.Minute, "the Executor to be told of the person's pull request", told)
		code, _ := p.stop(10 * time.Second)
		require.Equal(t, 0, code)
		var input strings.Builder
		for _, r := range model.Requests() {
			if r.Model != "router-model" {
				input.WriteString(r.Text())
			}
		}
		require.Contains(t, input.String(), "host: pull request "+helloRepo+"#"+strconv.Itoa(theirs)+" by octocat references #1, which this Ticket works on")
		require.Equal(t, "in_review", state(), "the Ticket stays with its work")
		require.Len(t, gh.PullRequests(helloRepo), 2, "no second pull request of the bot's")
	})
}
