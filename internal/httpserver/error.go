package httpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/go-chi/chi/v5/middleware"
)

// Error is an error that carries the HTTP status and a message safe to show.
// Body, when set, is sent as the JSON response instead of {"error": Message}.
// The cause in Err is logged and never sent.
type Error struct {
	Status  int
	Message string
	Body    any
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %v", e.Status, e.Message, e.Err)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error with a formatted message.
func Errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// HandlerFunc is a handler that returns an error instead of writing one.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Handle adapts fn to http.HandlerFunc: an *Error is answered with its status
// and message, any other error with 500 and a generic message, and logged.
func (s *Server) Handle(fn HandlerFunc) http.HandlerFunc {
	return HandleWith(s.logger, fn)
}

// HandleWith is Handle for packages that hold a logger but not the server.
func HandleWith(logger interface {
	Error(msg string, args ...any)
}, fn HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := fn(w, r)
		if err == nil {
			return
		}
		var he *Error
		if !errors.As(err, &he) {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				he = &Error{Status: http.StatusRequestEntityTooLarge, Message: "request body too large", Err: err}
			} else if IsTimeout(err) {
				he = &Error{Status: http.StatusRequestTimeout, Message: "request body not received in time", Err: err}
			} else {
				he = &Error{Status: http.StatusInternalServerError, Message: "internal error", Err: err}
			}
		}
		if he.Status >= 500 {
			logger.Error("request failed", "status", he.Status, "error", err, "path", r.URL.Path, "request_id", middleware.GetReqID(r.Context()))
		}
		if he.Body != nil {
			WriteJSON(w, he.Status, he.Body)
			return
		}
		WriteError(w, he.Status, he.Message)
	}
}

// WriteJSON writes v as a JSON response.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// WriteError writes {"error": message}.
func WriteError(w http.ResponseWriter, status int, message string) {
	WriteJSON(w, status, map[string]string{"error": message})
}

// DecodeJSON reads a JSON request body into v. It requires a JSON content
// type, refuses trailing data and turns every failure into a 4xx Error.
func DecodeJSON(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return Errorf(http.StatusUnsupportedMediaType, "content type must be application/json")
		}
	}
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &Error{Status: http.StatusRequestEntityTooLarge, Message: "request body too large", Err: err}
		}
		if IsTimeout(err) {
			return &Error{Status: http.StatusRequestTimeout, Message: "request body not received in time", Err: err}
		}
		return &Error{Status: http.StatusBadRequest, Message: "malformed JSON: " + err.Error(), Err: err}
	}
	if dec.More() {
		return Errorf(http.StatusBadRequest, "malformed JSON: data after the top-level value")
	}
	return nil
}
