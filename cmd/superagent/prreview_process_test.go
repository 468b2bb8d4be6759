package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// reviewCommentID finds the review thread a card is in: its first
// comment, which review_reply answers.
var reviewCommentID = regexp.MustCompile(`/review-thread/([0-9]+)`)

// prReviewer plays the Executor of "@superagent review" on a person's
// pull request: it reads the pull request, runs the tests, tries to push
// (refused) and to comment off the diff (refused, nothing posted), then
// posts one review with a suggestion on the changed line and reports.
// Given a reply in the review's thread, it answers there.
func prReviewer(req fakeopenai.Request) fakeopenai.Reply {
	ok, refused := map[string]int{}, map[string]int{}
	byID := map[string]string{}
	reply := ""
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			byID[c.ID] = c.Name
		}
		if m.Role == "tool" {
			if strings.HasPrefix(m.Content, "refused") {
				refused[byID[m.ToolCallID]]++
			} else if !strings.HasPrefix(m.Content, "error") {
				ok[byID[m.ToolCallID]]++
			}
		}
		if m.Role == "user" && strings.Contains(m.Content, "Why lowercase?") {
			if c := reviewCommentID.FindStringSubmatch(m.Content); c != nil {
				reply = c[1]
			}
		}
	}
	call := func(name, args string) fakeopenai.Reply { return fakeopenai.Calls(fakeopenai.Call("", name, args)) }
	review := func(line int) string {
		return `{"body":"Read the change and ran sh test.sh, which passes.","comments":[{"path":"README.md","line":` + strconv.Itoa(line) +
			`,"body":"Keep the greeting's capital letter.\n` + "```suggestion\\nHello from octocat!\\n```" + `"}]}`
	}
	switch {
	case reply != "" && ok["review_reply"] == 0:
		return call("review_reply", `{"comment":`+reply+`,"text":"Sentences in this README start with a capital letter."}`)
	case reply != "":
		return fakeopenai.Text("Answered.")
	case ok["github_read"] == 0:
		return call("github_read", `{"what":"pull_request"}`)
	case ok["run_command"] == 0:
		return call("run_command", `{"command":"sh test.sh","timeout_seconds":30}`)
	case refused["git_push"] == 0:
		return call("git_push", `{}`)
	case refused["pr_review"] == 0:
		return call("pr_review", review(1))
	case ok["pr_review"] == 0:
		return call("pr_review", review(10))
	case ok["report"] == 0:
		return call("report", `{"state":"done","summary":"Reviewed the pull request in one review with one suggestion; sh test.sh passes on it."}`)
	}
	return fakeopenai.Text("Reviewed.")
}

// TestReviewOnAPersonsPullRequest asks the bot, through the binary, to
// review a person's pull request: it posts one review, held to GitHub's
// REST description, with an inline suggestion on the changed line; the
// comment it first placed off the diff was refused to the model before
// anything was posted; the person's branch is never pushed to; and the
// person's reply in the review's thread reaches the Ticket, which answers
// in the thread.
func TestReviewOnAPersonsPullRequest(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		readme := func(greeting string) string {
			var b strings.Builder
			b.WriteString("# Hello World\n\n")
			for i := 3; i <= 12; i++ {
				if i == 10 {
					b.WriteString(greeting + "\n")
					continue
				}
				b.WriteString("Line " + strconv.Itoa(i) + ".\n")
			}
			return b.String()
		}
		gh.AddRepo(t, helloRepo, "main", map[string]string{
			"README.md": readme("Hello from the project."),
			"test.sh":   "#!/bin/sh\ntest -s README.md && echo ok\n",
		})
		gh.SetPermission(helloRepo, "Codertocat", "write")
		sha := gh.PushAs(t, helloRepo, "octocat-greeting", map[string]string{"README.md": readme("hello from octocat!")}, "Greet from octocat")
		pr := gh.AddPullRequest(t, helloRepo, fakegithub.PullRequestSpec{Login: "octocat", Head: "octocat-greeting", Title: "Greet from octocat"})

		model := scriptedModel(t, prReviewer)
		const secret, token = "prreview-webhook-secret", "prreview-admin-token-0123456789"
		p, store := serveFor(t, dbURL, gh, model, secret, token, nil)
		repoJSON := helloRepoJSON(t)
		inst := map[string]any{"id": 957387, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTU3Mzg3"}
		c := readFixture(t, "issue_comment.created.json")
		c["installation"], c["repository"] = inst, repoJSON
		issue := c["issue"].(map[string]any)
		issue["number"] = pr
		pulls := repoJSON["html_url"].(string) + "/pull/" + strconv.Itoa(pr)
		issue["pull_request"] = map[string]any{"url": repoJSON["url"].(string) + "/pulls/" + strconv.Itoa(pr), "html_url": pulls,
			"diff_url": pulls + ".diff", "patch_url": pulls + ".patch", "merged_at": nil}
		c["comment"].(map[string]any)["body"] = "@superagent review"
		deliverGitHub(t, p, secret, "issue_comment", "prreview-ask", marshal(t, c))

		bots := func() []fakegithub.Review {
			var out []fakegithub.Review
			for _, r := range gh.Reviews(helloRepo, pr) {
				if strings.HasSuffix(r.Login, "[bot]") {
					out = append(out, r)
				}
			}
			return out
		}
		state := func() string {
			var s string
			_ = store.QueryRow(t.Context(), `SELECT state FROM tickets WHERE id = 1`).Scan(&s)
			return s
		}
		waitFor(t, 3*time.Minute, "the review and the report", func() bool { return len(bots()) > 0 && state() == "in_review" })

		reviews := bots()
		require.Len(t, reviews, 1, "one review")
		require.Equal(t, "COMMENTED", reviews[0].State)
		require.Contains(t, reviews[0].Body, "ran sh test.sh")
		threads := gh.ReviewThreads(helloRepo, pr)
		require.Len(t, threads, 1, "the refused comment off the diff was never posted")
		require.Equal(t, "README.md", threads[0].Path)
		require.Equal(t, 10, threads[0].Line, "on the changed line")
		require.Contains(t, threads[0].Comments[0].Body, "```suggestion\nHello from octocat!\n```")
		require.Equal(t, sha, gh.PullRequests(helloRepo)[0].HeadSHA, "nothing pushed to their branch")
		require.Zero(t, gh.Pushes(helloRepo, "refs/heads/octocat-greeting"))
		require.Len(t, gh.PullRequests(helloRepo), 1, "no pull request of the bot's")

		var input strings.Builder
		for _, r := range model.Requests() {
			input.WriteString(r.Text())
		}
		require.Contains(t, input.String(), "this Ticket reviews octocat's pull request")
		require.Contains(t, input.String(), "pushes nothing to their branch")
		require.Contains(t, input.String(), "line 1 is not in the diff on side RIGHT; lines there: 7-12 RIGHT")

		// The person answers in the review's thread: a follow-up of the
		// Ticket, answered in the thread.
		root := threads[0].Comments[0].ID
		replyID, _ := gh.AddReviewComment(helloRepo, pr, fakegithub.ReviewCommentSpec{Login: "octocat", Body: "Why lowercase?", InReplyTo: root})
		rc := readFixture(t, "pull_request_review_comment.created.json")
		rc["installation"], rc["repository"] = inst, repoJSON
		cm := rc["comment"].(map[string]any)
		cm["id"], cm["body"], cm["path"], cm["line"], cm["commit_id"], cm["in_reply_to_id"] = replyID, "Why lowercase?", "README.md", 10, sha, root
		cm["html_url"] = pulls + "#discussion_r" + strconv.FormatInt(replyID, 10)
		cm["user"].(map[string]any)["login"] = "octocat"
		rpr := rc["pull_request"].(map[string]any)
		rpr["number"] = pr
		rpr["head"].(map[string]any)["ref"], rpr["head"].(map[string]any)["sha"] = "octocat-greeting", sha
		rpr["head"].(map[string]any)["repo"], rpr["base"].(map[string]any)["repo"] = repoJSON, repoJSON
		rc["sender"].(map[string]any)["login"] = "octocat"
		deliverGitHub(t, p, secret, "pull_request_review_comment", "prreview-reply", marshal(t, rc))
		waitFor(t, 2*time.Minute, "the answer in the review's thread", func() bool {
			ths := gh.ReviewThreads(helloRepo, pr)
			return len(ths) == 1 && len(ths[0].Comments) == 3
		})
		var cardState string
		var ticket int64
		require.NoError(t, store.QueryRow(t.Context(), `SELECT state, COALESCE(ticket_id, 0) FROM cards WHERE text LIKE '%Why lowercase?%'`).Scan(&cardState, &ticket))
		require.Equal(t, "follow_up", cardState)
		require.Equal(t, int64(1), ticket)
		require.Contains(t, gh.ReviewThreads(helloRepo, pr)[0].Comments[2].Body, "start with a capital letter")
		// On GitHub a reply in a thread is filed as a bodiless review of
		// its own: the bot's one submitted review is still the only one
		// with a body.
		submitted := 0
		for _, r := range bots() {
			if r.Body != "" {
				submitted++
			}
		}
		require.Equal(t, 1, submitted, "still one review")
		code, _ := p.stop(10 * time.Second)
		require.Equal(t, 0, code)
	})
}
