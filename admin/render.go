package admin

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/promptparts"
)

// pageData is what every page template receives; Data is the page's own.
type pageData struct {
	Title string
	// Nav names the navigation entry to mark as current.
	Nav   string
	Actor string
	CSRF  string
	// Flash is a one-line outcome of the previous action.
	Flash     string
	FlashKind string
	// Problems are a refused save's problems, shown at their fields and in
	// a summary.
	Problems problemSet
	Data     any
}

// renderer holds one parsed template set per page: the layout, the shared
// partials and the page.
type renderer struct {
	pages map[string]*template.Template
}

func newRenderer(fsys fs.FS) (*renderer, error) {
	names, err := fs.Glob(fsys, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("listing templates: %w", err)
	}
	r := &renderer{pages: map[string]*template.Template{}}
	for _, name := range names {
		base := path.Base(name)
		if base == "layout.html" || base == "partials.html" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(fsys, "templates/layout.html", "templates/partials.html", name)
		if err != nil {
			return nil, fmt.Errorf("parsing template %s: %w", base, err)
		}
		r.pages[base] = t
	}
	return r, nil
}

// render writes a page with status. It renders into a buffer first so that
// a template error becomes a 500 instead of half a page.
func (a *Admin) render(w http.ResponseWriter, r *http.Request, status int, name string, p pageData) error {
	t, ok := a.pages.pages[name]
	if !ok {
		return fmt.Errorf("rendering %s: no such template", name)
	}
	if s := currentSession(r.Context()); s.IDSHA256 != "" {
		p.Actor, p.CSRF = s.Actor, s.CSRF
	}
	if p.Flash == "" {
		p.Flash, p.FlashKind = flashFrom(r)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		return fmt.Errorf("rendering %s: %w", name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The panel's own pages load only its own script and stylesheet; River's
	// job view, served beside them, sets its own headers.
	w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
	return nil
}

const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// redirect answers a form post with 303 to url, so that a reload shows the
// outcome instead of posting again.
func redirect(w http.ResponseWriter, r *http.Request, url string) error {
	http.Redirect(w, r, url, http.StatusSeeOther)
	return nil
}

// flashes are the outcomes a redirect can name in ?done=; the text is
// fixed here, so nothing from the URL is shown but a revision number.
var flashes = map[string]struct{ text, kind string }{
	"saved":            {"Saved as revision %s.", "ok"},
	"unchanged":        {"Nothing changed, so no revision was made.", "ok"},
	"restored":         {"Restored as revision %s.", "ok"},
	"restored-inexact": {"Restored as revision %s. The built-in texts of some parts at the restored revision were not recorded: they follow today's defaults.", "warn"},
	"kept":             {"Kept your text; it is now based on the new default (revision %s).", "ok"},
	"default":          {"The part now follows the built-in default (revision %s).", "ok"},
	"stale":            {"Someone saved revision %s after you loaded the page, so nothing was saved. The page now shows the latest revision; check it and try again.", "warn"},
	"rebased":          {"Your draft is now based on revision %s. Preview it and save.", "ok"},
	"discarded":        {"Draft discarded.", "ok"},
	"proactive-on":     {"Proactive admission is on: the chat's unaddressed messages now reach the policy's propose and auto rules.", "ok"},
	"proactive-off":    {"Proactive admission is off: only messages to the bot count in the chat.", "ok"},
	"paused":           {"Ticket paused. It stays paused until a person resumes it.", "ok"},
	"resumed":          {"Ticket resumed.", "ok"},
	"stopped":          {"Ticket stopped. Its Session ends at its next step and nothing more is written for it.", "ok"},
	"continued":        {"Ticket continued: a new Session picks up where the last one stopped.", "ok"},
	"retried":          {"Ticket retried: a new job goes on where its Session stopped.", "ok"},
	"setup-saved":      {"Saved.", "ok"},
}

func flashFrom(r *http.Request) (string, string) {
	q := r.URL.Query()
	f, ok := flashes[q.Get("done")]
	if !ok {
		return "", ""
	}
	if !strings.Contains(f.text, "%s") {
		return f.text, f.kind
	}
	rev := q.Get("rev")
	for _, c := range rev {
		if c < '0' || c > '9' {
			rev = "?"
			break
		}
	}
	return fmt.Sprintf(f.text, rev), f.kind
}

// problemSet is the problems of a refused save.
type problemSet []promptparts.Problem

// At returns the messages of the problems at key or under it.
func (ps problemSet) At(key string) []string {
	var out []string
	for _, p := range ps {
		if p.Key == key || strings.HasPrefix(p.Key, key+".") || strings.HasPrefix(p.Key, key+"[") {
			out = append(out, p.Message)
		}
	}
	return out
}

// Exact returns the messages of the problems at key itself.
func (ps problemSet) Exact(key string) []string {
	var out []string
	for _, p := range ps {
		if p.Key == key {
			out = append(out, p.Message)
		}
	}
	return out
}

var funcs = template.FuncMap{
	"fieldID":    fieldID,
	"diffLines":  diffLines,
	"sideBySide": sideBySide,
	"when":       when,
	"statusText": statusText,
	"lines":      func(s []string) string { return strings.Join(s, "\n") },
	"add":        func(a, b int64) int64 { return a + b },
	"int64":      func(n int) int64 { return int64(n) },
	"deref":      derefString,
	"sectionOf":  sectionOf,
	"describe":   promptparts.Describe,
	"originClass": func(o promptparts.PartOrigin) string {
		return strings.ReplaceAll(string(o), " ", "-")
	},
	"probs": func(ps problemSet, key string) fieldProblems {
		return fieldProblems{ID: fieldID(key), Messages: ps.At(key)}
	},
	"probsExact": func(ps problemSet, key string) fieldProblems {
		return fieldProblems{ID: fieldID(key), Messages: ps.Exact(key)}
	},
	"field": func(v url.Values, ps problemSet, name, label, hint string, rows int) formField {
		return formField{Name: name, Label: label, Hint: hint, Rows: rows, Value: v.Get(name), Problems: fieldProblems{ID: fieldID(name), Messages: ps.At(name)}}
	},
	"fieldType": func(v url.Values, ps problemSet, name, label, hint, typ string) formField {
		return formField{Name: name, Label: label, Hint: hint, Type: typ, Value: v.Get(name), Problems: fieldProblems{ID: fieldID(name), Messages: ps.At(name)}}
	},
	"foldedOf": func(v *compareView, caption, left, right string) foldedArgs {
		return foldedArgs{V: v, Caption: caption, Left: left, Right: right}
	},
	"conflictOf": func(c *conflictView, url, csrf, what string) conflictArgs {
		return conflictArgs{C: c, URL: url, CSRF: csrf, What: what}
	},
}

// formField feeds the "textfield" and "inputfield" templates.
type formField struct {
	Name, Label, Hint, Type, Value string
	Rows                           int
	Problems                       fieldProblems
}

// fieldProblems are the messages shown at one field.
type fieldProblems struct {
	ID       string
	Messages []string
}

// foldedArgs feed the "folded" template.
type foldedArgs struct {
	V                    *compareView
	Caption, Left, Right string
}

// conflictArgs feed the "conflict" template.
type conflictArgs struct {
	C               *conflictView
	URL, CSRF, What string
}

// fieldID turns a problem key or field name into an element id, so that a
// problem summary can link to its field.
func fieldID(key string) string {
	var b strings.Builder
	b.WriteString("f-")
	for _, c := range key {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func statusText(s promptparts.Status) string {
	switch s {
	case promptparts.StatusDefault:
		return "Default"
	case promptparts.StatusOverridden:
		return "Overridden"
	case promptparts.StatusDefaultUpdated:
		return "Default updated"
	}
	return string(s)
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// sectionOf groups parts on the prompts page the way the design note does.
func sectionOf(key string) string {
	switch {
	case key == promptparts.KeyShared || key == promptparts.KeyOrchestrator || key == promptparts.KeyWorker:
		return "Shared instructions and roles"
	case strings.HasPrefix(key, "runtime/handoff/"):
		return "Handoff instructions"
	case key == promptparts.KeyCoding:
		return "Executor coding prompt"
	case strings.HasPrefix(key, "skill/"):
		return "Source skills"
	case len(promptparts.Placeholders(key)) > 0:
		return "Generated sections"
	case strings.HasPrefix(key, "runtime/"):
		return "Working instructions"
	}
	return "Other parts"
}
