package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/people"
)

// Activity log actions for people.
const (
	actionPersonCreate = "person_create"
	actionPersonUpdate = "person_update"
	actionPersonDelete = "person_delete"
)

// peopleData is the people page.
type peopleData struct {
	People   []people.Person
	Problems []string
	// Form is what was posted when it was refused.
	Form   map[string]string
	Done   string
	Admin  bool
	GitHub bool
}

func (a *Admin) getPeople(w http.ResponseWriter, r *http.Request) error {
	return a.peoplePage(w, r, http.StatusOK, nil, nil)
}

func (a *Admin) peoplePage(w http.ResponseWriter, r *http.Request, status int, problems []string, form map[string]string) error {
	if a.deps.People == nil {
		return a.render(w, r, http.StatusNotFound, "message.html", pageData{Title: "People", Nav: "people",
			Data: message{Heading: "People", Text: "People are not available in this process."}})
	}
	list, err := a.deps.People.List(r.Context())
	if err != nil {
		return err
	}
	return a.render(w, r, status, "people.html", pageData{Title: "People", Nav: "people", Data: peopleData{
		People: list, Problems: problems, Form: form, Done: r.URL.Query().Get("done"),
		Admin: currentSession(r.Context()).admin(), GitHub: a.cfg.OAuth.Enabled(),
	}})
}

// splitList reads a form field of logins or ids separated by commas,
// spaces or lines.
func splitList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

// postPeople adds, changes or deletes a person (op add, save, delete).
func (a *Admin) postPeople(w http.ResponseWriter, r *http.Request) error {
	if a.deps.People == nil {
		return httpserver.Errorf(http.StatusNotImplemented, "People are not available in this process.")
	}
	ctx := r.Context()
	actor := currentSession(ctx).Actor
	op := r.PostFormValue("op")
	id, _ := strconv.ParseInt(r.PostFormValue("id"), 10, 64)
	p := people.Person{ID: id, Name: r.PostFormValue("name"), Role: r.PostFormValue("role"),
		GitHub: splitList(r.PostFormValue("github")), FeishuOpenIDs: splitList(r.PostFormValue("feishu_open_ids")),
		FeishuUnionIDs: splitList(r.PostFormValue("feishu_union_ids"))}
	var err error
	var action string
	switch op {
	case "add":
		action = actionPersonCreate
		p, err = a.deps.People.Create(ctx, p, a.personRecorder(actor, action))
	case "save":
		action = actionPersonUpdate
		p, err = a.deps.People.Update(ctx, p, a.personRecorder(actor, action))
	case "delete":
		action = actionPersonDelete
		err = a.deps.People.Delete(ctx, id, a.personRecorder(actor, action))
	default:
		return httpserver.Errorf(http.StatusBadRequest, "Unknown change %q.", op)
	}
	var inv *people.InvalidError
	switch {
	case errors.As(err, &inv):
		form := map[string]string{"op": op, "id": r.PostFormValue("id"), "name": r.PostFormValue("name"), "role": r.PostFormValue("role"),
			"github": r.PostFormValue("github"), "feishu_open_ids": r.PostFormValue("feishu_open_ids"), "feishu_union_ids": r.PostFormValue("feishu_union_ids")}
		return a.peoplePage(w, r, http.StatusUnprocessableEntity, inv.Problems, form)
	case errors.Is(err, people.ErrNotFound):
		return httpserver.Errorf(http.StatusNotFound, "That person is no longer there; nothing was changed.")
	case err != nil:
		return err
	}
	a.cfg.Logger.Info("person changed", "action", action, "person", id|p.ID, "by", actor)
	return redirect(w, r, withQuery("/admin/people", "done", op))
}

// personDetail is a person in one line for the activity log.
func personDetail(p people.Person) string {
	if p.Name == "" {
		return ""
	}
	return fmt.Sprintf("%s, %s, github [%s], feishu [%s]", p.Name, p.Role, strings.Join(p.GitHub, " "),
		strings.Join(append(append([]string{}, p.FeishuOpenIDs...), p.FeishuUnionIDs...), " "))
}

// PeopleAPI serves /api/people: list and read for anyone authenticated;
// create, update and delete for the admin token and admins (members'
// sessions do not authenticate changes). Each change is in the activity
// log under the caller.
type PeopleAPI struct{ a *Admin }

// PeopleAPI returns the /api/people routes of the panel's people.
func (a *Admin) PeopleAPI() *PeopleAPI { return &PeopleAPI{a: a} }

// Routes mounts the API on the /api router:
//
//	GET     /people, /people/{id}
//	POST    /people
//	PUT     /people/{id}
//	DELETE  /people/{id}
func (p *PeopleAPI) Routes(r chi.Router) {
	r.Get("/people", httpserver.HandleWith(p.a.cfg.Logger, p.list))
	r.Post("/people", httpserver.HandleWith(p.a.cfg.Logger, p.create))
	r.Get("/people/{id}", httpserver.HandleWith(p.a.cfg.Logger, p.get))
	r.Put("/people/{id}", httpserver.HandleWith(p.a.cfg.Logger, p.update))
	r.Delete("/people/{id}", httpserver.HandleWith(p.a.cfg.Logger, p.remove))
}

func (p *PeopleAPI) store() (*people.Store, error) {
	if p.a.deps.People == nil {
		return nil, httpserver.Errorf(http.StatusNotImplemented, "people are not available in this process")
	}
	return p.a.deps.People, nil
}

func (p *PeopleAPI) list(w http.ResponseWriter, r *http.Request) error {
	s, err := p.store()
	if err != nil {
		return err
	}
	list, err := s.List(r.Context())
	if err != nil {
		return err
	}
	if list == nil {
		list = []people.Person{}
	}
	httpserver.WriteJSON(w, http.StatusOK, list)
	return nil
}

func personID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, httpserver.Errorf(http.StatusBadRequest, "the person id must be a positive number")
	}
	return id, nil
}

func (p *PeopleAPI) get(w http.ResponseWriter, r *http.Request) error {
	s, err := p.store()
	if err != nil {
		return err
	}
	id, err := personID(r)
	if err != nil {
		return err
	}
	got, err := s.Get(r.Context(), s.DB(), id)
	if errors.Is(err, people.ErrNotFound) {
		return httpserver.Errorf(http.StatusNotFound, "there is no person %d", id)
	}
	if err != nil {
		return err
	}
	httpserver.WriteJSON(w, http.StatusOK, got)
	return nil
}

func (p *PeopleAPI) create(w http.ResponseWriter, r *http.Request) error {
	return p.write(w, r, 0, actionPersonCreate)
}

func (p *PeopleAPI) update(w http.ResponseWriter, r *http.Request) error {
	id, err := personID(r)
	if err != nil {
		return err
	}
	return p.write(w, r, id, actionPersonUpdate)
}

func (p *PeopleAPI) write(w http.ResponseWriter, r *http.Request, id int64, action string) error {
	s, err := p.store()
	if err != nil {
		return err
	}
	var body people.Person
	if err := httpserver.DecodeJSON(r, &body); err != nil {
		return err
	}
	body.ID = id
	var got people.Person
	if id == 0 {
		got, err = s.Create(r.Context(), body, p.recorder(r, action))
	} else {
		got, err = s.Update(r.Context(), body, p.recorder(r, action))
	}
	if err := apiPersonError(err, id); err != nil {
		return err
	}
	p.logChange(r, action, got.ID)
	status := http.StatusOK
	if id == 0 {
		status = http.StatusCreated
	}
	httpserver.WriteJSON(w, status, got)
	return nil
}

func (p *PeopleAPI) remove(w http.ResponseWriter, r *http.Request) error {
	s, err := p.store()
	if err != nil {
		return err
	}
	id, err := personID(r)
	if err != nil {
		return err
	}
	if err := apiPersonError(s.Delete(r.Context(), id, p.recorder(r, actionPersonDelete)), id); err != nil {
		return err
	}
	p.logChange(r, actionPersonDelete, id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func apiPersonError(err error, id int64) error {
	var inv *people.InvalidError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &inv):
		return httpserver.Errorf(http.StatusUnprocessableEntity, "%s; nothing was changed", inv.Error())
	case errors.Is(err, people.ErrNotFound):
		return httpserver.Errorf(http.StatusNotFound, "there is no person %d", id)
	}
	return err
}

// personRecorder writes actor's change of a person to the activity log,
// in the change's own transaction.
func (a *Admin) personRecorder(actor, action string) people.Recorder {
	return func(ctx context.Context, tx *db.Tx, changed people.Person) error {
		detail := ""
		if action != actionPersonDelete {
			detail = personDetail(changed)
		}
		return a.audit.record(ctx, tx, auditEntry{CreatedAt: a.cfg.Now(), Actor: actor, Action: action,
			Target: "person:" + strconv.FormatInt(changed.ID, 10), Detail: detail})
	}
}

func (p *PeopleAPI) recorder(r *http.Request, action string) people.Recorder {
	return p.a.personRecorder(httpserver.Actor(r.Context()), action)
}

func (p *PeopleAPI) logChange(r *http.Request, action string, id int64) {
	p.a.cfg.Logger.Info("person changed", "action", action, "person", id, "by", httpserver.Actor(r.Context()))
}
