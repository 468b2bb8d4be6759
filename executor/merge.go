package executor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// mergeFacts are what the auto-merge condition is checked against.
type mergeFacts struct {
	Draft        bool
	Merged       bool
	ChangedLines int
	// Checks maps each check run on the head commit to its conclusion ("" while
	// it runs).
	Checks map[string]string
	// Approvals counts reviewers whose latest review approves.
	Approvals int
}

// autoMergeProblems lists why the team's auto-merge condition does not
// hold; none means the host may merge.
func autoMergeProblems(am promptparts.AutoMerge, f mergeFacts) []string {
	if !am.Enabled || am.MaxChangedLines <= 0 {
		return []string{"the Delivery requirements do not allow auto-merge"}
	}
	var p []string
	if f.Draft {
		p = append(p, "the pull request is a draft")
	}
	if f.ChangedLines > am.MaxChangedLines {
		p = append(p, fmt.Sprintf("it changes %d lines, over the threshold of %d", f.ChangedLines, am.MaxChangedLines))
	}
	green := func(c string) bool { return c == "success" || c == "neutral" || c == "skipped" }
	if len(am.Checks) > 0 {
		for _, name := range am.Checks {
			c, ok := f.Checks[name]
			switch {
			case !ok:
				p = append(p, fmt.Sprintf("the required check %q has not run", name))
			case !green(c):
				p = append(p, fmt.Sprintf("the required check %q is %s", name, orRunning(c)))
			}
		}
	} else {
		if len(f.Checks) == 0 {
			p = append(p, "no checks ran on the head commit")
		}
		names := make([]string, 0, len(f.Checks))
		for n := range f.Checks {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			if !green(f.Checks[n]) {
				p = append(p, fmt.Sprintf("the check %q is %s", n, orRunning(f.Checks[n])))
			}
		}
	}
	if f.Approvals < am.Approvals {
		p = append(p, fmt.Sprintf("it has %d approving reviews of the %d required", f.Approvals, am.Approvals))
	}
	return p
}

func orRunning(conclusion string) string {
	if conclusion == "" {
		return "still running"
	}
	return conclusion
}

// facts reads the auto-merge facts of a pull request from GitHub.
func (e *Executor) mergeFacts(ctx context.Context, gh *githubapp.Repo, repo string, pr *githubapp.PullRequest) (mergeFacts, error) {
	f := mergeFacts{Draft: pr.GetDraft(), Merged: pr.GetMerged(), ChangedLines: pr.GetAdditions() + pr.GetDeletions(), Checks: map[string]string{}}
	runs, err := gh.CheckRuns(ctx, pr.GetHead().GetSHA(), "")
	if err != nil {
		return f, fmt.Errorf("reading the checks of %s#%d: %w", repo, pr.GetNumber(), err)
	}
	for _, r := range runs.CheckRuns {
		if r.GetName() == CheckRunName {
			// The Executor's own run says how the work goes, not CI.
			continue
		}
		f.Checks[r.GetName()] = r.GetConclusion()
	}
	reviews, err := gh.Reviews(ctx, pr.GetNumber())
	if err != nil {
		return f, fmt.Errorf("reading the reviews of %s#%d: %w", repo, pr.GetNumber(), err)
	}
	latest := map[string]string{}
	for _, r := range reviews {
		if s := r.GetState(); s == "APPROVED" || s == "CHANGES_REQUESTED" || s == "DISMISSED" {
			latest[r.GetUser().GetLogin()] = s
		}
	}
	for _, s := range latest {
		if s == "APPROVED" {
			f.Approvals++
		}
	}
	return f, nil
}

func (e *Executor) prMerge(ctx context.Context, call session.Call, _ noArgs) (string, error) {
	t, gh, pr, err := e.ownPull(ctx, call.TicketID)
	if err != nil {
		return "", err
	}
	if pr.GetMerged() {
		return fmt.Sprintf("%s#%d is merged", t.Repo, t.PullNumber), nil
	}
	settings, _, err := e.deps.Prompts.Current(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the delivery requirements: %w", err)
	}
	facts, err := e.mergeFacts(ctx, gh, t.Repo, pr)
	if err != nil {
		return "", err
	}
	if problems := autoMergeProblems(settings.Sections.DeliveryRequirements.AutoMerge, facts); len(problems) > 0 {
		return "", session.Refuse("auto-merge is not allowed: %s; leave the merge to a person", strings.Join(problems, "; "))
	}
	o := tickets.Outgoing{Key: fmt.Sprintf("merge:ticket:%d:%d", t.ID, t.PullNumber), TicketID: t.ID, Source: tickets.SourceGitHub,
		Kind: "merge", Target: fmt.Sprintf("%s#%d", t.Repo, t.PullNumber), Body: pr.GetHead().GetSHA()}
	_, err = e.write(ctx, o, func(ctx context.Context) (string, error) {
		sha, err := gh.MergePull(ctx, t.PullNumber, pr.GetHead().GetSHA())
		if err != nil {
			return "", fmt.Errorf("merging %s#%d: %w", t.Repo, t.PullNumber, err)
		}
		return sha, nil
	}, func(ctx context.Context) (string, bool, error) {
		pr, err := gh.PullRequest(ctx, t.PullNumber)
		if err != nil {
			return "", false, err
		}
		return pr.GetMergeCommitSHA(), pr.GetMerged(), nil
	})
	if err != nil {
		return "", err
	}
	if err := e.endWithPull(ctx, t, true); err != nil {
		return "", err
	}
	return fmt.Sprintf("merged %s#%d (%d changed lines, checks green, approving reviews: %d); the Ticket is done",
		t.Repo, t.PullNumber, facts.ChangedLines, facts.Approvals), nil
}

// endWithPull ends the Ticket once its Executor merged or closed the
// Ticket's pull request itself: ingestion drops the App's own events, so
// no card will say so.
func (e *Executor) endWithPull(ctx context.Context, t tickets.Ticket, merged bool) error {
	var ended bool
	err := e.deps.DB.InTx(ctx, func(tx *db.Tx) (err error) {
		ended, err = e.deps.Wake.EndWithPull(ctx, tx, t, merged, "the Ticket's Executor")
		return err
	})
	if err != nil || !ended {
		return err
	}
	if merged {
		e.cfg.Logger.Info("pull request merged", "ticket", t.ID, "repo", t.Repo, "pr", t.PullNumber, "by", "executor")
	}
	e.cfg.Logger.Info("ticket ended", "ticket", t.ID, "repo", t.Repo, "pr", t.PullNumber, "merged", merged)
	return nil
}
