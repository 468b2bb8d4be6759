package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/promptparts"
)

// TestScaleOut runs many Tickets through processes sharing one PostgreSQL,
// fake model, real git and the sandbox on: first `serve` alone, then
// `serve` and two `worker`s. Every Ticket is executed by one process at a
// time and writes to GitHub once: one branch pushed once, one draft pull
// request, one confirmation, one result and one 👀 per request. The
// throughput of each run is logged per process count.
//
// The suite runs a few Tickets; SUPERAGENT_SCALE_TICKETS=200 (make
// bench-scale) runs the issue's load on the three processes.
func TestScaleOut(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	tickets := 6
	if v := os.Getenv("SUPERAGENT_SCALE_TICKETS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "SUPERAGENT_SCALE_TICKETS")
		tickets = n
	}
	dbURL := postgresURL(t)
	gh, _ := typoRepo(t)
	// One process, a quarter of the load, is the baseline. Every request is
	// on an issue of its own, there before the first pull request, so that
	// pull requests are numbered after them, as on GitHub.
	alone := max(tickets/4, 2)
	for n := 1; n <= alone+tickets; n++ {
		gh.AddIssue(helloRepo, n, fmt.Sprintf("Typo in the README, report %d", n), "This projetc says hello.", "Codertocat")
	}
	model := scriptedModel(t, readmeFixer)
	const secret, token = "scale-webhook-secret", "scale-admin-token-0123456789"
	env := func() map[string]string {
		e := serviceEnv(t, dbURL, gh, model, secret, token)
		// GitHub's pacing of one installation (500 writes an hour, some
		// eight per Ticket) would set the pace, not the processes.
		e["SUPERAGENT_GITHUB_WRITES_PER_MINUTE"] = "100000"
		e["SUPERAGENT_GITHUB_WRITES_PER_HOUR"] = "1000000"
		return e
	}
	serve := start(t, "serve", env(), "serve")
	serve.waitHTTP("/readyz", 30*time.Second)
	installApp(t, serve, secret, "scale-install", dbURL)
	procs := []*proc{serve}
	d := openDB(t, dbURL)

	issue := 0
	run := func(n int) time.Duration {
		t.Helper()
		first := issue + 1
		begin := time.Now()
		for range n {
			issue++
			deliverGitHub(t, serve, secret, "issue_comment", fmt.Sprintf("scale-%d", issue), issuePayload(t, issue))
		}
		waitFor(t, time.Duration(n+10)*30*time.Second, fmt.Sprintf("Tickets for issues %d to %d in review", first, issue), func() bool {
			var inReview int
			require.NoError(t, d.QueryRow(context.Background(), "SELECT count(*) FROM tickets WHERE state = 'in_review'").Scan(&inReview))
			return inReview == issue
		})
		return time.Since(begin)
	}

	took := run(alone)
	t.Logf("1 process: %d Tickets in %s: %.1f Tickets/min", alone, took.Round(time.Second), float64(alone)/took.Minutes())

	for i := 1; i <= 2; i++ {
		w := start(t, fmt.Sprintf("worker-%d", i), env(), "worker")
		w.waitLog(`"msg":"working"`, 30*time.Second)
		procs = append(procs, w)
	}
	took = run(tickets)
	t.Logf("3 processes: %d Tickets in %s: %.1f Tickets/min", tickets, took.Round(time.Second), float64(tickets)/took.Minutes())

	// Each Ticket was executed by one process at a time. A Session ends a
	// moment after its Ticket went in review.
	var runs map[int64][]executorRun
	waitFor(t, time.Minute, "every Executor Session to end", func() bool {
		var running int
		runs, running = executorRuns(t, procs)
		return running == 0
	})
	perProcess := map[string]int{}
	for ticket, rs := range runs {
		sort.Slice(rs, func(a, b int) bool { return rs[a].start.Before(rs[b].start) })
		for i := 1; i < len(rs); i++ {
			require.False(t, rs[i].start.Before(rs[i-1].stop),
				"ticket %d ran on %s from %s while %s ran it until %s", ticket, rs[i].proc, rs[i].start, rs[i-1].proc, rs[i-1].stop)
		}
		for _, r := range rs {
			perProcess[r.proc]++
		}
	}
	require.Len(t, runs, issue, "every Ticket was executed")
	t.Logf("Executor Sessions per process: %v", perProcess)

	// Every request wrote to GitHub once.
	prs := gh.PullRequests(helloRepo)
	require.Len(t, prs, issue, "one pull request per Ticket")
	for _, pr := range prs {
		require.True(t, pr.Draft)
		require.Equal(t, 1, gh.Pushes(helloRepo, "refs/heads/"+pr.Head), "%s pushed once", pr.Head)
	}
	confirms, results := map[int]int{}, map[int]int{}
	for _, c := range gh.Comments() {
		if !strings.HasPrefix(c.Body, promptparts.DefaultAgentLine+"\n\n") || strings.Contains(c.Body, "<!-- superagent:progress:ticket:") {
			continue
		}
		switch {
		case strings.Contains(c.Body, "I will fix the misspelled word"):
			confirms[c.Number]++
		case strings.Contains(c.Body, "draft pull request"):
			results[c.Number]++
		}
	}
	eyes := map[string]int{}
	for _, r := range gh.Reactions() {
		if r.Content == "eyes" {
			eyes[r.Subject]++
		}
	}
	for n := 1; n <= issue; n++ {
		require.Equal(t, 1, confirms[n], "issue %d: one confirmation", n)
		require.Equal(t, 1, results[n], "issue %d: one result", n)
	}
	require.Len(t, eyes, issue, "one 👀 per request")
	for subject, n := range eyes {
		require.Equal(t, 1, n, subject)
	}
	for _, p := range procs {
		code, _ := p.stop(shutdownWithin)
		require.Equal(t, 0, code, p.name)
	}
}

// issuePayload is a writer's request on issue n of helloRepo, as GitHub
// delivers a new comment: each issue its own, with its own comment.
func issuePayload(t *testing.T, n int) []byte {
	t.Helper()
	var payload map[string]any
	require.NoError(t, json.Unmarshal(commentPayload(t, "@superagent please fix the typo in the README"), &payload))
	is := payload["issue"].(map[string]any)
	num := strconv.Itoa(n)
	for _, k := range []string{"url", "labels_url", "comments_url", "events_url", "html_url"} {
		is[k] = strings.Replace(is[k].(string), "/issues/1", "/issues/"+num, 1)
	}
	is["number"] = n
	is["id"] = 444500000 + n
	is["title"] = "Typo in the README, report " + num
	c := payload["comment"].(map[string]any)
	id := strconv.Itoa(492700400 + n)
	c["id"] = 492700400 + n
	c["url"] = "https://api.github.com/repos/" + helloRepo + "/issues/comments/" + id
	c["html_url"] = "https://github.com/" + helloRepo + "/issues/" + num + "#issuecomment-" + id
	c["issue_url"] = is["url"]
	body, err := json.Marshal(payload)
	require.NoError(t, err)
	return body
}

// executorRun is one Executor Session of a Ticket on one process, from
// its "executor started" line to its "executor stopped" line.
type executorRun struct {
	proc        string
	start, stop time.Time
}

// executorRuns reads the processes' logs for their ended Executor
// Sessions, by Ticket, and counts those still running.
func executorRuns(t *testing.T, procs []*proc) (map[int64][]executorRun, int) {
	t.Helper()
	runs := map[int64][]executorRun{}
	running := 0
	for _, p := range procs {
		open := map[int64]time.Time{}
		sc := bufio.NewScanner(strings.NewReader(p.stderr.String()))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line struct {
				Time   time.Time `json:"time"`
				Msg    string    `json:"msg"`
				Ticket int64     `json:"ticket"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			switch line.Msg {
			case "executor started":
				open[line.Ticket] = line.Time
			case "executor stopped":
				began, ok := open[line.Ticket]
				require.True(t, ok, "%s: ticket %d stopped without starting", p.name, line.Ticket)
				runs[line.Ticket] = append(runs[line.Ticket], executorRun{proc: p.name, start: began, stop: line.Time})
				delete(open, line.Ticket)
			}
		}
		require.NoError(t, sc.Err())
		running += len(open)
	}
	return runs, running
}
