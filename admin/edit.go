package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/promptparts"
)

// The pieces every editing page shares: a preview of a save, the draft kept
// when a save was stale, what changed at the head since the draft's base,
// and the mapping of a save's outcome to a redirect or a re-rendered form.

// hiddenField is one posted value carried through a preview page.
type hiddenField struct {
	Name, Value string
}

// previewPage shows what a save would change before it is made.
type previewPage struct {
	Heading string
	// Action is the URL the confirmation posts to.
	Action string
	// BaseRevision is the revision the save names; the save creates the
	// next one.
	BaseRevision int64
	Changes      []promptparts.Change
	Hidden       []hiddenField
}

// carried returns the posted form without the CSRF token and the action,
// in a stable order, line breaks as LF.
func carried(form url.Values) []hiddenField {
	var out []hiddenField
	keys := make([]string, 0, len(form))
	for k := range form {
		if k != csrfField && k != "action" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range form[k] {
			out = append(out, hiddenField{Name: k, Value: strings.ReplaceAll(v, "\r\n", "\n")})
		}
	}
	return out
}

// draftForm is the posted form as a draft keeps it.
func draftForm(form url.Values) url.Values {
	out := url.Values{}
	for _, f := range carried(form) {
		out.Add(f.Name, f.Value)
	}
	return out
}

// conflictView shows a person whose draft is based on an old revision what
// was saved since.
type conflictView struct {
	BaseRevision int64
	HeadRevision int64
	// Mine are the changes since the base to the items the page edits;
	// Others the rest.
	Mine   []promptparts.Change
	Others []promptparts.Change
}

// conflictSince describes the changes from base to head, split by mine.
func (a *Admin) conflictSince(ctx context.Context, base, head int64, mine func(key string) bool) (*conflictView, error) {
	d, err := a.prompts.DiffRevisions(ctx, base, head)
	if err != nil {
		return nil, fmt.Errorf("comparing revision %d with %d: %w", base, head, err)
	}
	c := &conflictView{BaseRevision: base, HeadRevision: head}
	for _, ch := range d.Changes {
		if mine(ch.Key) {
			c.Mine = append(c.Mine, ch)
		} else {
			c.Others = append(c.Others, ch)
		}
	}
	return c, nil
}

// loadDraft returns the current session's draft of page.
func (a *Admin) loadDraft(ctx context.Context, page string) (*draft, error) {
	d, ok, err := a.drafts.get(ctx, a.db, currentSession(ctx).IDSHA256, page)
	if err != nil || !ok {
		return nil, err
	}
	return &d, nil
}

// saveOutcome turns the result of a save into the answer to a form post:
//   - saved or unchanged: the draft of page is dropped and the browser is
//     sent to done (with ?done=saved&rev=N);
//   - stale base: the posted form is kept as the draft of page (with the
//     base it named) and the browser is sent back to pageURL, which shows
//     the draft, what changed at the head and how to rebase;
//   - invalid: invalid re-renders the form with every problem (422).
func (a *Admin) saveOutcome(w http.ResponseWriter, r *http.Request, page, pageURL string, base int64,
	res promptparts.SaveResult, err error, invalid func(problemSet) error,
) error {
	ctx := r.Context()
	sess := currentSession(ctx)
	var (
		ce *promptparts.ConflictError
		ve *promptparts.ValidationError
	)
	switch {
	case err == nil:
		if derr := a.drafts.drop(ctx, a.db, sess.IDSHA256, page); derr != nil {
			return derr
		}
		if res.Unchanged {
			return redirect(w, r, withQuery(pageURL, "done", "unchanged"))
		}
		return redirect(w, r, withQuery(pageURL, "done", "saved", "rev", strconv.FormatInt(res.Revision, 10)))
	case errors.As(err, &ce):
		d := draft{Page: page, BaseRevision: base, Form: draftForm(r.PostForm), UpdatedAt: a.cfg.Now()}
		if derr := a.drafts.put(ctx, a.db, sess.IDSHA256, d); derr != nil {
			return derr
		}
		return redirect(w, r, pageURL)
	case errors.As(err, &ve):
		return invalid(problemSet(ve.Problems))
	}
	return err
}

// staleOrErr answers a one-click action (keep, restore, a policy toggle)
// that needs no draft: a stale base sends the person back to the page at
// the latest revision with a notice.
func (a *Admin) staleOrErr(w http.ResponseWriter, r *http.Request, pageURL string, err error) error {
	var ce *promptparts.ConflictError
	if errors.As(err, &ce) {
		return redirect(w, r, withQuery(pageURL, "done", "stale", "rev", strconv.FormatInt(ce.HeadRevision, 10)))
	}
	return err
}

func withQuery(u string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + q.Encode()
}

// formRevision reads the revision a form names.
func formRevision(r *http.Request, name string) (int64, error) {
	v, err := strconv.ParseInt(r.PostFormValue(name), 10, 64)
	if err != nil || v < 0 {
		return 0, httpserver.Errorf(http.StatusBadRequest, "The form did not say which revision it was made against; reload the page.")
	}
	return v, nil
}

// formText reads a posted text field. Browsers submit line breaks as CRLF;
// prompt texts use LF, so that an unchanged text compares equal.
func formText(r *http.Request, name string) string {
	return strings.ReplaceAll(r.PostFormValue(name), "\r\n", "\n")
}

// panelSave is the save metadata of the signed-in person.
func panelSave(ctx context.Context) promptparts.SaveMeta {
	return promptparts.SaveMeta{Origin: promptparts.OriginPanel, Actor: currentSession(ctx).Actor}
}
