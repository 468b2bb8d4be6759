package executor_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/executor"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/tickets"
)

// pollUntil polls cond until it holds or a minute passes.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// crashDuring runs the typo fix and kills the process (cancels its work)
// while a write to path is in flight: GitHub has made the write, the
// Executor never sees the answer. landed says the write is visible on the
// fake. A restarted process then runs the Ticket to the end.
func crashDuring(t *testing.T, d *db.DB, path string, landed func(*env) bool) (*env, tickets.Ticket) {
	t.Helper()
	e := setup(t, d, typoFixer)
	tk, _ := e.request(t, "@superagent please fix the typo in the README")
	e.gh.FailNext("POST", path, fakegithub.Fault{Delay: 5 * time.Minute})

	ctx, crash := context.WithCancel(context.Background())
	defer crash()
	died := make(chan error, 1)
	go func() { died <- e.x.Execute(ctx, tk.ID, "process-1") }()
	pollUntil(t, "the write lands on GitHub", func() bool { return landed(e) })
	crash()
	select {
	case err := <-died:
		require.ErrorIs(t, err, context.Canceled, "the first process died mid-write")
	case <-time.After(time.Minute):
		t.Fatal("the first process did not stop")
	}
	require.Equal(t, 1, e.gh.Count("POST", path), "the write was sent once before the crash")
	var sending int
	require.NoError(t, d.QueryRow(context.Background(), `SELECT COUNT(*) FROM outgoing_messages WHERE ticket_id = $1 AND state = $2`,
		tk.ID, tickets.OutgoingSending).Scan(&sending))
	require.Equal(t, 1, sending, "the crash left the write's intent unresolved")

	// A restarted process: new executor, another holder.
	x := e.executor(t)
	run, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	pollUntil(t, "the first process's lease lapses", func() bool {
		err = x.Execute(run, tk.ID, "process-2")
		return !errors.Is(err, executor.ErrBusy)
	})
	require.NoError(t, err)
	return e, tk
}

// requireDeliveredOnce checks that the Ticket ended with exactly one of
// each write.
func requireDeliveredOnce(t *testing.T, e *env, tk tickets.Ticket) {
	t.Helper()
	ctx := context.Background()
	prs := e.gh.PullRequests(repo)
	require.Len(t, prs, 1, "one pull request")
	branch := "superagent/ticket-" + strconv.FormatInt(tk.ID, 10)
	require.Equal(t, branch, prs[0].Head)

	var confirms, results int
	for _, c := range e.gh.Comments() {
		switch {
		case strings.Contains(c.Body, "I will fix the misspelled word"):
			confirms++
		case strings.Contains(c.Body, "The fix is in a draft pull request"):
			results++
		}
	}
	require.Equal(t, 1, confirms, "one confirmation comment")
	require.Equal(t, 1, results, "one result comment")

	require.Equal(t, 1, e.gh.Pushes(repo, "refs/heads/"+branch), "the branch was pushed once")
	require.Equal(t, 1, strings.Count(gitLog(t, e.bare, branch), "Fix a typo in the README"), "one commit")

	got, err := e.store.Ticket(ctx, e.d, tk.ID)
	require.NoError(t, err)
	require.Equal(t, tickets.TicketInReview, got.State)
	require.Equal(t, prs[0].Number, got.PullNumber, "the Ticket knows the pull request opened before the crash")
	reports, err := e.store.Reports(ctx, e.d, tk.ID)
	require.NoError(t, err)
	var done int
	for _, r := range reports {
		if r.State == tickets.ReportDone {
			done++
		}
	}
	require.Equal(t, 1, done, "one done report")
}

func TestCrashWhileOpeningThePullRequestOpensItOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e, tk := crashDuring(t, d, "/repos/"+repo+"/pulls", func(e *env) bool { return len(e.gh.PullRequests(repo)) == 1 })
		requireDeliveredOnce(t, e, tk)
		// The restarted process asked GitHub rather than opening another.
		require.Equal(t, 1, e.gh.Count("POST", "/repos/"+repo+"/pulls"))
	})
}

func TestCrashWhileConfirmingPostsTheConfirmationOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e, tk := crashDuring(t, d, "/repos/"+repo+"/issues/1/comments", func(e *env) bool {
			for _, c := range e.gh.Comments() {
				if strings.Contains(c.Body, "I will fix the misspelled word") {
					return true
				}
			}
			return false
		})
		requireDeliveredOnce(t, e, tk)
		// The confirmation and the result: two posts, no repeat.
		require.Equal(t, 2, e.gh.Count("POST", "/repos/"+repo+"/issues/1/comments"))
	})
}
