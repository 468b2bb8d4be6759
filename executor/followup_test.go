package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// The tests of issue 8 drive a Ticket past its first pull request: the
// opener brain opens the draft and reports progress, leaving the Ticket
// working; each test then admits the follow-ups ingestion would (review
// comments, reviews, failed checks) and runs the Executor again with a
// brain that reacts to the cards of its current turn.

// turn is what the model sees of its current turn: the messages appended
// since it last ended a turn with text, and the calls it made since.
type turn struct {
	// first is true until the model ends its first turn: it works on the
	// assignment.
	first bool
	// cards joins the user messages of the turn (the rendered cards).
	cards string
	steps []step
}

func current(req fakeopenai.Request) turn {
	start, first := 0, true
	for i, m := range req.Messages {
		// An answer the host's reminder follows did not end the turn.
		reminded := i+1 < len(req.Messages) && strings.HasPrefix(req.Messages[i+1].Content, session.NudgePrefix)
		if m.Role == "assistant" && len(m.ToolCalls) == 0 && m.Content != "" && !reminded {
			start, first = i+1, false
		}
	}
	tail := fakeopenai.Request{Messages: req.Messages[start:]}
	var cards strings.Builder
	for _, m := range tail.Messages {
		if m.Role == "user" {
			cards.WriteString(m.Content)
			cards.WriteString("\n")
		}
	}
	return turn{first: first, cards: cards.String(), steps: steps(tail)}
}

// result is the result of the turn's last call of name, or "" when it made
// none.
func (tn turn) result(name string) string {
	for i := len(tn.steps) - 1; i >= 0; i-- {
		if tn.steps[i].name == name {
			return tn.steps[i].result
		}
	}
	return ""
}

// called reports whether the turn called name, whatever the outcome.
func (tn turn) called(name string) bool {
	for _, s := range tn.steps {
		if s.name == name {
			return true
		}
	}
	return false
}

// opener is the Executor's model up to the draft pull request: it
// confirms, fixes the README typo, verifies, pushes, opens the draft and
// reports progress instead of done, so follow-ups still reach the Ticket.
func opener(req fakeopenai.Request) fakeopenai.Reply {
	ss := steps(req)
	card := firstCard(req)
	switch {
	case !done(ss, "reply"):
		return call("reply", `{"purpose":"confirm","in_reply_to":`+card+`,"text":"I will fix the misspelled word in README.md and open a pull request with the change."}`)
	case !done(ss, "edit_file"):
		return call("edit_file", `{"path":"README.md","old_text":"projetc","new_text":"project"}`)
	case !done(ss, "run_command"):
		return call("run_command", `{"command":"sh test.sh","timeout_seconds":30}`)
	case !done(ss, "git_commit"):
		return call("git_commit", `{"message":"Fix a typo in the README"}`)
	case !done(ss, "git_push"):
		return call("git_push", `{}`)
	case !done(ss, "pr_open"):
		return call("pr_open", `{"title":"Fix a typo in the README","body":"Fixes the misspelled word. Verified with ./test.sh (exit 0)."}`)
	case !done(ss, "report"):
		return call("report", `{"state":"progress","summary":"The draft pull request is open; waiting for review and checks."}`)
	}
	return fakeopenai.Text("The draft pull request is open.")
}

// afterPR is a brain that opens the draft with opener, then answers each
// later turn with next.
func afterPR(next func(turn) fakeopenai.Reply) func(fakeopenai.Request) fakeopenai.Reply {
	return func(req fakeopenai.Request) fakeopenai.Reply {
		if tn := current(req); !tn.first {
			return next(tn)
		}
		return opener(req)
	}
}

// openPR runs the request through opener's draft pull request and returns
// the Ticket, waiting (the opener's turn ends after a progress report, and
// it reports waiting when the host reminds it), and its pull request's
// number.
func (e *env) openPR(t *testing.T) (tickets.Ticket, int) {
	t.Helper()
	tk, _ := e.request(t, "@superagent please fix the typo in the README")
	e.run(t, tk.ID)
	tk, err := e.store.Ticket(context.Background(), e.d, tk.ID)
	require.NoError(t, err)
	require.NotZero(t, tk.PullNumber, "the opener opened the draft")
	require.Equal(t, tickets.TicketWaiting, tk.State)
	return tk, tk.PullNumber
}

// pull is the fake's snapshot of pull request number.
func (e *env) pull(t *testing.T, number int) fakegithub.PullRequest {
	t.Helper()
	for _, p := range e.gh.PullRequests(repo) {
		if p.Number == number {
			return p
		}
	}
	t.Fatalf("no pull request %d", number)
	return fakegithub.PullRequest{}
}

func pullThread(number int) tickets.Thread {
	return tickets.Thread{Source: tickets.SourceGitHub, Key: fmt.Sprintf("github:%s#%d", repo, number), Repo: repo, Number: number}
}

func author(login string) tickets.Author {
	a := tickets.Author{ID: strconv.FormatInt(int64(len(login)), 10) + login, Login: login, Type: tickets.AuthorUser, Permission: "write"}
	if strings.HasSuffix(login, "[bot]") {
		a.Type, a.Permission = tickets.AuthorBot, "none"
	}
	return a
}

// reviewComment adds a review comment starting a thread on the pull
// request (on README.md unless spec says otherwise) and admits its card in
// the review thread, as ingestion would.
func (e *env) reviewComment(t *testing.T, pr int, spec fakegithub.ReviewCommentSpec) (id int64, threadID string, c tickets.Card) {
	t.Helper()
	if spec.Path == "" {
		spec.Path, spec.Line = "README.md", 3
	}
	id, threadID = e.gh.AddReviewComment(repo, pr, spec)
	th := pullThread(pr)
	th.Key += "/review-thread/" + strconv.FormatInt(id, 10)
	c = e.admitCard(t, tickets.NewCard{Source: tickets.SourceGitHub, Kind: "review_comment", Thread: th, Author: author(spec.Login),
		Text: spec.Body, URL: fmt.Sprintf("https://github.com/%s/pull/%d#discussion_r%d", repo, pr, id)})
	return id, threadID, c
}

// review adds a submitted review on the pull request and admits its card;
// it returns the review's id.
func (e *env) review(t *testing.T, pr int, login, state, body string) (int64, tickets.Card) {
	t.Helper()
	id := e.gh.AddReviewBody(repo, pr, login, state, body)
	return id, e.admitCard(t, tickets.NewCard{Source: tickets.SourceGitHub, Kind: "review", Thread: pullThread(pr), Author: author(login),
		Text: strings.ToLower(state) + ": " + body, URL: fmt.Sprintf("https://github.com/%s/pull/%d#pullrequestreview-%d", repo, pr, id)})
}

// checkFailure adds a failed GitHub Actions workflow run "CI" on the pull
// request's head — job name failing at its step "Run ./check.sh" with log,
// beside a lint job that passed — and admits its card as ingestion makes
// it from the workflow_run event, linking the run's page (or, with job,
// the failed job's page).
func (e *env) checkFailure(t *testing.T, pr int, name, log string, job bool) (fakegithub.WorkflowRun, tickets.Card) {
	t.Helper()
	p := e.pull(t, pr)
	run := e.gh.AddWorkflowRun(repo, p.HeadSHA, fakegithub.WorkflowRunSpec{Name: "CI", HeadBranch: p.Head, Jobs: []fakegithub.JobSpec{
		{Name: "lint", Conclusion: "success", Steps: []fakegithub.StepSpec{{Name: "Set up job", Conclusion: "success"}}, Log: "lint: ok\n"},
		{Name: name, Conclusion: "failure", Steps: []fakegithub.StepSpec{{Name: "Set up job", Conclusion: "success"},
			{Name: "Run ./check.sh", Conclusion: "failure"}, {Name: "Complete job", Conclusion: "success"}}, Log: log},
	}})
	url := run.HTMLURL
	if job {
		url += "/job/" + strconv.FormatInt(run.JobIDs[1], 10)
	}
	c := e.admitCard(t, tickets.NewCard{Source: tickets.SourceGitHub, Kind: "check_failure", Thread: pullThread(pr),
		Author: tickets.Author{Login: "github-actions", Type: tickets.AuthorBot}, Text: "CI: failure\nFix a typo in the README", URL: url})
	return run, c
}

// delivery is how card reached the Ticket's Executor.
func (e *env) delivery(t *testing.T, ticketID, cardID int64) tickets.Delivery {
	t.Helper()
	ds, err := e.store.Deliveries(context.Background(), e.d, ticketID)
	require.NoError(t, err)
	for _, d := range ds {
		if d.CardID == cardID {
			return d
		}
	}
	t.Fatalf("card %d never reached ticket %d", cardID, ticketID)
	return tickets.Delivery{}
}

// modelInput is everything the model was sent.
func (e *env) modelInput() string {
	var b strings.Builder
	for _, r := range e.model.Requests() {
		b.WriteString(r.System())
		b.WriteString(r.Text())
	}
	return b.String()
}

// modelCalls lists the calls of name the model made, with their results,
// in order, as the Sessions' transcripts hold them: a call that ended the
// Ticket has its result there though the model never read it.
func (e *env) modelCalls(name string) []step {
	rows, err := e.d.Query(context.Background(), `SELECT role, content, tool_calls, tool_call_id FROM session_messages ORDER BY session_id, seq`)
	if err != nil {
		panic(err)
	}
	defer rows.Close()
	var all []step
	byID := map[string]int{}
	for rows.Next() {
		var role, content, calls, callID string
		if err := rows.Scan(&role, &content, &calls, &callID); err != nil {
			panic(err)
		}
		var tcs []struct {
			ID        string `json:"id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}
		if calls != "" {
			if err := json.Unmarshal([]byte(calls), &tcs); err != nil {
				panic(err)
			}
		}
		for _, c := range tcs {
			byID[c.ID] = len(all)
			all = append(all, step{name: c.Name, args: c.Arguments})
		}
		if i, ok := byID[callID]; ok && role == "tool" {
			all[i].result = content
		}
	}
	if err := rows.Err(); err != nil {
		panic(err)
	}
	var out []step
	for _, s := range all {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

var discussion = regexp.MustCompile(`#discussion_r([0-9]+)`)

// threadOf finds, in a github_read review_threads result, the GraphQL id
// of the thread whose first comment is comment.
func threadOf(result, comment string) string {
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

// saveSettings saves the team's sections (a JSON object of the config
// API's "sections") through the promptparts service, as the admin panel
// does.
func saveSettings(t *testing.T, e *env, sections string) {
	t.Helper()
	ctx := context.Background()
	head, err := e.prompts.Head(ctx)
	require.NoError(t, err)
	_, err = e.prompts.SaveJSON(ctx, []byte(`{"base_revision": `+strconv.FormatInt(head, 10)+`, "sections": `+sections+`}`),
		promptparts.SaveMeta{Origin: promptparts.OriginPanel, Actor: "admin"})
	require.NoError(t, err)
}

// called reports whether any of ss calls name, whatever the outcome.
func called(ss []step, name string) bool {
	for _, s := range ss {
		if s.name == name {
			return true
		}
	}
	return false
}

// pullEnded admits the card ingestion makes when login merges (or closes)
// pull request pr, through the host's hook that ends the pull request's
// Ticket (jobs.Waker.PullEnded), as the main Session's CardAdmitted does.
func (e *env) pullEnded(t *testing.T, pr int, merged bool, login string) tickets.Card {
	t.Helper()
	kind := tickets.KindPullClosed
	if merged {
		kind = tickets.KindPullMerged
	}
	ctx := context.Background()
	deliverySeq.Lock()
	deliverySeq.n++
	n := deliverySeq.n
	deliverySeq.Unlock()
	var out tickets.Card
	require.NoError(t, e.d.InTx(ctx, func(tx *db.Tx) (err error) {
		out, err = e.store.Admit(ctx, tx, tickets.NewCard{DeliveryID: seed.Delivery(t, tx, "end"+strconv.Itoa(n)), Source: tickets.SourceGitHub,
			Kind: kind, Thread: pullThread(pr), Author: author(login), URL: fmt.Sprintf("https://github.com/%s/pull/%d", repo, pr)}, 0,
			tickets.HookFunc(func(ctx context.Context, tx *db.Tx, c tickets.Card) error {
				_, err := e.wake.PullEnded(ctx, tx, c)
				return err
			}))
		return err
	}))
	return out
}
