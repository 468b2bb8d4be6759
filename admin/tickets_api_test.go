package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

type discardErrors struct{}

func (discardErrors) Error(string, ...any) {}

// TestTicketsAPI drives /api/tickets as main mounts it behind the API's
// authentication, which names the actor.
func TestTicketsAPI(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		w := newTicketWorld(t, d)
		_, err := w.store.AddReport(ctx, d, tickets.Report{TicketID: w.ticket.ID, State: tickets.ReportWaiting,
			Summary: "need a decision", HumanAction: "Poll or retry?"})
		require.NoError(t, err)
		_, err = w.store.RecordIntent(ctx, d, tickets.Outgoing{Key: "api-test", TicketID: w.ticket.ID,
			Source: tickets.SourceGitHub, Kind: "comment", Target: "acme/web#issue:42", Body: "On it."})
		require.NoError(t, err)

		r := chi.NewRouter()
		r.Use(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(w, r.WithContext(httpserver.WithActor(r.Context(), "admin")))
			})
		})
		NewTicketsAPI(d, w.store, session.NewStore(d, nil, nil), discardErrors{}).Routes(r)
		call := func(method, path, body string) (int, map[string]any) {
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			var out map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &out)
			return rec.Code, out
		}

		code, out := call("GET", "/tickets", "")
		require.Equal(t, http.StatusOK, code)
		require.Len(t, out["tickets"], 2)

		id := "/tickets/" + itoa(w.ticket.ID)
		code, out = call("GET", id, "")
		require.Equal(t, http.StatusOK, code)
		require.Len(t, out["threads"], 1)
		require.Len(t, out["reports"], 1)
		require.Len(t, out["messages"], 1)
		require.Len(t, out["sessions"], 1)
		require.NotZero(t, out["usage"].(map[string]any)["requests"])

		code, out = call("POST", id+"/pause", `{"reason":"hold on"}`)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "paused", out["state"])
		require.Equal(t, "admin", out["pause"].(map[string]any)["by"])
		code, out = call("POST", id+"/resume", "")
		require.Equal(t, http.StatusOK, code)
		require.NotEqual(t, "paused", out["state"])

		code, _ = call("POST", id+"/continue", "")
		require.Equal(t, http.StatusConflict, code, "nothing stopped, nothing to continue")
		code, out = call("POST", id+"/stop", `{"reason":"wrong repository"}`)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "cancelled", out["state"])
		require.Equal(t, "admin", out["stop"].(map[string]any)["by"])
		require.Equal(t, "wrong repository", out["stop"].(map[string]any)["reason"])
		code, out = call("POST", id+"/continue", "")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "open", out["state"])
		require.Equal(t, "admin", out["continue"].(map[string]any)["by"])

		code, _ = call("POST", id+"/retry", "")
		require.Equal(t, http.StatusConflict, code, "its last job did not fail: nothing to retry")
		require.NoError(t, w.store.Fail(ctx, d, w.ticket.ID, "cloning failed"))
		code, out = call("POST", id+"/retry", "")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "open", out["state"])
		require.Nil(t, out["failed"])

		done, err := w.store.CreateTicket(ctx, d, tickets.Ticket{Title: "Ended", State: tickets.TicketDone})
		require.NoError(t, err)
		code, _ = call("POST", "/tickets/"+itoa(done.ID)+"/pause", "")
		require.Equal(t, http.StatusConflict, code, "an ended Ticket cannot be paused")
		code, _ = call("POST", "/tickets/"+itoa(done.ID)+"/stop", "")
		require.Equal(t, http.StatusConflict, code, "a done Ticket cannot be stopped")
		code, _ = call("POST", "/tickets/999/stop", "")
		require.Equal(t, http.StatusNotFound, code)
		code, _ = call("GET", "/tickets/999", "")
		require.Equal(t, http.StatusNotFound, code)
	})
}

// The panel pauses and resumes through a tickets.Pauser, and stops and
// continues through a tickets.Stopper.
var (
	_ Pauser  = (*tickets.Pauser)(nil)
	_ Stopper = (*tickets.Stopper)(nil)
)
