package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/promptparts"
)

const helloRepo = "Codertocat/Hello-World"

// TestRequestBecomesAPullRequestAcrossAKill follows a request through the
// real binary: a signed issue_comment becomes a card, the main Session
// (the fake model, as router-model) makes it a Ticket, and the Executor
// (the fake model, as executor-model) fixes the README in a clone of a
// real git repository, tests, commits, pushes and opens a draft pull
// request. The process is killed right after GitHub created the pull
// request but before the process read the answer; a new process resumes
// the work: one pull request, one confirmation, one result.
func TestRequestBecomesAPullRequestAcrossAKill(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh, bare := typoRepo(t)

		// GitHub's API is reached through a proxy that, once GitHub has
		// created the pull request, holds the answer back and lets the test
		// kill the process: the write landed, the process never saw it.
		created := make(chan struct{})
		var once sync.Once
		upstream, err := url.Parse(gh.URL)
		require.NoError(t, err)
		rp := httputil.NewSingleHostReverseProxy(upstream)
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.URL.Path != "/repos/"+helloRepo+"/pulls" {
				rp.ServeHTTP(w, r)
				return
			}
			first := false
			once.Do(func() { first = true })
			if !first {
				rp.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			close(created)
			<-r.Context().Done()
		}))
		t.Cleanup(proxy.Close)

		model := scriptedModel(t, readmeFixer)

		const secret, token, modelKey = "executor-webhook-secret", "executor-admin-token-0123456789", "sk-test-executor-key-0001"
		dataDir := t.TempDir()
		env := func() map[string]string {
			return map[string]string{
				"SUPERAGENT_ADDR":                  freeAddr(t),
				"SUPERAGENT_DATA_DIR":              dataDir,
				"SUPERAGENT_DATABASE_URL":          dbURL,
				"SUPERAGENT_ADMIN_TOKEN":           token,
				"SUPERAGENT_GITHUB_APP_ID":         fmt.Sprint(gh.AppID),
				"SUPERAGENT_GITHUB_PRIVATE_KEY":    string(gh.PrivateKey()),
				"SUPERAGENT_GITHUB_API_URL":        proxy.URL,
				"SUPERAGENT_GITHUB_WEBHOOK_SECRET": secret,
				"SUPERAGENT_MODEL_BASE_URL":        model.URL(),
				"SUPERAGENT_MODEL_API_KEY":         modelKey,
				"SUPERAGENT_MODEL":                 "executor-model",
				"SUPERAGENT_ROUTER_MODEL":          "router-model",
				"SUPERAGENT_ROUTING_DEBOUNCE":      "100ms",
				"SUPERAGENT_JOB_RESCUE_AFTER":      "5s",
				"SUPERAGENT_EXECUTOR_LEASE":        "3s",
			}
		}
		t.Cleanup(func() {
			if !t.Failed() {
				return
			}
			rows, err := openDB(t, dbURL).Query(context.Background(), `SELECT id, kind, state, attempt, CAST(errors AS TEXT) FROM river_job ORDER BY id`)
			if err != nil {
				t.Logf("reading jobs: %v", err)
				return
			}
			defer rows.Close()
			for rows.Next() {
				var (
					id, attempt       int64
					kind, state, errs string
				)
				_ = rows.Scan(&id, &kind, &state, &attempt, &errs)
				t.Logf("job %d %s %s attempt %d errors %s", id, kind, state, attempt, tail(errs, 3))
			}
			for i, r := range model.Requests() {
				t.Logf("model request %d (%s): %s", i, r.Model, tail(r.LastMessage().Content, 3))
			}
		})
		first := start(t, "serve-1", env(), "serve")
		first.waitHTTP("/readyz", 30*time.Second)
		installApp(t, first, secret, "exec-install", dbURL)
		body := commentPayload(t, "@superagent please fix the typo in the README")
		deliverGitHub(t, first, secret, "issue_comment", "exec-1", body)

		select {
		case <-created:
		case <-time.After(3 * time.Minute):
			t.Fatalf("the Executor never opened the pull request; model requests: %d", len(model.Requests()))
		}
		require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
		<-first.done
		require.Len(t, gh.PullRequests(helloRepo), 1, "GitHub has the pull request the dead process never heard of")

		second := start(t, "serve-2", env(), "serve")
		second.waitHTTP("/readyz", 30*time.Second)
		resumed := time.Now()
		var ticket struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
			PR    int    `json:"pull_request"`
		}
		waitFor(t, 4*time.Minute, "the resumed Ticket to be in review", func() bool {
			var list struct {
				Tickets []json.RawMessage `json:"tickets"`
			}
			getJSON(t, "http://"+second.addr+"/api/tickets", token, &list)
			if len(list.Tickets) != 1 {
				return false
			}
			require.NoError(t, json.Unmarshal(list.Tickets[0], &ticket))
			return ticket.State == "in_review"
		})

		t.Logf("the second process finished the Ticket %s after it was ready", time.Since(resumed).Round(time.Second))
		prs := gh.PullRequests(helloRepo)
		require.Len(t, prs, 1, "no second pull request after the kill")
		require.True(t, prs[0].Draft)
		require.Equal(t, prs[0].Number, ticket.PR)
		branch := prs[0].Head
		out, err := exec.Command("git", "--git-dir", bare, "show", branch+":README.md").CombinedOutput()
		require.NoError(t, err, string(out))
		require.Contains(t, string(out), "This project says hello.")

		var confirms, results int
		for _, c := range gh.Comments() {
			if !strings.HasPrefix(c.Body, promptparts.DefaultAgentLine+"\n\n") || strings.Contains(c.Body, "<!-- superagent:progress:ticket:") {
				// The progress comment quotes the Reports; it is counted apart.
				continue
			}
			switch {
			case strings.Contains(c.Body, "I will fix the misspelled word"):
				confirms++
			case strings.Contains(c.Body, "draft pull request"):
				results++
			}
		}
		require.Equal(t, 1, confirms, "one confirmation, with the agent line")
		require.Equal(t, 1, results, "one result, with the agent line")
		eyes := 0
		for _, r := range gh.Reactions() {
			if r.Content == "eyes" {
				eyes++
			}
		}
		require.Equal(t, 1, eyes, "one acknowledgement")

		// No token reached the model, a transcript or a log.
		tokenLike := regexp.MustCompile(`ghs_fake[0-9_]+`)
		var transcript strings.Builder
		rows, err := openDB(t, dbURL).Query(context.Background(), `SELECT content || reasoning || tool_calls FROM session_messages`)
		require.NoError(t, err)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			transcript.WriteString(s)
		}
		require.NoError(t, rows.Err())
		rows.Close()
		for _, r := range model.Requests() {
			transcript.WriteString(r.Text() + r.System())
		}
		require.Empty(t, tokenLike.FindAllString(transcript.String(), -1))
		for _, p := range []*proc{first, second} {
			require.Empty(t, tokenLike.FindAllString(p.stderr.String()+p.stdout.String(), -1), p.name)
			require.NotContains(t, p.stderr.String(), modelKey, p.name)
		}
		require.Positive(t, gh.TokensIssued())

		code, _ := second.stop(shutdownWithin)
		require.Equal(t, 0, code)
	})
}

var candidateCard = regexp.MustCompile(`(?m)^card ([0-9]+) · `)

// shownCard is a card a main Session turn shows as a candidate: its id and
// what the turn says of it.
type shownCard struct {
	id   int64
	text string
}

// candidates are the candidate cards in a turn's message.
func candidates(content string) []shownCard {
	var out []shownCard
	chunks := candidateCard.FindAllStringSubmatchIndex(content, -1)
	for i, m := range chunks {
		end := len(content)
		if i+1 < len(chunks) {
			end = chunks[i+1][0]
		}
		if chunk := content[m[0]:end]; strings.Contains(chunk, "\nstate: candidate") {
			c := shownCard{text: chunk}
			_, _ = fmt.Sscan(content[m[2]:m[3]], &c.id)
			out = append(out, c)
		}
	}
	return out
}

// router plays the main Session: every candidate it is shown becomes a
// new Ticket in the repository; anything else is acknowledged.
func router(req fakeopenai.Request) fakeopenai.Reply {
	last := req.LastMessage()
	if last.Role != "user" {
		return fakeopenai.Text("Nothing else to route.")
	}
	var decisions []map[string]any
	for _, c := range candidates(last.Content) {
		decisions = append(decisions, map[string]any{"candidate": c.id, "action": "new", "title": "Fix the README typo", "repo": helloRepo,
			"note": "explicit request from a writer"})
	}
	if len(decisions) == 0 {
		return fakeopenai.Text("Noted.")
	}
	args, _ := json.Marshal(map[string]any{"decisions": decisions})
	return fakeopenai.Calls(fakeopenai.Call("", "orchestrator_route", string(args)))
}

// readmeFixer plays the Executor, deciding each step from the results it
// has read, so a resumed conversation continues where it stopped.
func readmeFixer(req fakeopenai.Request) fakeopenai.Reply {
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
		if m.Role == "tool" && !strings.HasPrefix(m.Content, "refused") && !strings.HasPrefix(m.Content, "error") &&
			!strings.Contains(m.Content, "interrupted") {
			results[byID[m.ToolCallID]]++
		}
	}
	call := func(name, args string) fakeopenai.Reply {
		return fakeopenai.Calls(fakeopenai.Call("", name, args))
	}
	switch {
	case results["reply"] == 0:
		return call("reply", `{"purpose":"confirm","in_reply_to":`+card+`,"text":"I will fix the misspelled word in README.md and open a pull request with the change."}`)
	case results["edit_file"] == 0:
		return call("edit_file", `{"path":"README.md","old_text":"projetc","new_text":"project"}`)
	case results["run_command"] == 0:
		return call("run_command", `{"command":"sh test.sh","timeout_seconds":30}`)
	case results["git_commit"] == 0:
		return call("git_commit", `{"message":"Fix a typo in the README"}`)
	case results["git_push"] == 0:
		return call("git_push", `{}`)
	case results["pr_open"] == 0:
		return call("pr_open", `{"title":"Fix a typo in the README","body":"Fixes the misspelled word. Verified with ./test.sh (exit 0)."}`)
	case results["reply"] < 2:
		return call("reply", `{"purpose":"result","in_reply_to":`+card+`,"text":"The fix is in a draft pull request; ./test.sh passes."}`)
	case results["report"] == 0:
		return call("report", `{"state":"done","summary":"Fixed the README typo in a draft pull request; verified with ./test.sh, which passes.",`+
			`"human_action":"Please review the draft pull request and mark it ready if the wording suits you."}`)
	}
	return fakeopenai.Text("Done.")
}
