package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// CheckRunName is the name of the check run the Executor keeps on its pull
// request's head (docs/architecture.md#the-executor-step-by-step).
const CheckRunName = "superagent"

// progressSteps is how many of the latest steps the progress comment lists.
const progressSteps = 8

// progress is a Ticket's row in ticket_progress: where its progress
// comment is, what it last said, and its check run.
type progress struct {
	CommentTarget string
	CommentID     int64
	BodySHA       string
	CheckHead     string
	CheckRunID    int64
	CheckDone     bool
}

func (e *Executor) readProgress(ctx context.Context, q db.Querier, ticketID int64) (progress, error) {
	var p progress
	err := q.QueryRow(ctx, `SELECT comment_target, comment_id, body_sha256, check_head_sha, check_run_id, check_done
FROM ticket_progress WHERE ticket_id = $1`, ticketID).Scan(&p.CommentTarget, &p.CommentID, &p.BodySHA, &p.CheckHead, &p.CheckRunID, &p.CheckDone)
	if err != nil && !errors.Is(err, db.ErrNoRows) {
		return p, fmt.Errorf("reading the progress of ticket %d: %w", ticketID, err)
	}
	return p, nil
}

func (e *Executor) saveProgress(ctx context.Context, q db.Querier, ticketID int64, p progress) error {
	_, err := q.Exec(ctx, `INSERT INTO ticket_progress (ticket_id, comment_target, comment_id, body_sha256, check_head_sha, check_run_id, check_done, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (ticket_id) DO UPDATE SET comment_target = $2, comment_id = $3, body_sha256 = $4, check_head_sha = $5,
    check_run_id = $6, check_done = $7, updated_at = $8`,
		ticketID, p.CommentTarget, p.CommentID, p.BodySHA, p.CheckHead, p.CheckRunID, p.CheckDone, e.cfg.Now().UTC())
	if err != nil {
		return fmt.Errorf("recording the progress of ticket %d: %w", ticketID, err)
	}
	return nil
}

// TicketURL is the Ticket's page in the panel under Config.PublicURL, or ""
// when no public URL is configured (no link is invented).
func (e *Executor) TicketURL(ticketID int64) string {
	return outbox.TicketURL(e.cfg.PublicURL, ticketID)
}

// syncProgress brings the Ticket's progress on GitHub up to date: its one
// progress comment (on the issue or pull request it came from, else its
// pull request), edited in place when what it says changed, and the
// superagent check run on the pull request's head, created for each new
// head and, when ended, completed. Every write goes through the outbox, and
// the comment and check run ids are stored, so a retry after a crash edits
// rather than posts again. A proposal, or a Ticket without GitHub, has
// none.
func (e *Executor) syncProgress(ctx context.Context, ticketID int64, ended bool) error {
	// Feishu's status card follows the same moments, in its own job.
	e.showCard(ctx, ticketID)
	if e.deps.GitHub == nil || e.cfg.NoProgress {
		return nil
	}
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, ticketID)
	if err != nil || t.Proposal || t.Repo == "" {
		return err
	}
	p, err := e.readProgress(ctx, e.deps.DB, ticketID)
	if err != nil {
		return err
	}
	if err := e.syncComment(ctx, t, &p); err != nil {
		return err
	}
	if t.PullNumber == 0 {
		return nil
	}
	return e.syncCheckRun(ctx, t, &p, ended)
}

// showProgress updates the Ticket's progress on GitHub while the work goes
// on. A failure is logged, never the tool's: the next update, at the
// latest the one at the job's end, catches up.
func (e *Executor) showProgress(ctx context.Context, ticketID int64) {
	if err := e.syncProgress(ctx, ticketID, false); err != nil && ctx.Err() == nil {
		e.cfg.Logger.Warn("updating the progress on GitHub", "ticket", ticketID, "error", e.deps.Scrubber.Scrub(err.Error()))
	}
}

// progressTarget is where the progress comment goes: owner/name and the
// issue or pull request number, or "" when the Ticket has neither.
func (e *Executor) progressTarget(ctx context.Context, t tickets.Ticket) (string, int, error) {
	if t.SourceCardID != 0 {
		c, err := e.deps.Tickets.Card(ctx, e.deps.DB, t.SourceCardID)
		if err != nil {
			return "", 0, err
		}
		if c.Source == tickets.SourceGitHub && c.Thread.Number > 0 && c.Thread.Repo != "" {
			return c.Thread.Repo, c.Thread.Number, nil
		}
	}
	if t.PullNumber != 0 {
		return t.Repo, t.PullNumber, nil
	}
	return "", 0, nil
}

func progressKey(ticketID int64) string { return fmt.Sprintf("progress:ticket:%d", ticketID) }

func (e *Executor) syncComment(ctx context.Context, t tickets.Ticket, p *progress) error {
	repo, number, err := e.progressTarget(ctx, t)
	if err != nil || repo == "" {
		return err
	}
	if p.CommentTarget == "" {
		p.CommentTarget = fmt.Sprintf("%s#issue:%d", repo, number)
	} else if tr, num, ok := parseIssueTarget(p.CommentTarget); ok {
		// The comment stays where it was first posted.
		repo, number = tr, num
	}
	text, err := e.progressText(ctx, t)
	if err != nil {
		return err
	}
	base := progressKey(t.ID)
	body, err := e.githubBody(ctx, base, text)
	if err != nil {
		return err
	}
	sha := digest(body)
	if sha == p.BodySHA {
		return nil
	}
	gh, err := e.installationClient(ctx, repo)
	if err != nil {
		return err
	}
	box := &outbox.Box{DB: e.deps.DB, Tickets: e.deps.Tickets, Logger: e.cfg.Logger}
	o := tickets.Outgoing{TicketID: t.ID, Source: tickets.SourceGitHub, Kind: "progress", Target: p.CommentTarget, Body: t.State}
	if p.CommentID == 0 {
		o.Key = base
		ref, err := box.Write(ctx, o, func(ctx context.Context) (string, error) {
			c, err := gh.CreateComment(ctx, number, body)
			if err != nil {
				return "", fmt.Errorf("posting the progress comment on %s#%d: %w", repo, number, err)
			}
			return strconv.FormatInt(c.GetID(), 10), nil
		}, func(ctx context.Context) (string, bool, error) {
			c, err := outbox.MarkedComment(ctx, gh, number, base)
			if err != nil || c == nil {
				return "", false, err
			}
			return strconv.FormatInt(c.GetID(), 10), true, nil
		})
		if err != nil {
			return err
		}
		if p.CommentID, err = strconv.ParseInt(ref, 10, 64); err != nil {
			return fmt.Errorf("reading the progress comment's id %q: %w", ref, err)
		}
	} else {
		// Each edit is its own intent, named by what the comment said
		// before and says now, so a state that comes back is written
		// again; an edit sends the whole body, so sending it twice is
		// harmless.
		o.Key = base + ":" + digest(p.BodySHA, sha)
		id := p.CommentID
		_, err := box.Write(ctx, o, func(ctx context.Context) (string, error) {
			err := gh.EditComment(ctx, id, body)
			if err != nil {
				return "", fmt.Errorf("editing the progress comment on %s#%d: %w", repo, number, err)
			}
			return strconv.FormatInt(id, 10), nil
		}, nil)
		if err != nil {
			return err
		}
	}
	p.BodySHA = sha
	return e.saveProgress(ctx, e.deps.DB, t.ID, *p)
}

func parseIssueTarget(target string) (string, int, bool) {
	repo, n, ok := strings.Cut(target, "#issue:")
	if !ok {
		return "", 0, false
	}
	number, err := strconv.Atoi(n)
	return repo, number, err == nil
}

// actorName is how people are shown the actor who paused, stopped or
// continued a Ticket (people.ActorName): @login, a Feishu user's name.
// A failed lookup shows the recorded actor and is logged.
func (e *Executor) actorName(ctx context.Context, ticketID int64, actor string) string {
	name, err := people.ActorName(ctx, e.deps.DB, actor)
	if err != nil && ctx.Err() == nil {
		e.cfg.Logger.Warn("finding a person's name", "ticket", ticketID, "actor", actor, "error", err)
	}
	return name
}

// holdBy is who holds the Ticket (stopped or paused it), by name, or "".
func (e *Executor) holdBy(ctx context.Context, t tickets.Ticket) string {
	switch {
	case t.Stop != nil:
		return e.actorName(ctx, t.ID, t.Stop.By)
	case t.Pause != nil:
		return e.actorName(ctx, t.ID, t.Pause.By)
	}
	return ""
}

// stateLine says where the Ticket is, in words a person reads on GitHub;
// by names who holds it (holdBy).
func stateLine(t tickets.Ticket, by string) string {
	switch {
	case t.Stop != nil:
		return "**stopped** by " + by + ": nothing more is written here"
	case t.Pause != nil:
		return "**paused** by " + by + " until a person resumes it"
	case t.Proposal:
		return "**proposed**, waiting for a person to accept it"
	case t.State == tickets.TicketInReview:
		return "**in review**: its reviews, checks and comments reach the Executor until the pull request is merged or closed"
	}
	return "**" + t.State + "**"
}

// progressText is the progress comment: the state, the latest steps as a
// checklist, the latest Report and the link to the Ticket page.
func (e *Executor) progressText(ctx context.Context, t tickets.Ticket) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "**Ticket %d: %s** is %s.\n", t.ID, t.Title, stateLine(t, e.holdBy(ctx, t)))
	steps, err := e.sessions.Store().TicketSteps(ctx, e.deps.DB, t.ID, 0, progressSteps)
	if err != nil {
		return "", err
	}
	if len(steps) > 0 {
		b.WriteString("\nLatest steps:\n")
		slices.Reverse(steps)
		for _, s := range steps {
			box := "x"
			if s.Running() {
				box = " "
			}
			fmt.Fprintf(&b, "- [%s] `%s`%s\n", box, strings.ReplaceAll(s.Summary, "`", "'"), stepNote(s))
		}
	}
	if t.PullNumber != 0 {
		fmt.Fprintf(&b, "\nPull request: #%d\n", t.PullNumber)
	}
	reports, err := e.deps.Tickets.Reports(ctx, e.deps.DB, t.ID)
	if err != nil {
		return "", err
	}
	if n := len(reports); n > 0 {
		r := reports[n-1]
		summary, _, _ := strings.Cut(r.Summary, "\n\nUsage:")
		fmt.Fprintf(&b, "\nLatest report (%s): %s\n", r.State, oneLine(summary, 300))
	}
	if u := e.TicketURL(t.ID); u != "" {
		fmt.Fprintf(&b, "\n[Watch and steer this Ticket](%s)\n", u)
	}
	return b.String(), nil
}

func stepNote(s session.Step) string {
	switch s.State {
	case "started":
		return " (running)"
	case "done":
		return ""
	}
	return " (" + s.State + ")"
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// syncCheckRun keeps the superagent check run on the pull request's head:
// a new head gets a new run (the previous one is completed as superseded),
// and the end of the work completes it, success when the Ticket is done,
// neutral otherwise.
func (e *Executor) syncCheckRun(ctx context.Context, t tickets.Ticket, p *progress, ended bool) error {
	gh, pr, err := e.pull(ctx, t)
	if err != nil {
		return err
	}
	head := pr.GetHead().GetSHA()
	box := &outbox.Box{DB: e.deps.DB, Tickets: e.deps.Tickets, Logger: e.cfg.Logger}
	if head != "" && head != p.CheckHead {
		if p.CheckRunID != 0 && !p.CheckDone {
			if err := e.completeCheckRun(ctx, box, gh, t, p, "neutral", "Superseded", "A newer push to the pull request has its own check run."); err != nil {
				return err
			}
		}
		key := fmt.Sprintf("check:ticket:%d:%s", t.ID, head)
		ext := fmt.Sprintf("superagent:ticket:%d", t.ID)
		title, summary := e.checkOutput(ctx, t)
		o := tickets.Outgoing{Key: key, TicketID: t.ID, Source: tickets.SourceGitHub, Kind: "check_run", Target: t.Repo + "@" + head, Body: "in_progress"}
		ref, err := box.Write(ctx, o, func(ctx context.Context) (string, error) {
			id, err := gh.CreateCheckRun(ctx, githubapp.CheckRunSpec{Name: CheckRunName, HeadSHA: head, Status: "in_progress",
				ExternalID: ext, DetailsURL: e.TicketURL(t.ID), Title: title, Summary: summary})
			if err != nil {
				return "", fmt.Errorf("creating the check run on %s@%s: %w", t.Repo, head, err)
			}
			return strconv.FormatInt(id, 10), nil
		}, func(ctx context.Context) (string, bool, error) {
			runs, err := gh.CheckRuns(ctx, head, CheckRunName)
			if err != nil {
				return "", false, err
			}
			for _, r := range runs.CheckRuns {
				if r.GetExternalID() == ext {
					return strconv.FormatInt(r.GetID(), 10), true, nil
				}
			}
			return "", false, nil
		})
		if err != nil {
			return err
		}
		if p.CheckRunID, err = strconv.ParseInt(ref, 10, 64); err != nil {
			return fmt.Errorf("reading the check run's id %q: %w", ref, err)
		}
		p.CheckHead, p.CheckDone = head, false
		if err := e.saveProgress(ctx, e.deps.DB, t.ID, *p); err != nil {
			return err
		}
	}
	if !ended || p.CheckRunID == 0 || p.CheckDone {
		return nil
	}
	conclusion := "neutral"
	if t.State == tickets.TicketDone || t.State == tickets.TicketInReview {
		// The work is delivered: in review, the pull request's own checks
		// and reviews say the rest.
		conclusion = "success"
	}
	title, summary := e.checkOutput(ctx, t)
	return e.completeCheckRun(ctx, box, gh, t, p, conclusion, title, summary)
}

func (e *Executor) completeCheckRun(ctx context.Context, box *outbox.Box, gh *githubapp.Repo, t tickets.Ticket, p *progress, conclusion, title, summary string) error {
	id := p.CheckRunID
	o := tickets.Outgoing{Key: fmt.Sprintf("check:ticket:%d:run:%d:completed", t.ID, id), TicketID: t.ID, Source: tickets.SourceGitHub,
		Kind: "check_run", Target: t.Repo + "@" + p.CheckHead, Body: conclusion}
	_, err := box.Write(ctx, o, func(ctx context.Context) (string, error) {
		err := gh.UpdateCheckRun(ctx, id, githubapp.CheckRunSpec{Name: CheckRunName, Status: "completed", Conclusion: conclusion,
			CompletedAt: e.cfg.Now().UTC().Truncate(time.Second), Title: title, Summary: summary})
		if err != nil {
			return "", fmt.Errorf("completing the check run %d on %s: %w", id, t.Repo, err)
		}
		return strconv.FormatInt(id, 10), nil
	}, nil)
	if err != nil {
		return err
	}
	p.CheckDone = true
	return e.saveProgress(ctx, e.deps.DB, t.ID, *p)
}

// checkOutput is the check run's title and summary: the Ticket's state, its
// latest Report and the Session's use.
func (e *Executor) checkOutput(ctx context.Context, t tickets.Ticket) (string, string) {
	title := "Ticket " + strconv.FormatInt(t.ID, 10) + ": " + t.State
	switch {
	case t.Stop != nil:
		title = "Ticket " + strconv.FormatInt(t.ID, 10) + ": stopped by " + e.holdBy(ctx, t)
	case t.Pause != nil:
		title = "Ticket " + strconv.FormatInt(t.ID, 10) + ": paused by " + e.holdBy(ctx, t)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", t.Title)
	if reports, err := e.deps.Tickets.Reports(ctx, e.deps.DB, t.ID); err == nil && len(reports) > 0 {
		r := reports[len(reports)-1]
		summary, _, _ := strings.Cut(r.Summary, "\n\nUsage:")
		fmt.Fprintf(&b, "\nLatest report (%s): %s\n", r.State, oneLine(summary, 500))
	}
	if tot, err := e.sessions.Store().TicketTotals(ctx, e.deps.DB, t.ID); err == nil && tot.Requests > 0 {
		fmt.Fprintf(&b, "\n%d model requests in %d Sessions, %d tokens.\n", tot.Requests, tot.Sessions, tot.Usage.Total())
	}
	if u := e.TicketURL(t.ID); u != "" {
		fmt.Fprintf(&b, "\n[The Ticket's page](%s)\n", u)
	}
	return title, e.deps.Scrubber.Scrub(b.String())
}
