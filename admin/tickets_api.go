package admin

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// TicketSessions is what the Tickets API reads of Sessions; *session.Store
// is one.
type TicketSessions interface {
	ForTicket(ctx context.Context, q db.Querier, ticketID int64) ([]*session.Session, error)
	TicketTotals(ctx context.Context, q db.Querier, ticketID int64) (session.Totals, error)
	TicketBehaviour(ctx context.Context, q db.Querier, ticketID int64) ([]session.Behaviour, error)
}

// TicketsAPI serves GET /tickets, GET /tickets/{id} and POST
// /tickets/{id}/pause, /resume, /stop, /continue and /retry on the authenticated
// /api router.
type TicketsAPI struct {
	d        *db.DB
	store    *tickets.Store
	sessions TicketSessions
	pauser   *tickets.Pauser
	stopper  *tickets.Stopper
	logger   interface{ Error(string, ...any) }
	opener   TicketOpener
	pageBase string
}

// TicketOpener opens a Ticket asked for through the API on behalf of by;
// *orchestrator.Orchestrator is one.
type TicketOpener interface {
	OpenFromAPI(ctx context.Context, req orchestrator.APIRequest, by string) (tickets.Ticket, error)
}

// WithOpener serves POST /tickets through o; publicURL is the base of the
// Ticket pages it answers with (SUPERAGENT_PUBLIC_URL; empty: a path).
func (a *TicketsAPI) WithOpener(o TicketOpener, publicURL string) *TicketsAPI {
	a.opener, a.pageBase = o, publicURL
	return a
}

// NewTicketsAPI returns the Tickets API. sessions may be nil (no sessions
// or usage are shown); logger receives handler errors.
func NewTicketsAPI(d *db.DB, store *tickets.Store, sessions TicketSessions, logger interface{ Error(string, ...any) }) *TicketsAPI {
	return &TicketsAPI{d: d, store: store, sessions: sessions, pauser: tickets.NewPauser(d, store),
		stopper: tickets.NewStopper(d, store, nil), logger: logger}
}

// WithStopper makes the API stop and continue through s (with its limit
// check and hooks).
func (a *TicketsAPI) WithStopper(s *tickets.Stopper) *TicketsAPI {
	a.stopper = s
	return a
}

// WithPauser makes the API pause and resume through p (with its hooks).
func (a *TicketsAPI) WithPauser(p *tickets.Pauser) *TicketsAPI {
	a.pauser = p
	return a
}

// Routes mounts the API.
func (a *TicketsAPI) Routes(r chi.Router) {
	r.Get("/tickets", httpserver.HandleWith(a.logger, a.list))
	r.Get("/tickets/{id}", httpserver.HandleWith(a.logger, a.get))
	if a.opener != nil {
		r.Post("/tickets", httpserver.HandleWith(a.logger, a.open))
	}
	r.Post("/tickets/{id}/pause", httpserver.HandleWith(a.logger, a.pause))
	r.Post("/tickets/{id}/resume", httpserver.HandleWith(a.logger, a.resume))
	r.Post("/tickets/{id}/stop", httpserver.HandleWith(a.logger, a.stop))
	r.Post("/tickets/{id}/continue", httpserver.HandleWith(a.logger, a.continueTicket))
	r.Post("/tickets/{id}/retry", httpserver.HandleWith(a.logger, a.retry))
}

func (a *TicketsAPI) list(w http.ResponseWriter, r *http.Request) error {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return httpserver.Errorf(http.StatusBadRequest, "limit must be between 1 and 1000")
		}
		limit = n
	}
	ts, err := a.store.ListTickets(r.Context(), a.d, r.URL.Query().Get("state"), limit)
	if err != nil {
		return err
	}
	httpserver.WriteJSON(w, http.StatusOK, map[string]any{"tickets": ts})
	return nil
}

// apiSessionView is one Session as the API shows it.
type apiSessionView struct {
	ID       int64  `json:"id"`
	Role     string `json:"role"`
	State    string `json:"state"`
	Reason   string `json:"reason,omitempty"`
	Requests int64  `json:"requests"`
}

// apiUsageView sums a Ticket's Sessions.
type apiUsageView struct {
	Sessions int64 `json:"sessions"`
	Requests int64 `json:"requests"`
	model.Usage
}

func (a *TicketsAPI) ticketID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		return 0, httpserver.Errorf(http.StatusBadRequest, "ticket id must be a positive number")
	}
	return id, nil
}

func ticketNotFound(err error) error {
	if errors.Is(err, tickets.ErrNotFound) {
		return httpserver.Errorf(http.StatusNotFound, "no such ticket")
	}
	return err
}

func (a *TicketsAPI) get(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id, err := a.ticketID(r)
	if err != nil {
		return err
	}
	t, err := a.store.Ticket(ctx, a.d, id)
	if err != nil {
		return ticketNotFound(err)
	}
	threads, err := a.store.TicketThreads(ctx, a.d, id)
	if err != nil {
		return err
	}
	reports, err := a.store.Reports(ctx, a.d, id)
	if err != nil {
		return err
	}
	messages, err := a.store.Outgoings(ctx, a.d, id)
	if err != nil {
		return err
	}
	out := map[string]any{"ticket": t, "threads": threads, "reports": reports, "messages": messages,
		"sessions": []apiSessionView{}, "usage": apiUsageView{}, "behaviour": []apiBehaviourView{}}
	if a.sessions != nil {
		ss, err := a.sessions.ForTicket(ctx, a.d, id)
		if err != nil {
			return err
		}
		views := []apiSessionView{}
		for _, s := range ss {
			views = append(views, apiSessionView{ID: s.ID, Role: string(s.Role), State: string(s.State), Reason: s.StateReason, Requests: s.Requests})
		}
		tot, err := a.sessions.TicketTotals(ctx, a.d, id)
		if err != nil {
			return err
		}
		behaviour, err := a.sessions.TicketBehaviour(ctx, a.d, id)
		if err != nil {
			return err
		}
		out["sessions"] = views
		out["usage"] = apiUsageView{Sessions: tot.Sessions, Requests: tot.Requests, Usage: tot.Usage}
		out["behaviour"] = behaviourViews(behaviour)
	}
	httpserver.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *TicketsAPI) pause(w http.ResponseWriter, r *http.Request) error {
	id, err := a.ticketID(r)
	if err != nil {
		return err
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if r.ContentLength != 0 {
		if err := httpserver.DecodeJSON(r, &body); err != nil {
			return err
		}
	}
	if err := a.pauser.Pause(r.Context(), id, apiActor(r), body.Reason); err != nil {
		if errors.Is(err, tickets.ErrEnded) {
			return httpserver.Errorf(http.StatusConflict, "the ticket has ended")
		}
		return ticketNotFound(err)
	}
	return a.writeTicket(w, r, id)
}

func (a *TicketsAPI) resume(w http.ResponseWriter, r *http.Request) error {
	id, err := a.ticketID(r)
	if err != nil {
		return err
	}
	if err := a.pauser.Resume(r.Context(), id, apiActor(r)); err != nil {
		return ticketNotFound(err)
	}
	return a.writeTicket(w, r, id)
}

func (a *TicketsAPI) stop(w http.ResponseWriter, r *http.Request) error {
	id, err := a.ticketID(r)
	if err != nil {
		return err
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if r.ContentLength != 0 {
		if err := httpserver.DecodeJSON(r, &body); err != nil {
			return err
		}
	}
	if err := a.stopper.Stop(r.Context(), id, apiActor(r), body.Reason); err != nil {
		return apiStopError(err)
	}
	return a.writeTicket(w, r, id)
}

func (a *TicketsAPI) continueTicket(w http.ResponseWriter, r *http.Request) error {
	id, err := a.ticketID(r)
	if err != nil {
		return err
	}
	if err := a.stopper.Continue(r.Context(), id, apiActor(r)); err != nil {
		return apiStopError(err)
	}
	return a.writeTicket(w, r, id)
}

// retry runs a Ticket whose last Executor job failed again.
func (a *TicketsAPI) retry(w http.ResponseWriter, r *http.Request) error {
	id, err := a.ticketID(r)
	if err != nil {
		return err
	}
	if err := a.stopper.Retry(r.Context(), id, apiActor(r)); err != nil {
		return apiStopError(err)
	}
	return a.writeTicket(w, r, id)
}

// apiStopError maps the Stopper's refusals to 409 with the reason.
func apiStopError(err error) error {
	switch {
	case errors.Is(err, tickets.ErrEnded):
		return httpserver.Errorf(http.StatusConflict, "the ticket is done")
	case errors.Is(err, tickets.ErrPaused):
		return httpserver.Errorf(http.StatusConflict, "the ticket is paused: resume it")
	case errors.Is(err, tickets.ErrNotStopped):
		return httpserver.Errorf(http.StatusConflict, "the ticket's work has not stopped: nothing to continue")
	case errors.Is(err, tickets.ErrNotFailed):
		return httpserver.Errorf(http.StatusConflict, "the ticket's last job did not fail: nothing to retry")
	}
	return ticketNotFound(err)
}

func (a *TicketsAPI) writeTicket(w http.ResponseWriter, r *http.Request, id int64) error {
	t, err := a.store.Ticket(r.Context(), a.d, id)
	if err != nil {
		return ticketNotFound(err)
	}
	httpserver.WriteJSON(w, http.StatusOK, t)
	return nil
}

func apiActor(r *http.Request) string {
	if a := httpserver.Actor(r.Context()); a != "" {
		return a
	}
	return "api"
}

// apiBehaviourView is how one model behaved in the Ticket's Sessions
// (session.Behaviour), as the API shows it.
type apiBehaviourView struct {
	Model          string         `json:"model"`
	Sessions       int            `json:"sessions"`
	Requests       int            `json:"requests"`
	Refusals       map[string]int `json:"refusals"`
	Nudges         int            `json:"nudges"`
	Unfinished     int            `json:"unfinished_turns"`
	RepeatNotes    int            `json:"repeat_notes"`
	RepeatsStopped int            `json:"repeats_stopped"`
	StallNotes     int            `json:"stall_notes"`
	StallsStopped  int            `json:"stalls_stopped"`
	Faults         map[string]int `json:"faults_retried"`
}

func behaviourViews(bs []session.Behaviour) []apiBehaviourView {
	out := make([]apiBehaviourView, 0, len(bs))
	for _, b := range bs {
		out = append(out, apiBehaviourView{Model: b.Model, Sessions: b.Sessions, Requests: b.Requests, Refusals: b.Refusals,
			Nudges: b.Nudges, Unfinished: b.Unfinished, RepeatNotes: b.RepeatNotes, RepeatsStopped: b.RepeatsStopped,
			StallNotes: b.StallNotes, StallsStopped: b.StallsStopped, Faults: b.Faults})
	}
	return out
}
