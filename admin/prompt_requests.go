package admin

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
)

// requestPromptPage is the system prompt a recorded model request was
// sent, rebuilt from what was recorded, stretch by stretch.
type requestPromptPage struct {
	Request session.Request
	Session *session.Session
	// Problem says why the prompt cannot be shown.
	Problem string
	// Segments are the prompt's stretches, secrets scrubbed as they were
	// before sending.
	Segments []promptparts.Segment
	// Verified says the rebuilt prompt has the SHA-256 recorded with the
	// request: it is byte for byte what the model received.
	Verified bool
	Bytes    int
	// CanTry says the panel can try a draft on it.
	CanTry bool
}

func requestID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, httpserver.Errorf(http.StatusNotFound, "There is no such model request.")
	}
	return id, nil
}

// getRequestPrompt shows a recorded request's system prompt; with
// ?format=text it answers the prompt's exact bytes as plain text.
func (a *Admin) getRequestPrompt(w http.ResponseWriter, r *http.Request) error {
	if a.deps.Sessions == nil {
		return httpserver.Errorf(http.StatusNotFound, "Sessions are not available in this process.")
	}
	ctx := r.Context()
	id, err := requestID(r)
	if err != nil {
		return err
	}
	req, err := a.deps.Sessions.Request(ctx, a.db, id)
	if errors.Is(err, session.ErrRequestNotFound) {
		return &httpserver.Error{Status: http.StatusNotFound, Message: "There is no such model request.", Err: err}
	}
	if err != nil {
		return err
	}
	s, err := a.deps.Sessions.Get(ctx, a.db, req.SessionID)
	if err != nil {
		return err
	}
	p := requestPromptPage{Request: req, Session: s, CanTry: a.deps.Trial != nil}
	var text string
	switch req.AssembledSHA256 {
	case "":
		p.Problem = "This request was made before prompts were recorded, so its prompt cannot be rebuilt."
	default:
		asm, err := a.prompts.Reassemble(ctx, req.AssembledSHA256)
		switch {
		case errors.Is(err, promptparts.ErrNotRecorded):
			p.Problem = "The prompt of this request cannot be rebuilt: " + err.Error() + "."
		case err != nil:
			return err
		default:
			// The Session scrubbed secrets from the prompt before sending it;
			// so does this page, stretch by stretch.
			for _, seg := range asm.Segments {
				seg.Text = a.deps.Scrubber.Scrub(seg.Text)
				p.Segments = append(p.Segments, seg)
			}
			text = a.deps.Scrubber.Scrub(asm.Text)
			p.Verified = asm.Verified && promptparts.SHA256(text) == req.PromptSHA256
			p.Bytes = len(text)
		}
	}
	if r.URL.Query().Get("format") == "text" {
		if p.Problem != "" {
			return httpserver.Errorf(http.StatusNotFound, "%s", p.Problem)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Prompt-Verified", strconv.FormatBool(p.Verified))
		_, _ = w.Write([]byte(text))
		return nil
	}
	return a.render(w, r, http.StatusOK, "request_prompt.html", pageData{
		Title: "Prompt of model request " + strconv.FormatInt(id, 10), Nav: "prompts", Data: p,
	})
}
