package admin

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/promptparts"
)

// versionsPage is the history, newest first, with a form to compare any
// two revisions.
type versionsPage struct {
	Head     int64
	Versions []promptparts.VersionInfo
	// Older is the revision to page back from, 0 when there is no more.
	Older int64
}

const versionsPerPage = 50

func (a *Admin) getVersions(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	before, _ := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64)
	head, err := a.prompts.Head(ctx)
	if err != nil {
		return err
	}
	vs, err := a.prompts.Versions(ctx, before, versionsPerPage)
	if err != nil {
		return err
	}
	p := versionsPage{Head: head, Versions: vs}
	if len(vs) == versionsPerPage && vs[len(vs)-1].Revision > 1 {
		p.Older = vs[len(vs)-1].Revision
	}
	return a.render(w, r, http.StatusOK, "versions.html", pageData{Title: "Versions", Nav: "versions", Data: p})
}

// versionPage is one revision: who made it and why, what it changed from
// its predecessor, and a form to restore it.
type versionPage struct {
	Info promptparts.VersionInfo
	Head int64
	Diff promptparts.Diff
	// Builtins says what is known of the built-in texts the revision was
	// saved with; Unrecorded lists the parts whose text is not.
	Builtins   promptparts.BuiltinState
	Unrecorded []string
}

func pathRevision(r *http.Request) (int64, error) {
	rev, err := strconv.ParseInt(chi.URLParam(r, "revision"), 10, 64)
	if err != nil || rev < 0 {
		return 0, httpserver.Errorf(http.StatusNotFound, "There is no such revision.")
	}
	return rev, nil
}

func notFound(err error) error {
	if errors.Is(err, promptparts.ErrNotFound) {
		return &httpserver.Error{Status: http.StatusNotFound, Message: "There is no such revision.", Err: err}
	}
	return err
}

func (a *Admin) getVersion(w http.ResponseWriter, r *http.Request) error {
	rev, err := pathRevision(r)
	if err != nil {
		return err
	}
	return a.showVersion(w, r, http.StatusOK, rev, nil)
}

func (a *Admin) showVersion(w http.ResponseWriter, r *http.Request, status int, rev int64, ps problemSet) error {
	ctx := r.Context()
	v, err := a.prompts.Content(ctx, rev)
	if err != nil {
		return notFound(err)
	}
	head, err := a.prompts.Head(ctx)
	if err != nil {
		return err
	}
	from := v.Predecessor
	if rev == 0 {
		from = 0
	}
	d, err := a.prompts.DiffRevisions(ctx, from, rev)
	if err != nil {
		return err
	}
	return a.render(w, r, status, "version.html", pageData{
		Title: "Revision " + strconv.FormatInt(rev, 10), Nav: "versions", Problems: ps,
		Data: versionPage{Info: v.VersionInfo, Head: head, Diff: d, Builtins: v.Builtins, Unrecorded: v.Unrecorded},
	})
}

func (a *Admin) postRestore(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	rev, err := pathRevision(r)
	if err != nil {
		return err
	}
	base, err := formRevision(r, "base_revision")
	if err != nil {
		return err
	}
	res, err := a.prompts.RestoreWith(ctx, rev, base, panelSave(ctx), promptparts.RestoreOptions{
		Note: r.PostFormValue("note"), FollowDefaults: r.PostFormValue("follow_defaults") == "on",
	})
	var ve *promptparts.ValidationError
	switch {
	case errors.As(err, &ve):
		return a.showVersion(w, r, http.StatusUnprocessableEntity, rev, problemSet(ve.Problems))
	case err != nil:
		return a.staleOrErr(w, r, r.URL.Path, notFound(err))
	case res.Unchanged:
		return redirect(w, r, withQuery("/admin/versions", "done", "unchanged"))
	}
	done := "restored"
	if len(res.Inexact) > 0 {
		done = "restored-inexact"
	}
	return redirect(w, r, withQuery("/admin/versions", "done", done, "rev", strconv.FormatInt(res.Revision, 10)))
}

// diffPage compares two revisions.
type diffPage struct {
	Head int64
	Diff promptparts.Diff
}

func (a *Admin) getDiff(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	head, err := a.prompts.Head(ctx)
	if err != nil {
		return err
	}
	rev := func(name string, def int64) (int64, error) {
		raw := r.URL.Query().Get(name)
		if raw == "" {
			return def, nil
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 {
			return 0, httpserver.Errorf(http.StatusBadRequest, "Revisions are whole numbers.")
		}
		return n, nil
	}
	from, err := rev("from", max(head-1, 0))
	if err != nil {
		return err
	}
	to, err := rev("to", head)
	if err != nil {
		return err
	}
	d, err := a.prompts.DiffRevisions(ctx, from, to)
	if err != nil {
		return notFound(err)
	}
	return a.render(w, r, http.StatusOK, "diff.html", pageData{Title: "Compare revisions", Nav: "versions", Data: diffPage{Head: head, Diff: d}})
}
