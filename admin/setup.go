package admin

import (
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/executor/repoenv"
	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
)

// The audit actions of the setup page and API. A secret's value is never
// in an entry; its repository and name are.
const (
	actionSetupDefault = "set_setup_default"
	actionSetSecret    = "set_repo_secret"
	actionDeleteSecret = "delete_repo_secret"
)

const setupURL = "/admin/setup"

// setupPage is the team's default setup script and the repositories'
// secrets, by name only.
type setupPage struct {
	Default  repoenv.DefaultScript
	Secrets  []repoenv.SecretInfo
	MCP      mcpSection
	Disabled bool
}

func (a *Admin) getSetup(w http.ResponseWriter, r *http.Request) error {
	return a.renderSetup(w, r, http.StatusOK, "")
}

func (a *Admin) renderSetup(w http.ResponseWriter, r *http.Request, status int, problem string) error {
	p := setupPage{Disabled: a.deps.RepoEnv == nil}
	if a.deps.RepoEnv != nil {
		var err error
		if p.Default, err = a.deps.RepoEnv.Default(r.Context(), a.db); err != nil {
			return err
		}
		if p.Secrets, err = a.deps.RepoEnv.Secrets(r.Context(), a.db, ""); err != nil {
			return err
		}
		if p.MCP, err = a.mcpSection(r); err != nil {
			return err
		}
	}
	pd := pageData{Title: "Setup and secrets", Nav: "setup", Data: p}
	if problem != "" {
		pd.Flash, pd.FlashKind = "Nothing was saved: "+problem, "warn"
	}
	return a.render(w, r, status, "setup.html", pd)
}

// postSetup saves the default script, sets a secret or deletes one. A
// refused value is not shown back.
func (a *Admin) postSetup(w http.ResponseWriter, r *http.Request) error {
	if a.deps.RepoEnv == nil {
		return httpserver.Errorf(http.StatusNotFound, "Setup and secrets are not available in this process.")
	}
	actor := currentSession(r.Context()).Actor
	var err error
	switch r.PostFormValue("op") {
	case "default":
		err = a.setDefault(r, formText(r, "script"), actor)
	case "secret":
		err = a.setSecret(r, strings.TrimSpace(r.PostFormValue("repo")), strings.TrimSpace(r.PostFormValue("name")), r.PostFormValue("value"), actor)
	case "delete":
		_, err = a.deleteSecret(r, r.PostFormValue("repo"), r.PostFormValue("name"), actor)
	case "mcp":
		err = a.setMCP(r, strings.TrimSpace(r.PostFormValue("repo")), formText(r, "config"), actor)
	default:
		return httpserver.Errorf(http.StatusBadRequest, "Unknown action.")
	}
	if msg, ok := invalid(err); ok {
		return a.renderSetup(w, r, http.StatusUnprocessableEntity, msg)
	}
	if err != nil {
		return err
	}
	return redirect(w, r, setupURL+"?done=setup-saved")
}

// invalid returns the message of a refusal the person can fix.
func invalid(err error) (string, bool) {
	var ie *repoenv.InvalidError
	switch {
	case errors.As(err, &ie):
		return ie.Msg, true
	case errors.Is(err, repoenv.ErrNoKey):
		return err.Error(), true
	}
	return "", false
}

func (a *Admin) setDefault(r *http.Request, script, actor string) error {
	ctx := r.Context()
	return a.db.InTx(ctx, func(tx *db.Tx) error {
		if err := a.deps.RepoEnv.SetDefault(ctx, tx, script, actor); err != nil {
			return err
		}
		return a.audit.record(ctx, tx, auditEntry{CreatedAt: a.cfg.Now(), Actor: actor, Action: actionSetupDefault,
			Target: "setup", Detail: workspace.ScriptHash([]byte(script))[:12]})
	})
}

func (a *Admin) setSecret(r *http.Request, repo, name, value, actor string) error {
	ctx := r.Context()
	return a.db.InTx(ctx, func(tx *db.Tx) error {
		if err := a.deps.RepoEnv.SetSecret(ctx, tx, repo, name, value, actor, workspace.CacheEnvNames()); err != nil {
			return err
		}
		return a.audit.record(ctx, tx, auditEntry{CreatedAt: a.cfg.Now(), Actor: actor, Action: actionSetSecret, Target: repo, Detail: name})
	})
}

func (a *Admin) deleteSecret(r *http.Request, repo, name, actor string) (bool, error) {
	ctx := r.Context()
	var found bool
	err := a.db.InTx(ctx, func(tx *db.Tx) (err error) {
		if found, err = a.deps.RepoEnv.DeleteSecret(ctx, tx, repo, name); err != nil || !found {
			return err
		}
		return a.audit.record(ctx, tx, auditEntry{CreatedAt: a.cfg.Now(), Actor: actor, Action: actionDeleteSecret, Target: repo, Detail: name})
	})
	return found, err
}

// SetupRoutes mounts the setup API on the authenticated /api router:
//
//	GET, PUT  /setup/default                       {"script": "..."}
//	GET       /repos/{owner}/{name}/secrets        names and dates, never values
//	PUT       /repos/{owner}/{name}/secrets/{secret} {"value": "..."}, write-only
//	DELETE    /repos/{owner}/{name}/secrets/{secret}
//	GET, PUT  /repos/{owner}/{name}/mcp            {"mcpServers": {...}}; GET adds what the last Ticket found
//
// Changes are recorded in the panel's audit log.
func (a *Admin) SetupRoutes(r chi.Router) {
	h := func(fn httpserver.HandlerFunc) http.HandlerFunc { return httpserver.HandleWith(a.cfg.Logger, fn) }
	r.Get("/setup/default", h(a.apiGetDefault))
	r.Put("/setup/default", h(a.apiPutDefault))
	r.Get("/repos/{owner}/{name}/secrets", h(a.apiSecrets))
	r.Put("/repos/{owner}/{name}/secrets/{secret}", h(a.apiPutSecret))
	r.Delete("/repos/{owner}/{name}/secrets/{secret}", h(a.apiDeleteSecret))
	r.Get("/repos/{owner}/{name}/mcp", h(a.apiMCP))
	r.Put("/repos/{owner}/{name}/mcp", h(a.apiPutMCP))
}

func (a *Admin) apiStore() (*repoenv.Store, error) {
	if a.deps.RepoEnv == nil {
		return nil, httpserver.Errorf(http.StatusNotFound, "setup and secrets are not available in this process")
	}
	return a.deps.RepoEnv, nil
}

func (a *Admin) apiGetDefault(w http.ResponseWriter, r *http.Request) error {
	st, err := a.apiStore()
	if err != nil {
		return err
	}
	d, err := st.Default(r.Context(), a.db)
	if err != nil {
		return err
	}
	httpserver.WriteJSON(w, http.StatusOK, d)
	return nil
}

func (a *Admin) apiPutDefault(w http.ResponseWriter, r *http.Request) error {
	if _, err := a.apiStore(); err != nil {
		return err
	}
	var body struct {
		Script string `json:"script"`
	}
	if err := httpserver.DecodeJSON(r, &body); err != nil {
		return err
	}
	if err := apiRefusal(a.setDefault(r, body.Script, apiActor(r))); err != nil {
		return err
	}
	return a.apiGetDefault(w, r)
}

func apiRefusal(err error) error {
	if msg, ok := invalid(err); ok {
		return httpserver.Errorf(http.StatusUnprocessableEntity, "%s", msg)
	}
	return err
}

func repoParam(r *http.Request) (string, error) {
	repo := chi.URLParam(r, "owner") + "/" + chi.URLParam(r, "name")
	if err := repoenv.CheckRepo(repo); err != nil {
		return "", httpserver.Errorf(http.StatusBadRequest, "%s", err.Error())
	}
	return repo, nil
}

func (a *Admin) apiSecrets(w http.ResponseWriter, r *http.Request) error {
	st, repo, err := a.apiRepo(r)
	if err != nil {
		return err
	}
	list, err := st.Secrets(r.Context(), a.db, repo)
	if err != nil {
		return err
	}
	httpserver.WriteJSON(w, http.StatusOK, map[string]any{"secrets": list})
	return nil
}

func (a *Admin) apiPutSecret(w http.ResponseWriter, r *http.Request) error {
	if _, err := a.apiStore(); err != nil {
		return err
	}
	repo, err := repoParam(r)
	if err != nil {
		return err
	}
	var body struct {
		Value string `json:"value"`
	}
	if err := httpserver.DecodeJSON(r, &body); err != nil {
		return err
	}
	if err := apiRefusal(a.setSecret(r, repo, chi.URLParam(r, "secret"), body.Value, apiActor(r))); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *Admin) apiDeleteSecret(w http.ResponseWriter, r *http.Request) error {
	if _, err := a.apiStore(); err != nil {
		return err
	}
	repo, err := repoParam(r)
	if err != nil {
		return err
	}
	found, err := a.deleteSecret(r, repo, chi.URLParam(r, "secret"), apiActor(r))
	if err != nil {
		return err
	}
	if !found {
		return httpserver.Errorf(http.StatusNotFound, "no such secret")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
