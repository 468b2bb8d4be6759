package admin

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/promptparts/trial"
	"github.com/superagent-dev/superagent/session"
)

// tryPage tries a draft on recorded model requests: the draft (one part's
// unsaved text from its editor, or none: the latest revision), which
// requests, and the results.
type tryPage struct {
	// Key, Text and BaseRevision are the draft; an empty Key tries the
	// latest revision as it is.
	Key          string
	Text         string
	BaseRevision int64
	// Requests, Last and Role select the requests.
	Requests string
	Last     int
	Role     string
	// Models says, by role, whether the answers are asked for again.
	Models  map[string]bool
	Results []tryResult
	Ran     bool
}

// tryResult is one request tried, laid out.
type tryResult struct {
	trial.Result
	Compare *compareView
}

const defaultTryLast = 3

func (a *Admin) getTry(w http.ResponseWriter, r *http.Request) error {
	if a.deps.Trial == nil {
		return httpserver.Errorf(http.StatusNotFound, "Trying drafts is not available in this process.")
	}
	head, err := a.prompts.Head(r.Context())
	if err != nil {
		return err
	}
	p := a.newTryPage(head)
	p.Requests = r.URL.Query().Get("requests")
	return a.showTry(w, r, http.StatusOK, p, nil)
}

func (a *Admin) newTryPage(head int64) tryPage {
	return tryPage{BaseRevision: head, Last: defaultTryLast, Role: string(session.RoleExecutor), Models: map[string]bool{
		string(session.RoleMain): a.deps.Trial.HasModel(session.RoleMain), string(session.RoleExecutor): a.deps.Trial.HasModel(session.RoleExecutor),
	}}
}

func (a *Admin) showTry(w http.ResponseWriter, r *http.Request, status int, p tryPage, ps problemSet) error {
	return a.render(w, r, status, "try.html", pageData{Title: "Try a draft", Nav: "prompts", Problems: ps, Data: p})
}

// postTry takes a draft from a part's editor (action "draft") and, with
// action "run", tries it on the requests chosen. It writes nothing.
func (a *Admin) postTry(w http.ResponseWriter, r *http.Request) error {
	if a.deps.Trial == nil {
		return httpserver.Errorf(http.StatusNotFound, "Trying drafts is not available in this process.")
	}
	ctx := r.Context()
	base, err := formRevision(r, "base_revision")
	if err != nil {
		return err
	}
	p := a.newTryPage(base)
	p.Key, p.Text = r.PostFormValue("key"), formText(r, "text")
	if v := r.PostFormValue("requests"); v != "" || r.PostFormValue("action") == "run" {
		p.Requests = strings.TrimSpace(v)
	}
	if n, err := strconv.Atoi(r.PostFormValue("last")); err == nil {
		p.Last = n
	}
	if role := r.PostFormValue("role"); role == string(session.RoleMain) || role == string(session.RoleExecutor) {
		p.Role = role
	}
	if r.PostFormValue("action") != "run" {
		return a.showTry(w, r, http.StatusOK, p, nil)
	}

	patch := promptparts.Patch{BaseRevision: base}
	if p.Key != "" {
		patch.Overrides = map[string]*promptparts.OverridePatch{p.Key: {Text: p.Text}}
	}
	draft, err := a.prompts.DraftFromPatch(ctx, patch)
	var ve *promptparts.ValidationError
	if errors.As(err, &ve) {
		return a.showTry(w, r, http.StatusUnprocessableEntity, p, problemSet(ve.Problems))
	}
	if err != nil {
		return notFound(err)
	}
	var ids []int64
	for _, f := range strings.FieldsFunc(p.Requests, func(c rune) bool { return c == ',' || c == ' ' }) {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil || id <= 0 {
			return a.showTry(w, r, http.StatusUnprocessableEntity, p, problemSet{{Key: "requests", Message: strconv.Quote(f) + " is not a model request id"}})
		}
		ids = append(ids, id)
	}
	ids, err = a.deps.Trial.Select(ctx, ids, p.Last, session.Role(p.Role))
	if errors.Is(err, trial.ErrNoRequests) {
		return a.showTry(w, r, http.StatusUnprocessableEntity, p, problemSet{{Key: "requests", Message: err.Error()}})
	}
	if err != nil {
		return err
	}
	results, err := a.deps.Trial.Run(ctx, draft, ids)
	if errors.Is(err, session.ErrRequestNotFound) {
		return a.showTry(w, r, http.StatusUnprocessableEntity, p, problemSet{{Key: "requests", Message: err.Error()}})
	}
	if err != nil {
		return err
	}
	p.Ran = true
	for _, res := range results {
		tr := tryResult{Result: res}
		if res.Prompt.Diff != "" {
			v := foldRows(sideBySide(res.Prompt.Lines()), "r"+strconv.FormatInt(res.Request.ID, 10)+"-change")
			tr.Compare = &v
		}
		p.Results = append(p.Results, tr)
	}
	return a.showTry(w, r, http.StatusOK, p, nil)
}
