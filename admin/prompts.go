package admin

import (
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/promptparts"
)

// promptsPage lists every part with its status.
type promptsPage struct {
	Revision       int64
	Parts          []promptparts.Part
	DefaultUpdated int
	Overridden     int
	Size, Limit    int
}

func (a *Admin) getPrompts(w http.ResponseWriter, r *http.Request) error {
	o, err := a.prompts.Overview(r.Context())
	if err != nil {
		return err
	}
	p := promptsPage{Revision: o.Revision, Parts: o.Parts, Size: o.Size, Limit: o.SizeLimit}
	for _, part := range o.Parts {
		switch part.Status {
		case promptparts.StatusDefaultUpdated:
			p.DefaultUpdated++
		case promptparts.StatusOverridden:
			p.Overridden++
		}
	}
	return a.render(w, r, http.StatusOK, "prompts.html", pageData{Title: "Prompt parts", Nav: "prompts", Data: p})
}

// partPage is one part: its default, the team's text in an editor and,
// when Default updated, the change from the old default to the new one.
type partPage struct {
	Part promptparts.Part
	URL  string
	// Head is the latest revision.
	Head int64
	// Text, Note and BaseRevision fill the editor: the team's text (or the
	// default) at the head, or the kept draft.
	Text         string
	Note         string
	BaseRevision int64
	// Draft is set when a stale save's draft is shown; Conflict when its
	// base is behind the head.
	Draft    *draft
	Conflict *conflictView
	// Compare is the side-by-side change from the override's base text to
	// the new default, for a part whose default was updated, unchanged
	// lines folded.
	Compare *compareView
	// Merge is the three-way merge of that change into the team's text,
	// when asked for (?merge=1); the editor then holds its result.
	Merge *mergeView
	// OverrideDiff is the change from the default to the team's saved
	// text, for an overridden part.
	OverrideDiff []promptparts.DiffLine
}

func partKey(r *http.Request) string { return chi.URLParam(r, "*") }

func partURL(key string) string { return "/admin/prompts/" + key }

func draftPage(key string) string { return "prompts/" + key }

// loadPart returns the overview of the head and the part with key.
func (a *Admin) loadPart(ctx context.Context, key string) (promptparts.Overview, promptparts.Part, error) {
	o, err := a.prompts.Overview(ctx)
	if err != nil {
		return o, promptparts.Part{}, err
	}
	for _, p := range o.Parts {
		if p.Key == key {
			return o, p, nil
		}
	}
	return o, promptparts.Part{}, httpserver.Errorf(http.StatusNotFound, "There is no prompt part %q in this release.", key)
}

func (a *Admin) getPart(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	key := partKey(r)
	o, part, err := a.loadPart(ctx, key)
	if err != nil {
		return err
	}
	p := newPartPage(o, part)
	d, err := a.loadDraft(ctx, draftPage(key))
	if err != nil {
		return err
	}
	if d != nil {
		p.Draft, p.Text, p.Note, p.BaseRevision = d, d.Form.Get("text"), d.Form.Get("note"), d.BaseRevision
		if d.BaseRevision != o.Revision {
			if p.Conflict, err = a.conflictSince(ctx, d.BaseRevision, o.Revision, func(k string) bool { return k == key }); err != nil {
				return err
			}
		}
	}
	if r.URL.Query().Get("merge") == "1" && part.Status == promptparts.StatusDefaultUpdated && part.BaseText != nil && part.Override != nil {
		p.Merge = newMergeView(*part.BaseText, *part.Override, part.Default)
		p.Text, p.Note = p.Merge.Text, "merge the updated default of "+key
	}
	return a.showPart(w, r, http.StatusOK, p, nil)
}

func newPartPage(o promptparts.Overview, part promptparts.Part) partPage {
	p := partPage{Part: part, URL: partURL(part.Key), Head: o.Revision, BaseRevision: o.Revision, Text: part.Default}
	if part.Override != nil {
		p.Text = *part.Override
	}
	if part.BaseText != nil {
		v := foldRows(sideBySide(promptparts.DiffLines(*part.BaseText, part.Default)), "change")
		p.Compare = &v
	}
	if part.Status == promptparts.StatusOverridden {
		p.OverrideDiff = promptparts.DiffLines(part.Default, *part.Override)
	}
	return p
}

func (a *Admin) showPart(w http.ResponseWriter, r *http.Request, status int, p partPage, problems problemSet) error {
	return a.render(w, r, status, "part.html", pageData{Title: p.Part.Key, Nav: "prompts", Problems: problems, Data: p})
}

func (a *Admin) postPart(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	key := partKey(r)
	o, part, err := a.loadPart(ctx, key)
	if err != nil {
		return err
	}
	url := partURL(key)
	switch r.PostFormValue("action") {
	case "rebase", "discard":
		return a.draftAction(w, r, draftPage(key), url)
	}

	base, err := formRevision(r, "base_revision")
	if err != nil {
		return err
	}
	text, note := formText(r, "text"), r.PostFormValue("note")
	switch r.PostFormValue("action") {
	case "edit":
		p := newPartPage(o, part)
		p.Text, p.Note, p.BaseRevision = text, note, base
		return a.showPart(w, r, http.StatusOK, p, nil)
	case "preview":
		// Conflict markers left from a merge are refused before the
		// preview, with where they are.
		if markers := promptparts.FindConflictMarkers(text); len(markers) > 0 {
			p := newPartPage(o, part)
			p.Text, p.Note, p.BaseRevision = text, note, base
			return a.showPart(w, r, http.StatusUnprocessableEntity, p,
				problemSet{{Key: "overrides." + key, Message: promptparts.ConflictMessage(markers)}})
		}
		return a.previewPart(w, r, part, base)
	case "save":
		patch := promptparts.Patch{BaseRevision: base, Note: note, Overrides: map[string]*promptparts.OverridePatch{
			key: {Text: text, Base: r.PostFormValue("default_sha256")},
		}}
		res, err := a.prompts.Save(ctx, patch, panelSave(ctx))
		return a.saveOutcome(w, r, draftPage(key), url, base, res, err, func(ps problemSet) error {
			p := newPartPage(o, part)
			p.Text, p.Note, p.BaseRevision = text, note, base
			return a.showPart(w, r, http.StatusUnprocessableEntity, p, ps)
		})
	case "keep":
		if part.Override == nil {
			return httpserver.Errorf(http.StatusConflict, "This part has no team text to keep any more; reload the page.")
		}
		patch := promptparts.Patch{BaseRevision: base, Note: orDefault(note, "keep our text over the updated default of "+key),
			Overrides: map[string]*promptparts.OverridePatch{key: {Text: *part.Override, Base: part.DefaultSHA256}}}
		res, err := a.prompts.Save(ctx, patch, panelSave(ctx))
		if err != nil {
			return a.staleOrErr(w, r, url, err)
		}
		return redirect(w, r, withQuery(url, "done", "kept", "rev", strconv.FormatInt(res.Revision, 10)))
	case "use-default":
		patch := promptparts.Patch{BaseRevision: base, Note: orDefault(note, "use the built-in default of "+key),
			Overrides: map[string]*promptparts.OverridePatch{key: nil}}
		res, err := a.prompts.Save(ctx, patch, panelSave(ctx))
		if err != nil {
			return a.staleOrErr(w, r, url, err)
		}
		return redirect(w, r, withQuery(url, "done", "default", "rev", strconv.FormatInt(res.Revision, 10)))
	}
	return httpserver.Errorf(http.StatusBadRequest, "Unknown action.")
}

// previewPart shows the change from the part's text at the base revision
// to the posted text.
func (a *Admin) previewPart(w http.ResponseWriter, r *http.Request, part promptparts.Part, base int64) error {
	v, err := a.prompts.Version(r.Context(), base)
	if err != nil {
		return err
	}
	before := a.prompts.Registry().Text(part.Key)
	if o, ok := v.Settings.Overrides[part.Key]; ok {
		before = o.Text
	}
	after := formText(r, "text")
	var changes []promptparts.Change
	if before != after {
		changes = append(changes, promptparts.NewChange(part.Key, before, after))
	}
	return a.render(w, r, http.StatusOK, "preview.html", pageData{Title: "Preview: " + part.Key, Nav: "prompts", Data: previewPage{
		Heading:      part.Key,
		Action:       partURL(part.Key),
		BaseRevision: base,
		Changes:      changes,
		Hidden:       carried(r.PostForm),
	}})
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
