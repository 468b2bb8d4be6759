package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// Pauser holds and releases Tickets on a person's word. A pause survives
// follow-ups, new Executor Sessions and restarts until a person resumes the
// Ticket; the component that runs Executors provides it. Without one the
// Ticket page offers no pause control.
type Pauser interface {
	Pause(ctx context.Context, ticketID int64, actor, reason string) error
	Resume(ctx context.Context, ticketID int64, actor string) error
}

// Stopper stops, continues and retries Tickets on a person's word
// (tickets.Stopper). Without one the Ticket page offers none of them.
type Stopper interface {
	Stop(ctx context.Context, ticketID int64, actor, reason string) error
	Continue(ctx context.Context, ticketID int64, actor string) error
	// ContinueWith continues and raises the Ticket's budget together.
	ContinueWith(ctx context.Context, ticketID int64, actor string, raise tickets.Budget) error
	Retry(ctx context.Context, ticketID int64, actor string) error
}

var ticketStates = []string{tickets.TicketOpen, tickets.TicketWorking, tickets.TicketWaiting, tickets.TicketPaused, tickets.TicketInReview, tickets.TicketDone, tickets.TicketCancelled}

// ticketsPage is the filterable Ticket list.
type ticketsPage struct {
	Available bool
	Filter    ticketFilter
	States    []string
	Tickets   []tickets.Ticket
	// Arrives says how work arrives, for a list with no Ticket at all.
	Arrives string
}

const ticketsPerPage = 200

func (a *Admin) getTickets(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p := ticketsPage{Available: a.deps.Tickets != nil, States: ticketStates, Arrives: a.workArrives(),
		Filter: ticketFilter{State: q.Get("state"), Query: strings.TrimSpace(q.Get("q")), Limit: ticketsPerPage}}
	if p.Filter.State != "" && !slices.Contains(ticketStates, p.Filter.State) {
		p.Filter.State = ""
	}
	if p.Available {
		var err error
		if p.Tickets, err = a.reads.list(r.Context(), a.db, p.Filter); err != nil {
			return err
		}
	}
	return a.render(w, r, http.StatusOK, "tickets.html", pageData{Title: "Tickets", Nav: "tickets", Data: p})
}

// ticketPage is one Ticket with everything recorded about it.
type ticketPage struct {
	Ticket   tickets.Ticket
	Threads  []tickets.Thread
	Cards    []tickets.Card
	Sessions []sessionView
	// Reports and Messages are newest first.
	Reports   []tickets.Report
	HandBacks []tickets.HandBack
	Notes     []string
	Messages  []tickets.Outgoing
	// Pauses are the pauses and resumes made in the panel, newest first;
	// package tickets keeps only the current pause.
	Pauses []auditEntry
	// Totals is the usage of all the Ticket's Sessions; nil without a
	// session store.
	Totals *session.Totals
	// Budget says what the Ticket may spend and what of it is spent.
	Budget string
	// Behaviour is how each model behaved in the Ticket's Sessions.
	Behaviour []session.Behaviour
	CanPause  bool
	CanStop   bool
	HasTrails bool
	// Live is the live section's first state; Entries the latest
	// transcript entries, newest first; Cursor the newest entry's id, from
	// which the page's stream goes on.
	Live    liveState
	Entries []liveEntry
	Cursor  int64
	// Links are the Ticket's places on GitHub and Feishu.
	Links []ticketLink
	// Files are its pull request's changed files; nil without one.
	Files *pullFilesView
	// Setup is the Ticket's last setup; nil when none ran.
	Setup *repoenv.Outcome
}

// sessionView is one Session with its transcript and model requests.
type sessionView struct {
	Session  *session.Session
	Messages []session.Message
	Requests []session.Request
	// Results maps a tool call id to the tool message that answered it.
	Results map[string]session.Message
}

func (a *Admin) ticketID(r *http.Request) (int64, error) {
	if a.deps.Tickets == nil {
		return 0, httpserver.Errorf(http.StatusNotFound, "Tickets are not available in this process.")
	}
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, httpserver.Errorf(http.StatusNotFound, "There is no such Ticket.")
	}
	return id, nil
}

func (a *Admin) getTicket(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id, err := a.ticketID(r)
	if err != nil {
		return err
	}
	t, err := a.deps.Tickets.Ticket(ctx, a.db, id)
	if errors.Is(err, tickets.ErrNotFound) {
		return &httpserver.Error{Status: http.StatusNotFound, Message: "There is no such Ticket.", Err: err}
	}
	if err != nil {
		return err
	}
	p := ticketPage{Ticket: a.holdNamed(ctx, t), CanPause: a.deps.Pauser != nil, CanStop: a.deps.Stopper != nil}
	if p.Threads, err = a.deps.Tickets.TicketThreads(ctx, a.db, id); err != nil {
		return err
	}
	if p.Live, err = a.liveView(ctx, t); err != nil {
		return err
	}
	if p.Entries, err = a.liveEntries(ctx, id, 0); err != nil {
		return err
	}
	if len(p.Entries) > 0 {
		p.Cursor = p.Entries[0].ID
	}
	if err := a.readTicketRecord(ctx, id, &p); err != nil {
		return err
	}
	cardIDs, err := a.reads.cardIDs(ctx, a.db, id, 100)
	if err != nil {
		return err
	}
	for _, cid := range cardIDs {
		c, err := a.deps.Tickets.Card(ctx, a.db, cid)
		if err != nil {
			return err
		}
		p.Cards = append(p.Cards, c)
	}
	p.Links = ticketLinks(t, p.Threads, p.Cards)
	if a.deps.RepoEnv != nil {
		if o, ok, err := a.deps.RepoEnv.Ticket(ctx, a.db, id); err != nil {
			return err
		} else if ok {
			p.Setup = &o
		}
	}
	p.Files = a.pullFiles(ctx, t.Repo, t.PullNumber)
	if st := a.deps.Sessions; st != nil {
		totals, err := st.TicketTotals(ctx, a.db, id)
		if err != nil {
			return err
		}
		p.Totals = &totals
		if p.Budget, err = a.budgetLine(ctx, id, totals); err != nil {
			return err
		}
		if p.Behaviour, err = st.TicketBehaviour(ctx, a.db, id); err != nil {
			return err
		}
		sessions, err := st.ForTicket(ctx, a.db, id)
		if err != nil {
			return err
		}
		for _, s := range sessions {
			v := sessionView{Session: s, Results: map[string]session.Message{}}
			if v.Messages, err = st.Messages(ctx, a.db, s.ID, 0); err != nil {
				return err
			}
			if v.Requests, err = st.Requests(ctx, a.db, s.ID); err != nil {
				return err
			}
			for _, m := range v.Messages {
				if m.Role == "tool" {
					v.Results[m.ToolCallID] = m
				}
			}
			p.Sessions = append(p.Sessions, v)
		}
	}
	return a.render(w, r, http.StatusOK, "ticket.html", pageData{Title: "Ticket " + strconv.FormatInt(id, 10) + ": " + t.Title, Nav: "tickets", Data: p})
}

// readTicketRecord fills in what the Ticket's Executor and the service
// recorded: Reports, hand-backs, notes, messages sent and the panel's
// pauses.
func (a *Admin) readTicketRecord(ctx context.Context, id int64, p *ticketPage) error {
	st := a.deps.Tickets
	var err error
	if p.Reports, err = st.Reports(ctx, a.db, id); err != nil {
		return err
	}
	slices.Reverse(p.Reports)
	if p.HandBacks, err = a.reads.handBacks(ctx, a.db, id); err != nil {
		return err
	}
	if p.Notes, err = st.Notes(ctx, a.db, id); err != nil {
		return err
	}
	if p.Messages, err = st.Outgoings(ctx, a.db, id); err != nil {
		return err
	}
	slices.Reverse(p.Messages)
	p.Pauses, err = a.audit.forTarget(ctx, a.db, ticketTarget(id), []string{actionPauseTicket, actionResume, actionStopTicket, actionContinue, actionRetry}, 50)
	return err
}

func ticketTarget(id int64) string { return "ticket " + strconv.FormatInt(id, 10) }

func (a *Admin) postTicket(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id, err := a.ticketID(r)
	if err != nil {
		return err
	}
	actor := currentSession(ctx).Actor
	target := ticketTarget(id)
	url := "/admin/tickets/" + strconv.FormatInt(id, 10)
	entry := auditEntry{CreatedAt: a.cfg.Now(), Actor: actor, Target: target}
	action := r.PostFormValue("action")
	switch {
	case (action == "pause" || action == "resume") && a.deps.Pauser == nil:
		return httpserver.Errorf(http.StatusNotImplemented, "Pausing Tickets is not available in this process.")
	case (action == "stop" || action == "continue" || action == "retry") && a.deps.Stopper == nil:
		return httpserver.Errorf(http.StatusNotImplemented, "Stopping Tickets is not available in this process.")
	}
	switch action {
	case "stop":
		reason := strings.TrimSpace(r.PostFormValue("reason"))
		if err := a.deps.Stopper.Stop(ctx, id, actor, reason); err != nil {
			return stopError(err)
		}
		entry.Action, entry.Detail = actionStopTicket, reason
		url = withQuery(url, "done", "stopped")
	case "continue":
		var raise tickets.Budget
		if v := strings.TrimSpace(r.PostFormValue("budget")); v != "" {
			b, ok, err := tickets.ParseBudget("budget " + v)
			if err != nil || !ok {
				return httpserver.Errorf(http.StatusBadRequest, "The budget reads like \"20M tokens\", \"20000000\" or \"$5\"; nothing was changed.")
			}
			raise = b
			entry.Detail = "budget: " + b.String() + " more"
		}
		if err := a.deps.Stopper.ContinueWith(ctx, id, actor, raise); err != nil {
			return stopError(err)
		}
		entry.Action = actionContinue
		url = withQuery(url, "done", "continued")
	case "retry":
		if err := a.deps.Stopper.Retry(ctx, id, actor); err != nil {
			return stopError(err)
		}
		entry.Action = actionRetry
		url = withQuery(url, "done", "retried")
	case "pause":
		reason := strings.TrimSpace(r.PostFormValue("reason"))
		if err := a.deps.Pauser.Pause(ctx, id, actor, reason); err != nil {
			return pauseError(err)
		}
		entry.Action, entry.Detail = actionPauseTicket, reason
		url = withQuery(url, "done", "paused")
	case "resume":
		if err := a.deps.Pauser.Resume(ctx, id, actor); err != nil {
			return pauseError(err)
		}
		entry.Action = actionResume
		url = withQuery(url, "done", "resumed")
	default:
		return httpserver.Errorf(http.StatusBadRequest, "Unknown action.")
	}
	if err := a.audit.record(ctx, a.db, entry); err != nil {
		return err
	}
	return redirect(w, r, url)
}

// pauseError turns the Pauser's refusals into messages a person can act on.
func pauseError(err error) error {
	switch {
	case errors.Is(err, tickets.ErrEnded):
		return &httpserver.Error{Status: http.StatusConflict, Message: "The Ticket has ended, so there is nothing to pause.", Err: err}
	case errors.Is(err, tickets.ErrPaused):
		return &httpserver.Error{Status: http.StatusConflict, Message: "The Ticket is paused: resume it instead.", Err: err}
	case errors.Is(err, tickets.ErrNotStopped):
		return &httpserver.Error{Status: http.StatusConflict, Message: "The Ticket's work has not stopped, so there is nothing to continue.", Err: err}
	case errors.Is(err, tickets.ErrNotFailed):
		return &httpserver.Error{Status: http.StatusConflict, Message: "The Ticket's last job did not fail, so there is nothing to retry.", Err: err}
	case errors.Is(err, tickets.ErrNotFound):
		return &httpserver.Error{Status: http.StatusNotFound, Message: "There is no such Ticket.", Err: err}
	}
	return err
}

// stopError turns the Stopper's refusals into messages a person can act on.
func stopError(err error) error {
	if errors.Is(err, tickets.ErrEnded) {
		return &httpserver.Error{Status: http.StatusConflict, Message: "The Ticket is done, so there is nothing to stop or continue.", Err: err}
	}
	return pauseError(err)
}

// budgetLine says what a Ticket may spend (its own budget, or the
// default) and how much of it its Sessions spent.
func (a *Admin) budgetLine(ctx context.Context, id int64, totals session.Totals) (string, error) {
	b := a.cfg.TicketBudget
	own, ok, err := a.deps.Tickets.TicketBudget(ctx, a.db, id)
	if err != nil {
		return "", err
	}
	kind := "the default"
	if ok && own.Tokens > 0 {
		b.Tokens, kind = own.Tokens, "given by "+a.actorName(ctx, id, own.SetBy)
	}
	if ok && own.Cost > 0 {
		b.Cost, kind = own.Cost, "given by "+a.actorName(ctx, id, own.SetBy)
	}
	line := fmt.Sprintf("%s (%s); spent %s tokens", b, kind, tickets.Thousands(totals.Usage.Total()))
	if b.Tokens > 0 {
		line += fmt.Sprintf(" (%.0f%%)", 100*float64(totals.Usage.Total())/float64(b.Tokens))
	}
	if totals.Usage.Cost > 0 || b.Cost > 0 {
		line += fmt.Sprintf(", cost %.4f", totals.Usage.Cost)
	}
	if ok && !own.Raise.IsZero() {
		line += fmt.Sprintf("; %s more when its next Session starts", own.Raise)
	}
	return line, nil
}

// actorName is how the panel names who paused, stopped or continued a
// Ticket (people.ActorName); a failed lookup shows the recorded actor and
// is logged.
func (a *Admin) actorName(ctx context.Context, ticketID int64, actor string) string {
	name, err := people.ActorName(ctx, a.db, actor)
	if err != nil && ctx.Err() == nil {
		a.cfg.Logger.Warn("finding a person's name", "ticket", ticketID, "actor", actor, "error", err)
	}
	return name
}

// holdNamed is t as the Ticket page shows it: its pause and stop name the
// person by name rather than by account.
func (a *Admin) holdNamed(ctx context.Context, t tickets.Ticket) tickets.Ticket {
	if t.Stop != nil {
		s := *t.Stop
		s.By = a.actorName(ctx, t.ID, s.By)
		t.Stop = &s
	}
	if t.Pause != nil {
		p := *t.Pause
		p.By = a.actorName(ctx, t.ID, p.By)
		t.Pause = &p
	}
	return t
}
