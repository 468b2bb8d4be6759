package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/promptparts"
)

// adminRepo is the second installed repository of the repository tests:
// the one the person did not mean.
const adminRepo = "Codertocat/Admin-Console"

// TestFeishuRequestAsksWhichRepository drives the binary with the fake
// Feishu and GitHub on both databases. A chat request, "fix the login
// page typo", names no repository and two are installed: the main Session
// opens a Ticket without one, the Executor asks which repository through
// human_action, and the question is a reply in the request's thread. The
// person answers in that thread; the Executor sets the repository (the
// gate applied to the requester), the workspace is cloned, and the work
// ends in a draft pull request on the repository the person named and no
// other. A review comment on that pull request prompts another question,
// which is asked in the comment's review thread, not the pull request's
// conversation.
func TestFeishuRequestAsksWhichRepository(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		bare := gh.AddRepo(t, helloRepo, "main", map[string]string{
			"login.html": "<h1>Sign in to yuor account</h1>\n",
			"test.sh":    "#!/bin/sh\nif grep -q yuor login.html; then echo 'typo still there'; exit 1; fi\necho ok\n",
		})
		gh.AddRepo(t, adminRepo, "main", map[string]string{"login.html": "<h1>Admin sign-in</h1>\n"})
		gh.SetPermission(helloRepo, "Codertocat", "write")
		fs := fakefeishu.New(t)
		fs.AddUser(fakefeishu.User{OpenID: cardRequester, Name: "Rita"})
		model := fakeopenai.New(t)
		model.Fallback(fakeopenai.Respond(func(req fakeopenai.Request) fakeopenai.Reply {
			if req.Model == "router-model" {
				return repoRouter(req)
			}
			return repoAsker(req)
		}))

		const secret, token = "repo-webhook-secret", "repo-admin-token-0123456789"
		p, store := serveFor(t, dbURL, gh, model, secret, token, map[string]string{
			"SUPERAGENT_FEISHU_APP_ID":             fakefeishu.AppID,
			"SUPERAGENT_FEISHU_APP_SECRET":         "repo-app-secret",
			"SUPERAGENT_FEISHU_VERIFICATION_TOKEN": cardToken,
			"SUPERAGENT_FEISHU_ENCRYPT_KEY":        cardKey,
			"SUPERAGENT_FEISHU_BASE_URL":           fs.URL,
			"SUPERAGENT_FEISHU_ALLOWED_MEMBERS":    cardRequester,
		})
		t.Cleanup(func() {
			if !t.Failed() {
				return
			}
			for _, m := range fs.Messages() {
				t.Logf("feishu message %s (parent %s, thread %s, %s): %s", m.ID, m.ParentID, m.ThreadID, m.MsgType, tail(m.Content, 2))
			}
			for i, r := range model.Requests() {
				t.Logf("model request %d (%s): %s", i, r.Model, tail(r.LastMessage().Content, 3))
			}
		})
		// The App is installed on both repositories.
		installation := readFixture(t, "installation.created.json")
		repos := installation["repositories"].([]any)
		second := map[string]any{}
		for k, v := range repos[0].(map[string]any) {
			second[k] = v
		}
		second["id"], second["node_id"], second["name"], second["full_name"] = 186853099, "MDEwOlJlcG9zaXRvcnkxODY4NTMwOTk=", "Admin-Console", adminRepo
		installation["repositories"] = append(repos, second)
		deliverGitHub(t, p, secret, "installation", "repo-install-both", marshal(t, installation))
		waitFor(t, 30*time.Second, "both repositories to be recorded", func() bool {
			var n int
			require.NoError(t, store.QueryRow(context.Background(), "SELECT count(*) FROM github_repositories WHERE active").Scan(&n))
			return n == 2
		})

		// The chat opens both repositories to its members (Rita has no
		// linked GitHub login), so the gate lets either be set.
		code, body := apiCall(t, p, http.MethodPut, "/api/feishu/chats/"+cardChat, `{"repos":["`+helloRepo+`","`+adminRepo+`"]}`, token)
		require.Equal(t, http.StatusOK, code, body)

		// The request, in the chat, names no repository.
		const request = "om_repoquestion_request"
		ask(t, p, fs, request, "@_user_1 fix the login page typo", 1)
		var question fakefeishu.Message
		waitFor(t, 2*time.Minute, "the Executor's question in the request's thread", func() bool {
			for _, m := range fs.Messages() {
				if m.MsgType == "text" && m.ParentID == request && strings.Contains(m.Content, "Which repository") {
					question = m
					return true
				}
			}
			return false
		})
		require.True(t, question.ReplyInThread, "asked as a reply in the request's thread")
		require.Equal(t, "omt_repoquestion_request", question.ThreadID)
		ticket := func() (id int64, repo, state string, pr int) {
			var list struct {
				Tickets []struct {
					ID    int64  `json:"id"`
					Repo  string `json:"repo"`
					State string `json:"state"`
					PR    int    `json:"pull_request"`
				} `json:"tickets"`
			}
			getJSON(t, "http://"+p.addr+"/api/tickets", token, &list)
			require.Len(t, list.Tickets, 1)
			tk := list.Tickets[0]
			return tk.ID, tk.Repo, tk.State, tk.PR
		}
		_, repo, _, _ := ticket()
		require.Empty(t, repo, "nothing is set before the person answers")

		// The person answers in the thread, without mentioning the bot.
		answerInThread(t, p, fs, "om_repoquestion_answer", request, question.ID, question.ThreadID, "the Hello-World one", 2)
		waitFor(t, 3*time.Minute, "the Ticket to be in review", func() bool {
			_, _, state, _ := ticket()
			return state == "in_review"
		})
		id, repo, _, number := ticket()
		require.Equal(t, helloRepo, repo)
		prs := gh.PullRequests(helloRepo)
		require.Len(t, prs, 1)
		require.Equal(t, number, prs[0].Number)
		require.True(t, prs[0].Draft)
		require.Empty(t, gh.PullRequests(adminRepo), "no work on the repository the person did not name")
		out, err := exec.Command("git", "--git-dir", bare, "show", prs[0].Head+":login.html").CombinedOutput()
		require.NoError(t, err, string(out))
		require.Equal(t, "<h1>Sign in to your account</h1>\n", string(out))
		confirmed := false
		for _, m := range fs.Messages() {
			confirmed = confirmed || (m.ParentID == request && m.ThreadID == question.ThreadID && strings.Contains(m.Content, "I will fix the typo"))
		}
		require.True(t, confirmed, "the confirmation stays in the request's thread")

		// A reviewer's comment on the pull request prompts a question.
		root, _ := gh.AddReviewComment(helloRepo, number, fakegithub.ReviewCommentSpec{Login: "Codertocat", Body: "Maybe use more emoji on this line.",
			Path: "login.html", Line: 1})
		review := readFixture(t, "../../../webhooks/testdata/github/pull_request_review_comment/created.payload.json")
		review["installation"] = map[string]any{"id": 957387, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTU3Mzg3"}
		review["repository"] = helloRepoJSON(t)
		cm := review["comment"].(map[string]any)
		cm["id"], cm["body"] = root, "Maybe use more emoji on this line."
		cm["html_url"] = fmt.Sprintf("https://github.com/%s/pull/%d#discussion_r%d", helloRepo, number, root)
		review["pull_request"].(map[string]any)["number"] = number
		deliverGitHub(t, p, secret, "pull_request_review_comment", "repo-review-comment", marshal(t, review))
		replies := fmt.Sprintf("/repos/%s/pulls/%d/comments/%d/replies", helloRepo, number, root)
		waitFor(t, 2*time.Minute, "the question in the review thread", func() bool {
			for _, r := range gh.Requests() {
				if r.Method == http.MethodPost && r.Path == replies && strings.Contains(string(r.Body), "Which emoji") {
					return true
				}
			}
			return false
		})
		for _, r := range gh.Requests() {
			if r.Method == http.MethodPost && r.Path == replies {
				require.Contains(t, string(r.Body), promptparts.DefaultAgentLine, "with the agent line")
			}
			if strings.HasSuffix(r.Path, "/issues/"+strconv.Itoa(number)+"/comments") && r.Method == http.MethodPost {
				require.NotContains(t, string(r.Body), "Which emoji", "not in the pull request's conversation")
			}
		}

		code, _ = p.stop(shutdownWithin)
		require.Equal(t, 0, code)
		set := 0
		for _, l := range logLines(t, p.stderr.String()) {
			if l["msg"] == "ticket repository set" {
				set++
				require.Equal(t, float64(id), l["ticket"])
				require.Equal(t, helloRepo, l["repo"])
				require.Equal(t, "executor", l["by"])
			}
		}
		require.Equal(t, 1, set, "set once")
	})
}

// answerInThread posts the requester's reply in a thread the bot spoke
// in, without mentioning it, as Feishu delivers it.
func answerInThread(t *testing.T, p *proc, fs *fakefeishu.Server, id, root, parent, thread, text string, seq int) {
	t.Helper()
	content, _ := json.Marshal(map[string]string{"text": text})
	fs.AddMessage(fakefeishu.Message{ID: id, ChatID: cardChat, RootID: root, ParentID: parent, ThreadID: thread, SenderID: cardRequester, Content: string(content)})
	event := map[string]any{
		"schema": "2.0",
		"header": cardHeader("im.message.receive_v1", seq),
		"event": map[string]any{
			"sender": map[string]any{"sender_id": map[string]any{"open_id": cardRequester}, "sender_type": "user", "tenant_key": "fake_tenant"},
			"message": map[string]any{
				"message_id": id, "root_id": root, "parent_id": parent, "thread_id": thread, "create_time": "1700000000000",
				"chat_id": cardChat, "chat_type": "group", "message_type": "text", "content": string(content),
			},
		},
	}
	status, _ := postLark(t, p, event)
	require.Equal(t, http.StatusOK, status)
}

// repoRouter plays the main Session: a candidate becomes a Ticket without
// a repository (the card names none), and every human_action question
// is forwarded.
func repoRouter(req fakeopenai.Request) fakeopenai.Reply {
	last := req.LastMessage()
	if last.Role != "user" {
		return fakeopenai.Text("Nothing else to route.")
	}
	var calls []fakeopenai.ToolCall
	for _, c := range candidates(last.Content) {
		args, _ := json.Marshal(map[string]any{"decisions": []map[string]any{{"candidate": c.id, "action": "new",
			"title": "Fix the login page typo", "note": "explicit request from an allowed member; it names no repository"}}})
		calls = append(calls, fakeopenai.Call("", "orchestrator_route", string(args)))
	}
	calls = append(calls, forwards(last.Content)...)
	if len(calls) == 0 {
		return fakeopenai.Text("Noted.")
	}
	return fakeopenai.Calls(calls...)
}

// cardWith is the id of the first card shown to the Executor whose text
// contains s, or "".
func cardWith(req fakeopenai.Request, s string) string {
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		chunks := candidateCard.FindAllStringSubmatchIndex(m.Content, -1)
		for i, c := range chunks {
			end := len(m.Content)
			if i+1 < len(chunks) {
				end = chunks[i+1][0]
			}
			if strings.Contains(m.Content[c[0]:end], s) {
				return m.Content[c[2]:c[3]]
			}
		}
	}
	return ""
}

// repoAsker plays the Executor of the login page Ticket, deciding each
// step from what it has been given and what succeeded so far: it asks
// which repository, sets the one the person named, fixes the typo there
// in a draft pull request, and asks the reviewer what they meant.
func repoAsker(req fakeopenai.Request) fakeopenai.Reply {
	results := map[string]int{}
	byID := map[string]string{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			byID[c.ID] = c.Name
		}
		if m.Role == "tool" && !strings.HasPrefix(m.Content, "refused") && !strings.HasPrefix(m.Content, "error") {
			results[byID[m.ToolCallID]]++
		}
	}
	call := func(name, args string) fakeopenai.Reply { return fakeopenai.Calls(fakeopenai.Call("", name, args)) }
	request, answer, review := cardWith(req, "fix the login page typo"), cardWith(req, "the Hello-World one"), cardWith(req, "more emoji")
	switch {
	case review != "" && results["human_action"] < 2:
		return call("human_action", `{"question":"Which emoji should the sign-in heading use?","message":`+review+`}`)
	case review != "":
		return fakeopenai.Text("Waiting for the reviewer.")
	case answer == "" && results["human_action"] == 0:
		return call("human_action", `{"question":"Which repository has the login page: `+helloRepo+` or `+adminRepo+`?","message":`+request+`}`)
	case answer == "":
		return fakeopenai.Text("Waiting for the answer.")
	case results["repository_set"] == 0:
		return call("repository_set", `{"repo":"`+helloRepo+`","message":`+answer+`}`)
	case results["reply"] == 0:
		return call("reply", `{"purpose":"confirm","in_reply_to":`+request+`,"text":"I will fix the typo in the login page heading of `+helloRepo+` and open a pull request."}`)
	case results["edit_file"] == 0:
		return call("edit_file", `{"path":"login.html","old_text":"yuor","new_text":"your"}`)
	case results["run_command"] == 0:
		return call("run_command", `{"command":"sh test.sh","timeout_seconds":30}`)
	case results["git_commit"] == 0:
		return call("git_commit", `{"message":"Fix a typo in the login page heading"}`)
	case results["git_push"] == 0:
		return call("git_push", `{}`)
	case results["pr_open"] == 0:
		return call("pr_open", `{"title":"Fix a typo in the login page heading","body":"Fixes the misspelled word. Verified with ./test.sh (exit 0)."}`)
	case results["report"] == 0:
		return call("report", `{"state":"done","summary":"Fixed the login page typo in a draft pull request; verified with ./test.sh, which passes.",`+
			`"human_action":"Please review the draft pull request and mark it ready if it suits you."}`)
	}
	return fakeopenai.Text("Done.")
}
