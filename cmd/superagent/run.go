package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/migrations"
	"github.com/superagent-dev/superagent/tickets"
)

const runUsage = `Usage:
  superagent run -repo DIR [-title TEXT] [-budget AMOUNT] "task text"
      work one Ticket on a local git checkout, from the terminal: the
      Executor clones DIR's current branch into its sandbox with the team's
      prompts (from SUPERAGENT_DATABASE_URL) and the configured model
      (SUPERAGENT_MODEL_*), and its git_push pushes the branch
      superagent/ticket-N into DIR. Prints the Report; the transcript is on
      the Ticket's page when superagent serve runs on the same database.
      No GitHub App or Feishu app is used: pull requests, comments and
      replies are not offered to the Executor.

      -repo    the checkout (default: the current directory)
      -title   the Ticket's title (default: the task's first line)
      -budget  the Ticket's budget instead of the default, e.g. 2M tokens,
               500000, or $3 (with SUPERAGENT_MODEL_PRICE)

  Exit status: 0 when the Ticket is done, 1 when it stopped short (blocked,
  waiting for a person, or failed), 2 for bad arguments or settings.
`

// runCommand is `superagent run`.
func runCommand(ctx context.Context, cfg *config, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("repo", ".", "")
	title := fs.String("title", "", "")
	budget := fs.String("budget", "", "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "superagent run: %v\n\n%s", err, runUsage)
		return 2
	}
	task := strings.TrimSpace(strings.Join(fs.Args(), " "))
	var problems []string
	if task == "" {
		problems = append(problems, "say what to do: superagent run -repo DIR \"task text\"")
	}
	if cfg.Model == "" {
		problems = append(problems, "no model is configured: set SUPERAGENT_MODEL, SUPERAGENT_MODEL_BASE_URL and SUPERAGENT_MODEL_API_KEY (docs/models.md)")
	}
	var own tickets.Budget
	if *budget != "" {
		b, ok, err := tickets.ParseBudget("budget " + *budget)
		if err != nil || !ok {
			problems = append(problems, fmt.Sprintf("-budget %q: %v", *budget, tickets.ErrBudget))
		}
		if b.Cost > 0 && cfg.ModelPrice == nil {
			problems = append(problems, "-budget in money needs SUPERAGENT_MODEL_PRICE: without a price every request costs 0")
		}
		own = b
	}
	checkout, err := localCheckout(ctx, *dir)
	if err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stderr, "superagent run:", p)
		}
		return 2
	}
	if checkout.dirty {
		fmt.Fprintf(stderr, "superagent run: %s has uncommitted changes; the run starts from the last commit of %s without them\n", checkout.dir, checkout.branch)
	}
	if *title == "" {
		*title = firstLine(task, 80)
	}
	res, err := runLocal(ctx, cfg, checkout, *title, task, own, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "superagent run:", err)
		if res.ticket == 0 {
			return 1
		}
	}
	printRun(context.WithoutCancel(ctx), stdout, checkout, res)
	if err == nil && res.state == tickets.TicketDone {
		return 0
	}
	return 1
}

// checkout is the local repository a run works on.
type checkout struct {
	dir    string // its top level, absolute
	branch string // the branch checked out, the run's base
	dirty  bool   // it has changes not committed
}

// repoName is the Ticket's repository: owner/name in the form the
// rest of the service expects, under "local".
func (c checkout) repoName() string {
	name := regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(filepath.Base(c.dir), "-")
	if name == "" || name == "." || name == ".." {
		name = "repo"
	}
	return "local/" + name
}

// localCheckout checks that dir is a git checkout on a branch.
func localCheckout(ctx context.Context, dir string) (checkout, error) {
	git := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return checkout{}, fmt.Errorf("-repo %s is not a git checkout", dir)
	}
	branch, err := git("symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil || branch == "" {
		return checkout{}, fmt.Errorf("%s has no branch checked out (a detached HEAD): check out the branch to start from", top)
	}
	if _, err := git("rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		return checkout{}, fmt.Errorf("%s has no commit yet: commit something to start from", top)
	}
	status, err := git("status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return checkout{}, fmt.Errorf("reading the status of %s: %w", top, err)
	}
	abs, err := filepath.Abs(top)
	if err != nil {
		return checkout{}, err
	}
	return checkout{dir: abs, branch: branch, dirty: status != ""}, nil
}

// runResult is what a run leaves for the person at the terminal.
type runResult struct {
	ticket  int64
	state   string
	branch  string
	reports []tickets.Report
	failure string
}

// runLocal makes the Ticket and works it to its end with the Executor, in
// this process, on cfg's database.
func runLocal(ctx context.Context, cfg *config, c checkout, title, task string, own tickets.Budget, stderr io.Writer) (runResult, error) {
	var res runResult
	logger := newLogger(stderr, cfg, cfg.LogLevel)
	d, err := db.Open(ctx, cfg.DatabaseURL, db.Options{})
	if err != nil {
		return res, err
	}
	defer d.Close()
	if err := migrations.Apply(ctx, d, logger); err != nil {
		return res, err
	}
	// The run speaks to neither GitHub nor Feishu, configured or not.
	local := *cfg
	local.GitHubAppID, local.GitHubPrivateKeyPEM, local.FeishuAppID, local.FeishuAppSecret = 0, nil, "", ""
	repo := c.repoName()
	local.localRepos = map[string]workspace.Remote{repo: {URL: "file://" + c.dir, BaseBranch: c.branch}}
	a, err := buildApp(ctx, &local, logger, d)
	if err != nil {
		return res, err
	}
	if err := a.prompts.Start(ctx); err != nil {
		return res, err
	}
	defer a.prompts.Stop()

	requester := &tickets.Author{ID: "terminal:" + currentUser(), Name: currentUser(), Type: tickets.AuthorUser}
	err = d.InTx(ctx, func(tx *db.Tx) error {
		t, err := a.tickets.CreateTicket(ctx, tx, tickets.Ticket{Title: title, Repo: repo,
			Mandate: tickets.Mandate{RequestedBy: requester, Source: "terminal", Repos: []string{repo}}})
		if err != nil {
			return err
		}
		res.ticket = t.ID
		if own.IsZero() {
			return nil
		}
		return a.tickets.SetBudget(ctx, tx, t.ID, own, requester.ID)
	})
	if err != nil {
		return res, err
	}
	logger.Info("ticket opened", "ticket", res.ticket, "repo", repo, "dir", c.dir, "base", c.branch)
	if _, err := a.executor.StartLocal(ctx, res.ticket, task); err != nil {
		return res, err
	}
	runErr := a.executor.Execute(ctx, res.ticket, "run:"+strconv.Itoa(os.Getpid()))
	// What the run left is read even when it was cut short.
	rctx := context.WithoutCancel(ctx)
	t, err := a.tickets.Ticket(rctx, d, res.ticket)
	if err != nil {
		return res, errors.Join(runErr, err)
	}
	res.state, res.branch = t.State, a.executor.LocalBranch(t)
	if t.Failed != nil {
		res.failure = t.Failed.Reason
	}
	if res.reports, err = a.tickets.Reports(rctx, d, res.ticket); err != nil {
		return res, errors.Join(runErr, err)
	}
	return res, runErr
}

// printRun says where the run's work is and what its last Report said.
func printRun(ctx context.Context, w io.Writer, c checkout, res runResult) {
	fmt.Fprintf(w, "Ticket %d: %s\n", res.ticket, res.state)
	if out, err := exec.CommandContext(ctx, "git", "-C", c.dir, "log", "-1", "--format=%h %s", "refs/heads/"+res.branch, "--").Output(); err == nil {
		fmt.Fprintf(w, "Branch %s in %s: %s\n", res.branch, c.dir, strings.TrimSpace(string(out)))
		fmt.Fprintf(w, "  see it with: git -C %s diff %s...%s\n", c.dir, c.branch, res.branch)
	} else {
		fmt.Fprintf(w, "Branch %s: not pushed to %s\n", res.branch, c.dir)
	}
	if res.failure != "" {
		fmt.Fprintf(w, "Failed: %s\n", res.failure)
	}
	if n := len(res.reports); n > 0 {
		r := res.reports[n-1]
		fmt.Fprintf(w, "\nReport (%s):\n%s\n", r.State, r.Summary)
		if r.HumanAction != "" {
			fmt.Fprintf(w, "\nFor a person: %s\n", r.HumanAction)
		}
	} else {
		fmt.Fprintln(w, "\nNo Report.")
	}
	fmt.Fprintf(w, "\nThe transcript is on /admin/tickets/%d when superagent serve runs on this database.\n", res.ticket)
}

// currentUser names the person at the terminal.
func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "local"
}

// firstLine is s's first line, cut to n characters.
func firstLine(s string, n int) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(line); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return line
}
