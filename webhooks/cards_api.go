package webhooks

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/modelhealth"
	"github.com/superagent-dev/superagent/tickets"
)

// Card list limits.
const (
	defaultCardLimit = 50
	maxCardLimit     = 500
)

// cardJSON is a card as GET /api/cards shows it.
type cardJSON struct {
	ID           int64               `json:"id"`
	Source       string              `json:"source"`
	Kind         string              `json:"kind"`
	Thread       string              `json:"thread"`
	ThreadTitle  string              `json:"thread_title,omitempty"`
	Addressed    bool                `json:"addressed"`
	AddressedWhy string              `json:"addressed_why,omitempty"`
	Author       tickets.Author      `json:"author"`
	Text         string              `json:"text"`
	Truncated    bool                `json:"truncated"`
	FullText     string              `json:"full_text,omitempty"`
	References   []tickets.Reference `json:"references"`
	URL          string              `json:"url,omitempty"`
	State        string              `json:"state"`
	Ticket       *int64              `json:"ticket"`
	CreatedAt    time.Time           `json:"created_at"`
	// HeldUp says, for a candidate, what it waits for when that is a
	// failure: the main Session's model failing.
	HeldUp *heldUpJSON `json:"held_up,omitempty"`
}

// heldUpJSON is why a candidate waits: the main Session's model has been
// failing since Since; Error is its latest failure, scrubbed.
type heldUpJSON struct {
	Reason      string    `json:"reason"`
	Model       string    `json:"model"`
	Since       time.Time `json:"since"`
	LastFailure time.Time `json:"last_failure"`
	Error       string    `json:"error"`
}

// heldUp reads whether the main Session's model is failing: nil while it
// answers.
func (s *Service) heldUp(ctx context.Context) (*heldUpJSON, error) {
	st, err := modelhealth.Read(ctx, s.d, modelhealth.Main)
	if err != nil || !st.Failing() {
		return nil, err
	}
	return &heldUpJSON{Reason: "the main Session's model is failing", Model: st.Model, Since: st.FailingSince,
		LastFailure: st.LastFailure, Error: st.Error}, nil
}

// withHeldUp is c as JSON, held up by h when it is a candidate.
func withHeldUp(c tickets.Card, h *heldUpJSON) cardJSON {
	out := toJSON(c)
	if c.State == tickets.CardCandidate {
		out.HeldUp = h
	}
	return out
}

func toJSON(c tickets.Card) cardJSON {
	out := cardJSON{
		ID: c.ID, Source: c.Source, Kind: c.Kind, Thread: c.Thread.Key, ThreadTitle: c.Thread.Title,
		Addressed: c.Addressed, AddressedWhy: c.AddressedWhy, Author: c.Author, Text: c.Text,
		Truncated: c.Truncated, References: c.References, URL: c.URL, State: c.State, CreatedAt: c.CreatedAt,
	}
	if out.References == nil {
		out.References = []tickets.Reference{}
	}
	if c.Truncated {
		out.FullText = c.TextPointer()
	}
	if c.TicketID != 0 {
		id := c.TicketID
		out.Ticket = &id
	}
	return out
}

func (s *Service) listCards(w http.ResponseWriter, r *http.Request) error {
	limit := defaultCardLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxCardLimit {
			return httpserver.Errorf(http.StatusBadRequest, "limit must be an integer from 1 to %d", maxCardLimit)
		}
		limit = n
	}
	cards, err := s.store.ListCards(r.Context(), s.d, limit)
	if err != nil {
		return err
	}
	held, err := s.heldUp(r.Context())
	if err != nil {
		return err
	}
	out := make([]cardJSON, 0, len(cards))
	for _, c := range cards {
		out = append(out, withHeldUp(c, held))
	}
	httpserver.WriteJSON(w, http.StatusOK, out)
	return nil
}

func cardID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		return 0, httpserver.Errorf(http.StatusBadRequest, "card id must be a positive integer")
	}
	return id, nil
}

func (s *Service) getCard(w http.ResponseWriter, r *http.Request) error {
	id, err := cardID(r)
	if err != nil {
		return err
	}
	c, err := s.store.Card(r.Context(), s.d, id)
	if errors.Is(err, tickets.ErrNotFound) {
		return httpserver.Errorf(http.StatusNotFound, "no card %d", id)
	}
	if err != nil {
		return err
	}
	held, err := s.heldUp(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		cardJSON
		Rendered string `json:"rendered"`
	}{withHeldUp(c, held), tickets.Render(c)}
	httpserver.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Service) cardText(w http.ResponseWriter, r *http.Request) error {
	id, err := cardID(r)
	if err != nil {
		return err
	}
	text, err := s.store.FullText(r.Context(), s.d, id)
	if errors.Is(err, tickets.ErrNotFound) {
		return httpserver.Errorf(http.StatusNotFound, "no card %d", id)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write([]byte(text))
	return nil
}
