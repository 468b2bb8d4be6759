package shots

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/internal/httpserver"
)

// Routes serves GET and HEAD /shots/<token>.png, without authentication:
// whoever has the address may see the image, as whoever can read the pull
// request that links it. An unknown token is 404. The bytes never change,
// so caches (GitHub's image proxy among them) may keep them.
func (s *Store) Routes(r chi.Router, logger *slog.Logger) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := httpserver.HandleWith(logger, s.serve)
	r.Get("/shots/{file}", h)
	r.Head("/shots/{file}", h)
}

func (s *Store) serve(w http.ResponseWriter, r *http.Request) error {
	token, ok := strings.CutSuffix(chi.URLParam(r, "file"), ".png")
	if !ok {
		return httpserver.Errorf(http.StatusNotFound, "no such screenshot")
	}
	data, err := s.PNG(r.Context(), token)
	if errors.Is(err, ErrNotFound) {
		return httpserver.Errorf(http.StatusNotFound, "no such screenshot")
	}
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "image/png")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", `"`+token+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	if match := r.Header.Get("If-None-Match"); match == `"`+token+`"` {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(data)
	}
	return nil
}
