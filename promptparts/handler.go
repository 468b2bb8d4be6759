package promptparts

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/internal/httpserver"
)

// Routes mounts the configuration API (docs/prompts.md#the-configuration-api) on r, which main gives as
// the authenticated /api router:
//
//	GET  /config
//	POST /config
//	GET  /config/versions
//	GET  /config/versions/{revision}
//	GET  /config/versions/{revision}/content
//	GET  /config/diff?from=A&to=B
//	POST /config/versions/{revision}/restore
func (s *Service) Routes(r chi.Router) {
	h := func(fn httpserver.HandlerFunc) http.HandlerFunc { return httpserver.HandleWith(s.cfg.Logger, fn) }
	r.Get("/config", h(s.getConfig))
	r.Post("/config", h(s.postConfig))
	r.Get("/config/versions", h(s.getVersions))
	r.Get("/config/versions/{revision}", h(s.getVersion))
	r.Get("/config/versions/{revision}/content", h(s.getContent))
	r.Get("/config/diff", h(s.getDiff))
	r.Post("/config/versions/{revision}/restore", h(s.postRestore))
}

func (s *Service) getConfig(w http.ResponseWriter, r *http.Request) error {
	o, err := s.Overview(r.Context())
	if err != nil {
		return err
	}
	httpserver.WriteJSON(w, http.StatusOK, o)
	return nil
}

func (s *Service) postConfig(w http.ResponseWriter, r *http.Request) error {
	var raw jsonBody
	if err := httpserver.DecodeJSON(r, &raw); err != nil {
		return err
	}
	res, err := s.SaveJSON(r.Context(), raw, SaveMeta{Origin: OriginPanel, Actor: httpserver.Actor(r.Context())})
	return writeSave(w, res, err)
}

// jsonBody keeps a request body as raw JSON after DecodeJSON checked it.
type jsonBody []byte

func (b *jsonBody) UnmarshalJSON(data []byte) error {
	*b = append((*b)[:0], data...)
	return nil
}

// writeSave answers a save or restore: 201 with the new revision, 200 when
// nothing changed, 409 on a stale base and 422 listing every problem.
func writeSave(w http.ResponseWriter, res SaveResult, err error) error {
	if err != nil {
		return httpError(err)
	}
	if res.Unchanged {
		httpserver.WriteJSON(w, http.StatusOK, res)
		return nil
	}
	httpserver.WriteJSON(w, http.StatusCreated, res)
	return nil
}

// ConflictBody is the 409 answer to a stale save.
type ConflictBody struct {
	Error        string `json:"error"`
	HeadRevision int64  `json:"head_revision"`
	BaseRevision int64  `json:"base_revision"`
}

// ProblemsBody is the 422 answer to an invalid save.
type ProblemsBody struct {
	Error    string    `json:"error"`
	Problems []Problem `json:"problems"`
}

func httpError(err error) error {
	var (
		ce *ConflictError
		ve *ValidationError
		se *SyntaxError
	)
	switch {
	case errors.As(err, &ce):
		return &httpserver.Error{Status: http.StatusConflict, Err: err, Body: ConflictBody{
			Error:        "the configuration changed since base_revision: reload, reapply your change and save again",
			HeadRevision: ce.HeadRevision,
			BaseRevision: ce.BaseRevision,
		}}
	case errors.As(err, &ve):
		return &httpserver.Error{Status: http.StatusUnprocessableEntity, Err: err, Body: ProblemsBody{
			Error:    "invalid configuration",
			Problems: ve.Problems,
		}}
	case errors.As(err, &se):
		return &httpserver.Error{Status: http.StatusBadRequest, Message: se.Error(), Err: err}
	case errors.Is(err, ErrNotFound):
		return &httpserver.Error{Status: http.StatusNotFound, Message: "no such revision", Err: err}
	}
	return err
}

func (s *Service) getVersions(w http.ResponseWriter, r *http.Request) error {
	before, err := queryInt(r, "before", 0)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 100)
	if err != nil {
		return err
	}
	versions, err := s.Versions(r.Context(), before, int(limit))
	if err != nil {
		return err
	}
	if versions == nil {
		versions = []VersionInfo{}
	}
	httpserver.WriteJSON(w, http.StatusOK, map[string]any{"versions": versions})
	return nil
}

func (s *Service) getVersion(w http.ResponseWriter, r *http.Request) error {
	rev, err := pathRevision(r)
	if err != nil {
		return err
	}
	v, err := s.Version(r.Context(), rev)
	if err != nil {
		return httpError(err)
	}
	httpserver.WriteJSON(w, http.StatusOK, v)
	return nil
}

// getContent answers a revision's content as the agents read it under
// that revision (Content).
func (s *Service) getContent(w http.ResponseWriter, r *http.Request) error {
	rev, err := pathRevision(r)
	if err != nil {
		return err
	}
	c, err := s.Content(r.Context(), rev)
	if err != nil {
		return httpError(err)
	}
	httpserver.WriteJSON(w, http.StatusOK, c)
	return nil
}

func (s *Service) getDiff(w http.ResponseWriter, r *http.Request) error {
	head, err := s.Head(r.Context())
	if err != nil {
		return err
	}
	from, err := queryInt(r, "from", head)
	if err != nil {
		return err
	}
	to, err := queryInt(r, "to", head)
	if err != nil {
		return err
	}
	d, err := s.DiffRevisions(r.Context(), from, to)
	if err != nil {
		return httpError(err)
	}
	httpserver.WriteJSON(w, http.StatusOK, d)
	return nil
}

func (s *Service) postRestore(w http.ResponseWriter, r *http.Request) error {
	rev, err := pathRevision(r)
	if err != nil {
		return err
	}
	var body struct {
		BaseRevision   *int64 `json:"base_revision"`
		Note           string `json:"note"`
		FollowDefaults bool   `json:"follow_defaults"`
	}
	if err := httpserver.DecodeJSON(r, &body); err != nil {
		if errors.Is(err, io.EOF) {
			return httpserver.Errorf(http.StatusBadRequest, "malformed JSON: send {\"base_revision\": N}")
		}
		return err
	}
	if body.BaseRevision == nil {
		return &httpserver.Error{Status: http.StatusUnprocessableEntity, Body: ProblemsBody{
			Error:    "invalid restore",
			Problems: []Problem{{Key: "base_revision", Message: "is required: name the revision the restore was decided against"}},
		}}
	}
	res, err := s.RestoreWith(r.Context(), rev, *body.BaseRevision, SaveMeta{Origin: OriginPanel, Actor: httpserver.Actor(r.Context())},
		RestoreOptions{Note: body.Note, FollowDefaults: body.FollowDefaults})
	return writeSave(w, res, err)
}

func pathRevision(r *http.Request) (int64, error) {
	rev, err := strconv.ParseInt(chi.URLParam(r, "revision"), 10, 64)
	if err != nil || rev < 0 {
		return 0, httpserver.Errorf(http.StatusBadRequest, "revision must be a whole number")
	}
	return rev, nil
}

func queryInt(r *http.Request, name string, def int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, httpserver.Errorf(http.StatusBadRequest, "%s must be a whole number", name)
	}
	return n, nil
}
