package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"

	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// unfinished is the Executor Sessions' session.RunOptions.Unfinished: a
// turn that ends while the Ticket is still open or working, and nobody
// holds or stopped it, has left it with no report and no job. The text is
// what the model reads once (after session.NudgePrefix).
func (e *Executor) unfinished(ctx context.Context, s *session.Session) (string, error) {
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, s.TicketID)
	if err != nil {
		return "", err
	}
	if t.Stop != nil || t.Pause != nil || (t.State != tickets.TicketWorking && t.State != tickets.TicketOpen) {
		return "", nil
	}
	return fmt.Sprintf("your turn ended without a report, and ticket %d is still %s: nobody has been told where it stands "+
		"and nothing will continue it. If the work is finished, push it (and open its pull request) and report done; "+
		"if something stops you, report blocked or waiting with what a person must do; if there is more to do, do it now. "+
		"If your turn ends again without a report, the host reports the Ticket blocked.", t.ID, t.State), nil
}

// stopWhy says in words why a Session stopped (one of its limits or
// watches), as a clause: "it reached its step limit".
func stopWhy(reason, final string) string {
	switch reason {
	case session.ReasonMaxSteps:
		return "it reached its step limit (SUPERAGENT_EXECUTOR_MAX_STEPS)"
	case session.ReasonWallTime:
		return "it ran out of its time (SUPERAGENT_EXECUTOR_WALL_TIME)"
	case session.ReasonTokenBudget:
		return "the Ticket used up its token budget"
	case session.ReasonCostBudget:
		return "the Ticket used up its cost budget"
	case session.ReasonRepeatedCall:
		return "it kept making the same call with the same result after the host pointed it out"
	case session.ReasonNoProgress:
		return "it went on for many steps without changing a file, running a new command or writing to anyone"
	case session.ReasonUnfinished:
		if f := oneLine(final, 120); f != "" {
			return fmt.Sprintf("its turn ended twice without a report (its last words: %q)", f)
		}
		return "its turn ended twice without a report (its last answer was empty)"
	}
	return "it stopped (" + reason + ")"
}

// workState says what of the Ticket's work is where: its pull request,
// and work in the workspace that is not on its branch on GitHub.
type workState struct {
	// Pull is "#12 (draft)", or "".
	Pull string
	// Unpushed says what is not pushed ("commit 1a2b3c4 on
	// superagent/ticket-3", "uncommitted changes to README.md"), or is
	// empty.
	Unpushed []string
}

// statusLine is a change line of git status --short.
var statusLine = regexp.MustCompile(`^(..) (.+)$`)

// unpushed looks at the Ticket's workspace for work GitHub does not have:
// changes not committed, and a head that was neither pushed by git_push
// nor is its pull request's head, when it changes something against the
// default branch. A Ticket without a workspace here has none.
func (e *Executor) unpushed(ctx context.Context, t tickets.Ticket) ([]string, error) {
	if t.Repo == "" {
		return nil, nil
	}
	ws, err := e.deps.Workspaces.Open(t.ID)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	status, err := ws.Status(ctx)
	if err != nil {
		return nil, err
	}
	var changed []string
	for line := range strings.SplitSeq(status, "\n") {
		if m := statusLine.FindStringSubmatch(line); m != nil && !strings.HasPrefix(line, "##") {
			changed = append(changed, m[2])
		}
	}
	if len(changed) > 0 {
		more := ""
		if len(changed) > 5 {
			more = fmt.Sprintf(" and %d more", len(changed)-5)
			changed = changed[:5]
		}
		out = append(out, "uncommitted changes to "+strings.Join(changed, ", ")+more)
	}
	head, err := ws.Head(ctx)
	if err != nil {
		return nil, err
	}
	pushed, err := e.pushedHead(ctx, t, head)
	if err != nil || pushed {
		return out, err
	}
	own, err := e.ownCommits(ctx, ws, t)
	if err != nil {
		return nil, err
	}
	if own {
		out = append(out, fmt.Sprintf("commit %.7s on %s", head, e.workBranch(t)))
	}
	return out, nil
}

// pushedHead reports whether head is on GitHub: pushed by git_push, or
// the head of the Ticket's pull request (a person's branch it works on).
func (e *Executor) pushedHead(ctx context.Context, t tickets.Ticket, head string) (bool, error) {
	sent, err := e.deps.Tickets.Outgoings(ctx, e.deps.DB, t.ID)
	if err != nil {
		return false, err
	}
	if slices.ContainsFunc(sent, func(o tickets.Outgoing) bool {
		return o.Kind == "push" && o.State == tickets.OutgoingSent && o.Body == head
	}) {
		return true, nil
	}
	if t.PullNumber == 0 || e.deps.GitHub == nil {
		return false, nil
	}
	_, pr, err := e.pull(ctx, t)
	if err != nil {
		return false, err
	}
	return pr.GetHead().GetSHA() == head, nil
}

// ownCommits reports whether the workspace's head changes anything against
// the repository's default branch, so that there is something to push.
func (e *Executor) ownCommits(ctx context.Context, ws *workspace.Workspace, t tickets.Ticket) (bool, error) {
	if e.deps.GitHub == nil {
		return true, nil
	}
	r, err := e.wipRemote(ctx, t.Repo)
	if err != nil {
		return false, err
	}
	files, err := ws.ChangedFiles(ctx, r.BaseBranch)
	if err != nil {
		return false, err
	}
	return len(files) > 0, nil
}

// state reads the Ticket's work state for a person.
func (e *Executor) state(ctx context.Context, t tickets.Ticket) workState {
	var w workState
	if t.PullNumber != 0 {
		w.Pull = fmt.Sprintf("%s#%d", t.Repo, t.PullNumber)
		if e.deps.GitHub != nil {
			if _, pr, err := e.pull(ctx, t); err == nil && pr.GetDraft() {
				w.Pull += " (draft)"
			}
		}
	}
	u, err := e.unpushed(ctx, t)
	if err != nil {
		e.cfg.Logger.Warn("reading the work not pushed", "ticket", t.ID, "error", e.deps.Scrubber.Scrub(err.Error()))
		u = []string{"the workspace could not be read"}
	}
	w.Unpushed = u
	return w
}

// describe is the work state in words: "its pull request is …; not
// pushed: …, kept in …".
func (w workState) describe(e *Executor, t tickets.Ticket) string {
	var parts []string
	if w.Pull != "" {
		parts = append(parts, "its pull request is "+w.Pull)
	} else if t.Repo != "" {
		parts = append(parts, "it has no pull request")
	}
	if len(w.Unpushed) > 0 {
		parts = append(parts, fmt.Sprintf("not pushed: %s, kept in its workspace and in the checkpoint ref %s of %s",
			strings.Join(w.Unpushed, " and "), workspace.WIPRef(t.ID), t.Repo))
	}
	return strings.Join(parts, "; ")
}

// lastStep is the Ticket's latest tool call, as the progress comment
// shows it, or "".
func (e *Executor) lastStep(ctx context.Context, ticketID int64) string {
	steps, err := e.sessions.Store().TicketSteps(ctx, e.deps.DB, ticketID, 0, 1)
	if err != nil || len(steps) == 0 {
		return ""
	}
	return steps[0].Summary + stepNote(steps[0])
}

// finalWords is the Session's latest answer text.
func (e *Executor) finalWords(ctx context.Context, sessionID int64) string {
	msgs, err := e.sessions.Store().Messages(ctx, e.deps.DB, sessionID, 0)
	if err != nil {
		return ""
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" {
			return msgs[i].Content
		}
	}
	return ""
}

// hostReport is the blocked Report the host writes for an Executor that
// could not, and the one sentence it tells the requester.
type hostReport struct {
	Summary  string
	Sentence string
}

// stoppedReport is the host's Report of a Session that stopped (a limit,
// a loop, a turn ended without a report): what happened, the last step,
// where the work is, and what a person can do.
func (e *Executor) stoppedReport(ctx context.Context, t tickets.Ticket, s *session.Session) hostReport {
	why := stopWhy(s.StateReason, e.finalWords(ctx, s.ID))
	if note := e.budgetNote(ctx, t, s.StateReason); note != "" {
		why = note
	}
	work := e.state(ctx, t).describe(e, t)
	var b strings.Builder
	fmt.Fprintf(&b, "The Executor stopped without finishing: %s.", why)
	if step := e.lastStep(ctx, t.ID); step != "" {
		fmt.Fprintf(&b, " Last step: %s.", step)
	}
	if work != "" {
		fmt.Fprintf(&b, " Work: %s.", work)
	}
	b.WriteString(" A person must decide how to go on: continue the Ticket (a new Session picks up from here) or stop it.")
	sentence := fmt.Sprintf("The agent stopped work on %q without finishing: %s", t.Title, why)
	if work != "" {
		sentence += "; " + work
	}
	sentence += "; say continue to let it go on, or stop."
	return hostReport{Summary: b.String(), Sentence: sentence}
}

// reportForHost stores the host's blocked Report of the Ticket in tx and
// records the one sentence that tells the requester, under the message
// that started the Ticket: the main Session's turn, which the Report
// schedules, sends it. key names the occasion, so it is written once.
func (e *Executor) reportForHost(ctx context.Context, tx *db.Tx, t tickets.Ticket, sessionID int64, key string, r hostReport) error {
	if _, err := e.deps.Wake.Report(ctx, tx, tickets.Report{TicketID: t.ID, SessionID: sessionID, State: tickets.ReportBlocked,
		Summary: e.deps.Scrubber.Scrub(r.Summary)}); err != nil {
		return err
	}
	if t.SourceCardID == 0 || t.Stop != nil {
		return nil
	}
	c, err := e.deps.Tickets.Card(ctx, tx, t.SourceCardID)
	if errors.Is(err, tickets.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	target := ""
	switch c.Source {
	case tickets.SourceGitHub:
		target = outbox.MessageTarget(c)
	case tickets.SourceFeishu:
		id, err := tickets.FeishuMessageID(ctx, tx, c)
		if err != nil {
			return err
		}
		if id != "" {
			target = "feishu:message/" + id
		}
	}
	if target == "" {
		return nil
	}
	_, err = e.deps.Tickets.RecordIntent(ctx, tx, tickets.Outgoing{Key: fmt.Sprintf("host-report:ticket:%d:%s", t.ID, key),
		TicketID: t.ID, CardID: c.ID, Source: c.Source, Kind: outbox.KindComment, Target: target,
		Body: e.deps.Scrubber.Scrub(r.Sentence)})
	return err
}

// handoffFacts is what the host knows for certain of the Ticket, for the
// first message of a Session that continues another (a rollover, a
// person's continue): the Ticket and its Mandate, the repository, branch
// and pull request, work not pushed, questions to people still open, the
// last steps, and the card that started it.
func (e *Executor) handoffFacts(ctx context.Context, ticketID int64) (string, error) {
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, ticketID)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("Host facts (from the service's records; they hold whatever the handoff says):\n")
	fmt.Fprintf(&b, "- Ticket %d %q, state %s", t.ID, t.Title, t.State)
	if r := t.Mandate.RequestedBy; r != nil {
		fmt.Fprintf(&b, ", asked by %s", cmp.Or(r.Login, r.Name, r.ID))
	}
	b.WriteString(".\n")
	if len(t.Mandate.Repos) > 0 {
		fmt.Fprintf(&b, "- Mandate: may write in %s", strings.Join(t.Mandate.Repos, ", "))
		if len(t.Mandate.Actions) > 0 {
			fmt.Fprintf(&b, "; may %s", strings.Join(t.Mandate.Actions, ", "))
		}
		b.WriteString(".\n")
	}
	if t.Repo != "" {
		fmt.Fprintf(&b, "- Repository %s, branch %s; ", t.Repo, e.workBranch(t))
		w := e.state(ctx, t)
		if w.Pull != "" {
			fmt.Fprintf(&b, "pull request %s.\n", w.Pull)
		} else {
			b.WriteString("no pull request yet.\n")
		}
		if len(w.Unpushed) > 0 {
			fmt.Fprintf(&b, "- Not pushed yet: %s.\n", strings.Join(w.Unpushed, " and "))
		}
	} else {
		b.WriteString("- No repository is set yet.\n")
	}
	questions, err := e.openQuestions(ctx, t.ID)
	if err != nil {
		return "", err
	}
	for _, q := range questions {
		fmt.Fprintf(&b, "- Open question to a person, not answered yet: %q\n", q)
	}
	steps, err := e.sessions.Store().TicketSteps(ctx, e.deps.DB, t.ID, 0, progressSteps)
	if err != nil {
		return "", err
	}
	if len(steps) > 0 {
		b.WriteString("- Last steps, oldest first:\n")
		slices.Reverse(steps)
		for _, s := range steps {
			fmt.Fprintf(&b, "  - %s%s\n", s.Summary, stepNote(s))
		}
	}
	if t.SourceCardID != 0 {
		c, err := e.deps.Tickets.Card(ctx, e.deps.DB, t.SourceCardID)
		if err != nil && !errors.Is(err, tickets.ErrNotFound) {
			return "", err
		}
		if err == nil {
			b.WriteString("\nThe original request, the card that started the Ticket:\n")
			b.WriteString(tickets.Render(c))
		}
	}
	return b.String(), nil
}

// openQuestions are the questions the Ticket's Executor asked people
// (human_action) that no person's message has followed since.
func (e *Executor) openQuestions(ctx context.Context, ticketID int64) ([]string, error) {
	reports, err := e.deps.Tickets.Reports(ctx, e.deps.DB, ticketID)
	if err != nil {
		return nil, err
	}
	deliveries, err := e.deps.Tickets.Deliveries(ctx, e.deps.DB, ticketID)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range reports {
		if r.HumanAction == "" {
			continue
		}
		answered := false
		for _, d := range deliveries {
			if d.State != tickets.DeliveryDelivered || !d.CreatedAt.After(r.CreatedAt) {
				continue
			}
			if c, err := e.deps.Tickets.Card(ctx, e.deps.DB, d.CardID); err == nil && c.Author.Type == tickets.AuthorUser {
				answered = true
				break
			}
		}
		if !answered && !slices.Contains(out, r.HumanAction) {
			out = append(out, r.HumanAction)
		}
	}
	return out, nil
}
