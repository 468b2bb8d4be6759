package admin

import (
	"errors"
	"net/http"
	"strings"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/outbox"
)

// maxOpenRequest bounds POST /tickets's body: a body field at its limit,
// fully escaped, fits.
const maxOpenRequest = 8 * orchestrator.MaxAPIBody

// open answers POST /tickets {repo, title, body, requester}: 201 with the
// Ticket's id and page once it is stored with its Executor's job; 400
// listing every problem of the request; 403 with the reason when the
// requester does not pass the gate. Nothing is stored on a 4xx.
func (a *TicketsAPI) open(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxOpenRequest)
	var req orchestrator.APIRequest
	if err := httpserver.DecodeJSON(r, &req); err != nil {
		return err
	}
	t, err := a.opener.OpenFromAPI(r.Context(), req, apiActor(r))
	var invalid *orchestrator.InvalidRequestError
	var refused *orchestrator.RefusedRequestError
	switch {
	case errors.As(err, &invalid):
		return &httpserver.Error{Status: http.StatusBadRequest, Message: "invalid request",
			Body: map[string]any{"error": "invalid request: " + strings.Join(invalid.Problems, "; "), "problems": invalid.Problems}}
	case errors.As(err, &refused):
		return httpserver.Errorf(http.StatusForbidden, "%s", refused.Reason)
	case err != nil:
		return err
	}
	page := outbox.TicketURL(a.pageBase, t.ID)
	if page == "" {
		page = outbox.TicketURL("/", t.ID)
	}
	w.Header().Set("Location", page)
	httpserver.WriteJSON(w, http.StatusCreated, map[string]any{"id": t.ID, "url": page, "ticket": t})
	return nil
}
