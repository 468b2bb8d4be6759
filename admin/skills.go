package admin

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/promptparts"
)

// skillsPage lists the team's skills and offers a form to add one.
type skillsPage struct {
	Head     int64
	Skills   []skillItem
	Builtins []string
	// New fills the add form after a refused save.
	New skillItem
}

type skillItem struct {
	Name, Text string
	Lines      int
}

// skillPage edits one skill, which may not exist yet when it holds a draft.
type skillPage struct {
	Name         string
	Exists       bool
	Head         int64
	BaseRevision int64
	Text, Note   string
	Draft        *draft
	Conflict     *conflictView
}

func skillURL(name string) string { return "/admin/skills/" + url.PathEscape(name) }

func skillDraft(name string) string { return "skills/" + name }

func (a *Admin) getSkills(w http.ResponseWriter, r *http.Request) error {
	v, err := a.prompts.Latest(r.Context())
	if err != nil {
		return err
	}
	return a.showSkills(w, r, http.StatusOK, v, skillItem{}, nil)
}

func (a *Admin) showSkills(w http.ResponseWriter, r *http.Request, status int, v promptparts.Version, newSkill skillItem, ps problemSet) error {
	p := skillsPage{Head: v.Revision, Builtins: a.prompts.Registry().SkillNames(), New: newSkill}
	for name, text := range v.Settings.Skills {
		p.Skills = append(p.Skills, skillItem{Name: name, Text: text, Lines: strings.Count(text, "\n") + 1})
	}
	sort.Slice(p.Skills, func(i, j int) bool { return p.Skills[i].Name < p.Skills[j].Name })
	return a.render(w, r, status, "skills.html", pageData{Title: "Skills", Nav: "skills", Problems: ps, Data: p})
}

func (a *Admin) getSkill(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	name := chi.URLParam(r, "name")
	v, err := a.prompts.Latest(ctx)
	if err != nil {
		return err
	}
	text, exists := v.Settings.Skills[name]
	p := skillPage{Name: name, Exists: exists, Head: v.Revision, BaseRevision: v.Revision, Text: text}
	if p.Draft, err = a.loadDraft(ctx, skillDraft(name)); err != nil {
		return err
	}
	if !exists && p.Draft == nil {
		return httpserver.Errorf(http.StatusNotFound, "The team has no skill named %q.", name)
	}
	if d := p.Draft; d != nil {
		p.Text, p.Note, p.BaseRevision = d.Form.Get("text"), d.Form.Get("note"), d.BaseRevision
		if d.BaseRevision != v.Revision {
			if p.Conflict, err = a.conflictSince(ctx, d.BaseRevision, v.Revision, func(k string) bool {
				return k == "skills/"+name
			}); err != nil {
				return err
			}
		}
	}
	return a.render(w, r, http.StatusOK, "skill.html", pageData{Title: "Skill " + name, Nav: "skills", Data: p})
}

// postSkill adds (POST /admin/skills, the name in the form), changes or
// removes (POST /admin/skills/{name}) a skill.
func (a *Admin) postSkill(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	name := chi.URLParam(r, "name")
	adding := name == ""
	if adding {
		name = strings.TrimSpace(r.PostFormValue("name"))
	}
	pageURL := skillURL(name)
	switch r.PostFormValue("action") {
	case "rebase", "discard":
		return a.draftAction(w, r, skillDraft(name), pageURL)
	}
	base, err := formRevision(r, "base_revision")
	if err != nil {
		return err
	}
	text, note := formText(r, "text"), r.PostFormValue("note")
	reshow := func(status int, ps problemSet) error {
		if adding {
			v, err := a.prompts.Latest(ctx)
			if err != nil {
				return err
			}
			return a.showSkills(w, r, status, v, skillItem{Name: name, Text: text}, ps)
		}
		head, err := a.prompts.Head(ctx)
		if err != nil {
			return err
		}
		p := skillPage{Name: name, Exists: true, Head: head, BaseRevision: base, Text: text, Note: note}
		return a.render(w, r, status, "skill.html", pageData{Title: "Skill " + name, Nav: "skills", Problems: ps, Data: p})
	}
	if name == "" {
		return reshow(http.StatusUnprocessableEntity, problemSet{{Key: "skills.", Message: "give the skill a name"}})
	}
	var patchText *string
	switch r.PostFormValue("action") {
	case "edit":
		return reshow(http.StatusOK, nil)
	case "preview":
		v, err := a.prompts.Version(ctx, base)
		if err != nil {
			return err
		}
		key := "skills/" + name
		return a.render(w, r, http.StatusOK, "preview.html", pageData{Title: "Preview: skill " + name, Nav: "skills", Data: previewPage{
			Heading: "skill " + name, Action: r.URL.Path, BaseRevision: base,
			Changes: itemChanges(map[string]string{key: v.Settings.Skills[name]}, map[string]string{key: text}, key),
			Hidden:  carried(r.PostForm),
		}})
	case "save":
		patchText = &text
	case "remove":
		note = orDefault(note, "remove skill "+name)
	default:
		return httpserver.Errorf(http.StatusBadRequest, "Unknown action.")
	}
	res, err := a.prompts.Save(ctx, promptparts.Patch{BaseRevision: base, Note: note, Skills: map[string]*string{name: patchText}}, panelSave(ctx))
	if patchText == nil {
		if err != nil {
			return a.staleOrErr(w, r, "/admin/skills", err)
		}
		return redirect(w, r, withQuery("/admin/skills", "done", "saved", "rev", strconv.FormatInt(res.Revision, 10)))
	}
	return a.saveOutcome(w, r, skillDraft(name), pageURL, base, res, err, func(ps problemSet) error {
		return reshow(http.StatusUnprocessableEntity, ps)
	})
}
