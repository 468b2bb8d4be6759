package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/session"
)

// issueComment is the issue_comment.created fixture on issue number of
// helloRepo, as a new comment (its own id) saying text.
func issueComment(t *testing.T, number int, text string) []byte {
	t.Helper()
	p := readFixture(t, "issue_comment.created.json")
	p["installation"] = map[string]any{"id": 957387, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTU3Mzg3"}
	issue := p["issue"].(map[string]any)
	for k, v := range issue {
		if s, ok := v.(string); ok {
			issue[k] = strings.ReplaceAll(s, "/issues/1", fmt.Sprintf("/issues/%d", number))
		}
	}
	issue["number"] = number
	issue["id"] = 444500000 + number
	c := p["comment"].(map[string]any)
	c["id"] = 492700000 + number
	c["body"] = text
	for _, k := range []string{"html_url", "issue_url", "url"} {
		if s, ok := c[k].(string); ok {
			c[k] = strings.ReplaceAll(s, "/issues/1", fmt.Sprintf("/issues/%d", number))
		}
	}
	return marshal(t, p)
}

// look is what a scripted Executor reads from a request: the case it
// plays (named in the request), the card that started it, the calls that
// succeeded or were refused, and whether the host just reminded it.
type look struct {
	kase, card  string
	ok, refused map[string]int
	last        string
	reminded    bool
	wrapUp      bool
}

var caseWord = regexp.MustCompile(`case-([a-z-]+)`)

func lookAt(req fakeopenai.Request) look {
	l := look{card: "0", ok: map[string]int{}, refused: map[string]int{}}
	byID := map[string]string{}
	for _, m := range req.Messages {
		if m.Role == "user" && l.kase == "" {
			if c := caseWord.FindStringSubmatch(m.Content); c != nil {
				l.kase = c[1]
			}
			if c := candidateCard.FindStringSubmatch(m.Content); c != nil {
				l.card = c[1]
			}
		}
		for _, c := range m.ToolCalls {
			byID[c.ID] = c.Name
		}
		if m.Role == "tool" {
			if strings.HasPrefix(m.Content, "refused") {
				l.refused[byID[m.ToolCallID]]++
			} else if !strings.HasPrefix(m.Content, "error") {
				l.ok[byID[m.ToolCallID]]++
			}
		}
	}
	last := req.LastMessage()
	l.last = last.Content
	l.reminded = last.Role == "user" && strings.HasPrefix(last.Content, session.NudgePrefix)
	l.wrapUp = last.Role == "user" && strings.Contains(last.Content, "limit of this session")
	return l
}

// once answers r the first time key asks, and false after.
type once struct {
	mu   sync.Mutex
	done map[string]bool
}

func (o *once) first(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done[key] {
		return false
	}
	if o.done == nil {
		o.done = map[string]bool{}
	}
	o.done[key] = true
	return true
}

// sloppyExecutor plays, per Ticket, one of the mistakes real models make
// (the case its request names), the way issue 44 saw them.
func sloppyExecutor(faults *once) func(fakeopenai.Request) fakeopenai.Reply {
	call := func(name, args string) fakeopenai.Reply { return fakeopenai.Calls(fakeopenai.Call("", name, args)) }
	return func(req fakeopenai.Request) fakeopenai.Reply {
		l := lookAt(req)
		confirm := call("reply", `{"purpose":"confirm","in_reply_to":`+l.card+`,"text":"I will fix the misspelled word in README.md and open a pull request with the change."}`)
		switch l.kase {
		case "text-only":
			// Says what it will do, and never does it.
			return fakeopenai.Text("I'll now fix the file.")
		case "loop":
			switch {
			case l.wrapUp:
				return fakeopenai.Text("Blocked: ./test.sh keeps failing with the same output.")
			case l.ok["reply"] == 0:
				return confirm
			}
			return call("run_command", `{"command":"sh test.sh","timeout_seconds":30}`)
		case "bad-message":
			switch {
			case l.ok["reply"] == 0:
				return confirm
			case l.refused["report"] == 0:
				return call("report", `{"state":"waiting","summary":"Which line to fix is unclear.","human_action":"Should the fix also reword the first line of the README?","message":999999}`)
			case l.ok["report"] == 0:
				return call("report", `{"state":"waiting","summary":"Which line to fix is unclear.","human_action":"Should the fix also reword the first line of the README?","message":`+l.card+`}`)
			}
			return fakeopenai.Text("Waiting for the answer.")
		case "done-before-push", "done-then-push":
			switch {
			case l.ok["git_commit"] == 0:
				return fix(l, confirm)
			case l.refused["report"] == 0:
				return call("report", `{"state":"done","summary":"Opened a pull request with the fix; verified with ./test.sh, which passes."}`)
			case l.kase == "done-before-push":
				return fakeopenai.Text("Done.")
			case l.ok["git_push"] == 0:
				return call("git_push", `{}`)
			case l.ok["pr_open"] == 0:
				return call("pr_open", `{"title":"Fix a typo in the README","body":"Fixes the misspelled word. Verified with ./test.sh (exit 0)."}`)
			case l.ok["report"] == 0:
				return call("report", `{"state":"done","summary":"Fixed the README typo in a draft pull request; verified with ./test.sh, which passes.",`+
					`"human_action":"Please review the draft pull request and mark it ready if the wording suits you."}`)
			}
			return fakeopenai.Text("Done.")
		case "empty-then-pr":
			if faults.first("empty") {
				return fakeopenai.Empty()
			}
			switch {
			case l.ok["git_commit"] == 0:
				return fix(l, confirm)
			case l.ok["git_push"] == 0:
				return call("git_push", `{}`)
			case l.ok["pr_open"] == 0:
				return call("pr_open", `{"title":"Fix a typo in the README","body":"Fixes the misspelled word."}`)
			case l.reminded:
				return call("report", `{"state":"done","summary":"Fixed the README typo in a draft pull request; verified with ./test.sh, which passes.",`+
					`"human_action":"Please review the draft pull request and mark it ready if the wording suits you."}`)
			case l.ok["report"] == 0:
				// The end of a turn after the pull request opened, before any report.
				return fakeopenai.Text("The pull request is open.")
			}
			return fakeopenai.Text("Done.")
		case "no-choices":
			if faults.first("no-choices") {
				return fakeopenai.NoChoices()
			}
			return readmeFixer(req)
		}
		return fakeopenai.Text("Nothing to do.")
	}
}

// fix confirms, fixes the typo and commits it, a step a request.
func fix(l look, confirm fakeopenai.Reply) fakeopenai.Reply {
	switch {
	case l.ok["reply"] == 0:
		return confirm
	case l.ok["edit_file"] == 0:
		return fakeopenai.Calls(fakeopenai.Call("", "edit_file", `{"path":"README.md","old_text":"projetc","new_text":"project"}`))
	}
	return fakeopenai.Calls(fakeopenai.Call("", "git_commit", `{"message":"Fix a typo in the README"}`))
}

var forwardHint = regexp.MustCompile(`orchestrator_forward \{"report": ([0-9]+)\}`)

// forwardingRouter routes as router does and forwards every question a
// Report asks, as the main Session's instructions say.
func forwardingRouter(req fakeopenai.Request) fakeopenai.Reply {
	last := req.LastMessage()
	if last.Role == "user" {
		if m := forwardHint.FindAllStringSubmatch(last.Content, -1); m != nil {
			var calls []fakeopenai.ToolCall
			for _, r := range m {
				calls = append(calls, fakeopenai.Call("", "orchestrator_forward", `{"report":`+r[1]+`}`))
			}
			if len(candidates(last.Content)) == 0 {
				return fakeopenai.Calls(calls...)
			}
		}
	}
	return router(req)
}

// sloppyCases are the issues of TestSloppyModelsLeaveTicketsAPersonCanActOn
// and what each ends in.
var sloppyCases = []struct {
	issue int
	kase  string
	// state is the Ticket's state at the end; blocked says the host
	// reported it blocked and told the requester.
	state   string
	blocked bool
	// maxRequests bounds the model requests its Session makes.
	maxRequests int
}{
	{11, "text-only", "waiting", true, 2},
	{12, "empty-then-pr", "in_review", false, 12},
	{13, "done-before-push", "waiting", true, 8},
	{14, "done-then-push", "in_review", false, 12},
	{15, "bad-message", "waiting", false, 6},
	{16, "loop", "waiting", true, 8},
	{17, "no-choices", "in_review", false, 12},
}

// TestSloppyModelsLeaveTicketsAPersonCanActOn runs, through the binary, a
// model that makes the mistakes of issue 44, one Ticket each: it answers
// in text only and never reports; answers empty once and ends its turn
// after opening the pull request; reports done before anything is pushed
// (claiming a pull request) and then ends its turn, or pushes once told;
// names a message that does not exist under its question; runs the same
// failing command again and again; and answers once with no choices at
// all. Every Ticket ends in a state a person can act on, within a bounded
// number of model requests: a pull request in review, a question that
// reached the person, or a blocked Report written by the host, told to the
// requester in one sentence and shown on the edited progress comment.
// Nothing is written twice, the work of the Ticket that never pushed is
// reported as not delivered and kept (its workspace and its checkpoint
// ref), and no job failed.
func TestSloppyModelsLeaveTicketsAPersonCanActOn(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh, bare := typoRepo(t)
		faults := &once{}
		executorModel := sloppyExecutor(faults)
		model := fakeopenai.New(t)
		model.Fallback(fakeopenai.Respond(func(req fakeopenai.Request) fakeopenai.Reply {
			if req.Model == "router-model" {
				return forwardingRouter(req)
			}
			return executorModel(req)
		}))
		const secret, token = "sloppy-webhook-secret", "sloppy-admin-token-0123456789"
		env := serviceEnv(t, dbURL, gh, model, secret, token)
		env["SUPERAGENT_PUBLIC_URL"] = "https://agent.example.com"
		dataDir := env["SUPERAGENT_DATA_DIR"]
		p := start(t, "serve", env, "serve")
		p.waitHTTP("/readyz", 30*time.Second)
		installApp(t, p, secret, "install-"+token, dbURL)
		store := openDB(t, dbURL)
		for _, c := range sloppyCases {
			deliverGitHub(t, p, secret, "issue_comment", fmt.Sprintf("sloppy-%d", c.issue),
				issueComment(t, c.issue, fmt.Sprintf("@superagent please fix the typo in the README (case-%s)", c.kase)))
		}

		// Each Ticket, by the issue it was asked on.
		type row struct {
			id          int64
			state       string
			requests    int
			hostReports int
		}
		tickets := func() map[int]row {
			rows, err := store.Query(context.Background(), `SELECT t.id, th.number, t.state,
    (SELECT CAST(COALESCE(SUM(s.requests), 0) AS BIGINT) FROM sessions s WHERE s.ticket_id = t.id),
    (SELECT count(*) FROM ticket_reports r WHERE r.ticket_id = t.id AND r.summary LIKE 'The Executor stopped without finishing:%')
FROM tickets t JOIN cards c ON c.id = t.source_card_id JOIN threads th ON th.id = c.thread_id`)
			require.NoError(t, err)
			defer rows.Close()
			out := map[int]row{}
			for rows.Next() {
				var r row
				var n int
				require.NoError(t, rows.Scan(&r.id, &n, &r.state, &r.requests, &r.hostReports))
				out[n] = r
			}
			require.NoError(t, rows.Err())
			return out
		}
		comments := func(issue int, has string) []fakegithub.Comment {
			var out []fakegithub.Comment
			for _, c := range gh.Comments() {
				if c.Number == issue && strings.Contains(c.Body, has) {
					out = append(out, c)
				}
			}
			return out
		}
		settled := func() bool {
			got := tickets()
			for _, c := range sloppyCases {
				r, ok := got[c.issue]
				if !ok || r.state != c.state || (c.blocked && len(comments(c.issue, "stopped work on")) == 0) {
					return false
				}
				if c.kase == "bad-message" && len(comments(c.issue, "Should the fix also reword")) == 0 {
					return false
				}
			}
			// The last job of each has ended: no Executor job is left.
			var n int
			require.NoError(t, store.QueryRow(context.Background(),
				`SELECT count(*) FROM river_job WHERE kind = 'execute_ticket' AND state NOT IN ('completed', 'cancelled', 'discarded')`).Scan(&n))
			return n == 0
		}
		waitFor(t, 6*time.Minute, "every Ticket to settle", settled)

		got := tickets()
		for _, c := range sloppyCases {
			r := got[c.issue]
			t.Logf("issue %d (%s): ticket %d %s after %d model requests", c.issue, c.kase, r.id, r.state, r.requests)
			require.LessOrEqual(t, r.requests, c.maxRequests, "%s: a bounded number of requests", c.kase)
			// One progress comment per issue, edited in place to what
			// the Ticket is now.
			progress := comments(c.issue, "<!-- superagent:progress:ticket:")
			require.Len(t, progress, 1, "%s: one progress comment", c.kase)
			require.Contains(t, progress[0].Body, "is **"+strings.ReplaceAll(c.state, "_", " "), "%s: the progress comment shows the state", c.kase)
			require.Positive(t, progress[0].Edits, "%s: edited in place", c.kase)
			require.LessOrEqual(t, len(comments(c.issue, "I will fix the misspelled word")), 1, "%s: at most one confirmation", c.kase)
			if c.blocked {
				require.Equal(t, 1, r.hostReports, "%s: one blocked Report from the host", c.kase)
				told := comments(c.issue, "stopped work on")
				if len(told) > 0 {
					t.Logf("issue %d: told %q", c.issue, told[0].Body)
				}
				require.Len(t, told, 1, "%s: the requester is told once", c.kase)
				require.Equal(t, 1, sentencesIn(strings.SplitN(told[0].Body, "\n\n", 2)[1]), "%s: in one sentence: %s", c.kase, told[0].Body)
				require.Contains(t, progress[0].Body, "Latest report (blocked): The Executor stopped without finishing", c.kase)
			} else {
				require.Zero(t, r.hostReports, c.kase)
			}
		}
		prs := gh.PullRequests(helloRepo)
		require.Len(t, prs, 3, "one pull request for each Ticket that delivered: empty-then-pr, done-then-push, no-choices")

		// The text-only Ticket: reminded once, then reported by the host.
		report := func(issue int) string {
			var s string
			require.NoError(t, store.QueryRow(context.Background(), `SELECT summary FROM ticket_reports WHERE ticket_id = $1 ORDER BY id DESC LIMIT 1`,
				got[issue].id).Scan(&s))
			return s
		}
		require.Contains(t, report(11), `its turn ended twice without a report (its last words: "I'll now fix the file.")`)
		// What a reminder costs: its text, and the request it makes.
		var textOnly []fakeopenai.Request
		for _, r := range model.Requests() {
			if r.Model == "executor-model" && strings.Contains(r.Text(), "case-text-only") {
				textOnly = append(textOnly, r)
			}
		}
		require.Len(t, textOnly, 2)
		nudge := textOnly[1].LastMessage().Content
		require.True(t, strings.HasPrefix(nudge, session.NudgePrefix))
		t.Logf("the reminder is %d bytes, %d words; the request it made is about %d tokens (the one before, about %d)",
			len(nudge), len(strings.Fields(nudge)), approxTokens(textOnly[1]), approxTokens(textOnly[0]))

		// The Ticket that never pushed: done refused, the host's Report
		// says what is not pushed and where it is kept, and it is kept.
		doneRefused := 0
		for _, r := range model.Requests() {
			for _, m := range r.Messages {
				if m.Role == "tool" && strings.HasPrefix(m.Content, "refused: not done: the workspace holds work GitHub does not have") &&
					strings.Contains(m.Content, "the summary speaks of a pull request") {
					doneRefused++
					break
				}
			}
		}
		require.Positive(t, doneRefused, "report done was refused, naming the unpushed commit and the claimed pull request")
		stuck := got[13].id
		require.Contains(t, report(13), "not pushed: commit ")
		wip := fmt.Sprintf("refs/superagent/wip/%d", stuck)
		require.Contains(t, report(13), wip)
		out, err := exec.Command("git", "--git-dir", bare, "show", wip+":README.md").CombinedOutput()
		require.NoError(t, err, string(out))
		require.Contains(t, string(out), "This project says hello.", "the fix is on GitHub, in the checkpoint ref")
		require.Zero(t, gh.Pushes(helloRepo, fmt.Sprintf("refs/heads/superagent/ticket-%d", stuck)), "the branch was never pushed")
		_, err = os.Stat(filepath.Join(dataDir, "workspaces", fmt.Sprintf("ticket-%d", stuck), "README.md"))
		require.NoError(t, err, "the workspace with the commit is kept")
		require.Contains(t, comments(13, "stopped work on")[0].Body, "not pushed")

		// The Ticket told to push did: its fix is on its branch.
		for _, pr := range prs {
			out, err := exec.Command("git", "--git-dir", bare, "show", pr.HeadSHA+":README.md").CombinedOutput()
			require.NoError(t, err, string(out))
			require.Contains(t, string(out), "This project says hello.")
		}

		// The question under a message that does not exist was refused,
		// asked again under the request, and reached the person once.
		require.Len(t, comments(15, "Should the fix also reword the first line of the README?"), 1)

		// The loop: one note, and the Session wrapped up after six.
		var runs, notes int
		var last fakeopenai.Request
		for _, r := range model.Requests() {
			if r.Model == "executor-model" && strings.Contains(r.Text(), "case-loop") {
				last = r
			}
		}
		for _, m := range last.Messages {
			for _, c := range m.ToolCalls {
				if c.Name == "run_command" {
					runs++
				}
			}
			if strings.HasPrefix(m.Content, session.RepeatPrefix) {
				notes++
			}
		}
		require.Equal(t, 6, runs, "six runs of the same failing command")
		require.Equal(t, 1, notes)
		require.Contains(t, report(16), "it kept making the same call with the same result")

		// No choices, and an empty answer, were asked again in place: no
		// job failed.
		var failed int
		require.NoError(t, store.QueryRow(context.Background(),
			`SELECT count(*) FROM river_job WHERE kind = 'execute_ticket' AND attempt > 1`).Scan(&failed))
		require.Zero(t, failed, "no Executor job was retried")
		var retried int
		require.NoError(t, store.QueryRow(context.Background(),
			`SELECT count(*) FROM session_requests WHERE finish_reason IN ('retried:no_choices', 'retried:empty')`).Scan(&retried))
		require.Equal(t, 2, retried)

		// The record of how the model behaved, on /metrics and on the
		// Ticket's page.
		metrics := scrape(t, p)
		for _, series := range []string{
			`superagent_model_nudges_total{model="executor-model",outcome="reminded",role="executor"}`,
			`superagent_model_nudges_total{model="executor-model",outcome="stopped",role="executor"}`,
			`superagent_model_loops_total{kind="repeated_call",model="executor-model",outcome="stopped",role="executor"}`,
			`superagent_model_faults_total{kind="no_choices",model="executor-model",outcome="retried",role="executor"}`,
			`superagent_model_refusals_total{kind="host_rule",model="executor-model",role="executor"}`,
		} {
			require.Contains(t, metrics, series+" ", series)
		}
		var api struct {
			Behaviour []struct {
				Model          string         `json:"model"`
				Refusals       map[string]int `json:"refusals"`
				Nudges         int            `json:"nudges"`
				Unfinished     int            `json:"unfinished_turns"`
				RepeatNotes    int            `json:"repeat_notes"`
				RepeatsStopped int            `json:"repeats_stopped"`
				Faults         map[string]int `json:"faults_retried"`
			} `json:"behaviour"`
		}
		getJSON(t, fmt.Sprintf("http://%s/api/tickets/%d", p.addr, got[16].id), token, &api)
		require.Len(t, api.Behaviour, 1)
		require.Equal(t, "executor-model", api.Behaviour[0].Model)
		require.Equal(t, 1, api.Behaviour[0].RepeatNotes)
		require.Equal(t, 1, api.Behaviour[0].RepeatsStopped)
		getJSON(t, fmt.Sprintf("http://%s/api/tickets/%d", p.addr, got[11].id), token, &api)
		require.Equal(t, 1, api.Behaviour[0].Nudges)
		require.Equal(t, 1, api.Behaviour[0].Unfinished)
		getJSON(t, fmt.Sprintf("http://%s/api/tickets/%d", p.addr, got[15].id), token, &api)
		require.Equal(t, 1, api.Behaviour[0].Refusals["host_rule"], "the report naming a message that does not exist")
		getJSON(t, fmt.Sprintf("http://%s/api/tickets/%d", p.addr, got[17].id), token, &api)
		require.Equal(t, 1, api.Behaviour[0].Faults["no_choices"])

		code, _ := p.stop(shutdownWithin)
		require.Equal(t, 0, code)
		logs := p.stderr.String()
		require.Contains(t, logs, `"by":"host"`)
	})
}

// sentencesIn counts the sentences of a plain text: runs ending in . ! ?
// followed by a space or the end.
func sentencesIn(s string) int {
	return len(regexp.MustCompile(`[.!?](\s|$)`).FindAllString(strings.TrimSpace(s), -1))
}

func scrape(t *testing.T, p *proc) string {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
