package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/promptparts"
)

// The form fields of the team sections are named after the problem keys
// promptparts reports, so that each problem lands at its field.
const (
	fCommText      = "sections.communication.text"
	fAgentLine     = "sections.communication.agent_line"
	fReviewBots    = "sections.communication.review_bots"
	fScopeText     = "sections.ticket_scope.text"
	fDeliveryText  = "sections.delivery_requirements.text"
	fMergeEnabled  = "sections.delivery_requirements.auto_merge.enabled"
	fMergeLines    = "sections.delivery_requirements.auto_merge.max_changed_lines"
	fMergeChecks   = "sections.delivery_requirements.auto_merge.checks"
	fMergeApproval = "sections.delivery_requirements.auto_merge.approvals"
	fAuthorName    = "sections.delivery_requirements.commit_author.name"
	fAuthorEmail   = "sections.delivery_requirements.commit_author.email"
)

const sectionsURL = "/admin/sections"
const sectionsDraft = "sections"

// sectionsPage is the form of the three team sections.
type sectionsPage struct {
	Head         int64
	BaseRevision int64
	// V holds the form's values: the head's sections, a draft or what was
	// posted.
	V        url.Values
	Note     string
	Draft    *draft
	Conflict *conflictView
}

func sectionValues(s promptparts.Sections) url.Values {
	c, d := s.Communication, s.DeliveryRequirements
	v := url.Values{}
	v.Set(fCommText, c.Text)
	v.Set(fAgentLine, c.AgentLine)
	v.Set(fReviewBots, strings.Join(c.ReviewBots, "\n"))
	v.Set(fScopeText, s.TicketScope.Text)
	v.Set(fDeliveryText, d.Text)
	if d.AutoMerge.Enabled {
		v.Set(fMergeEnabled, "on")
	}
	v.Set(fMergeLines, strconv.Itoa(d.AutoMerge.MaxChangedLines))
	v.Set(fMergeChecks, strings.Join(d.AutoMerge.Checks, "\n"))
	v.Set(fMergeApproval, strconv.Itoa(d.AutoMerge.Approvals))
	v.Set(fAuthorName, d.CommitAuthor.Name)
	v.Set(fAuthorEmail, d.CommitAuthor.Email)
	return v
}

// parseSections reads the posted form; a number that is not one is a
// problem at its field.
func parseSections(r *http.Request) (promptparts.Sections, problemSet) {
	var (
		s  promptparts.Sections
		ps problemSet
	)
	num := func(name string) int {
		raw := strings.TrimSpace(r.PostFormValue(name))
		if raw == "" {
			return 0
		}
		n, err := strconv.Atoi(raw)
		if err != nil {
			ps = append(ps, promptparts.Problem{Key: name, Message: "must be a whole number"})
		}
		return n
	}
	s.Communication = promptparts.Communication{
		Text:       formText(r, fCommText),
		AgentLine:  strings.TrimSpace(r.PostFormValue(fAgentLine)),
		ReviewBots: formLines(r, fReviewBots),
	}
	s.TicketScope.Text = formText(r, fScopeText)
	s.DeliveryRequirements = promptparts.DeliveryRequirements{
		Text: formText(r, fDeliveryText),
		AutoMerge: promptparts.AutoMerge{
			Enabled:         r.PostFormValue(fMergeEnabled) == "on",
			MaxChangedLines: num(fMergeLines),
			Checks:          formLines(r, fMergeChecks),
			Approvals:       num(fMergeApproval),
		},
		CommitAuthor: promptparts.CommitAuthor{
			Name:  strings.TrimSpace(r.PostFormValue(fAuthorName)),
			Email: strings.TrimSpace(r.PostFormValue(fAuthorEmail)),
		},
	}
	return s, ps
}

// formLines reads a textarea of one item per line, skipping blank lines.
func formLines(r *http.Request, name string) []string {
	var out []string
	for _, l := range strings.Split(formText(r, name), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func sectionsPatch(s promptparts.Sections) promptparts.SectionsPatch {
	c, d := s.Communication, s.DeliveryRequirements
	return promptparts.SectionsPatch{
		Communication: &promptparts.CommunicationPatch{Text: &c.Text, AgentLine: &c.AgentLine, ReviewBots: &c.ReviewBots},
		TicketScope:   &promptparts.TicketScopePatch{Text: &s.TicketScope.Text},
		DeliveryRequirements: &promptparts.DeliveryRequirementsPatch{
			Text: &d.Text,
			AutoMerge: &promptparts.AutoMergePatch{
				Enabled: &d.AutoMerge.Enabled, MaxChangedLines: &d.AutoMerge.MaxChangedLines,
				Checks: &d.AutoMerge.Checks, Approvals: &d.AutoMerge.Approvals,
			},
			CommitAuthor: &promptparts.CommitAuthorPatch{Name: &d.CommitAuthor.Name, Email: &d.CommitAuthor.Email},
		},
	}
}

// sectionItems renders each section as one text, its settings after it,
// for previews.
func sectionItems(s promptparts.Sections) map[string]string {
	c, d := s.Communication, s.DeliveryRequirements
	orNone := func(l []string) string {
		if len(l) == 0 {
			return "(none)"
		}
		return strings.Join(l, ", ")
	}
	author := "the GitHub App's bot account"
	if d.CommitAuthor.Name != "" || d.CommitAuthor.Email != "" {
		author = fmt.Sprintf("%s <%s>", d.CommitAuthor.Name, d.CommitAuthor.Email)
	}
	withSettings := func(text string, settings ...string) string {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return text + "\n--- settings ---\n" + strings.Join(settings, "\n") + "\n"
	}
	return map[string]string{
		"Communication": withSettings(c.Text, "Agent line: "+c.AgentLine, "Review bots: "+orNone(c.ReviewBots)),
		"Ticket scope":  s.TicketScope.Text,
		"Delivery requirements": withSettings(d.Text,
			fmt.Sprintf("Auto-merge: %t, at most %d changed lines, %d approvals, checks: %s",
				d.AutoMerge.Enabled, d.AutoMerge.MaxChangedLines, d.AutoMerge.Approvals, orNone(d.AutoMerge.Checks)),
			"Commit author: "+author),
	}
}

func itemChanges(before, after map[string]string, order ...string) []promptparts.Change {
	var out []promptparts.Change
	for _, k := range order {
		if before[k] != after[k] {
			out = append(out, promptparts.NewChange(k, before[k], after[k]))
		}
	}
	return out
}

func (a *Admin) getSections(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	v, err := a.prompts.Latest(ctx)
	if err != nil {
		return err
	}
	p := sectionsPage{Head: v.Revision, BaseRevision: v.Revision, V: sectionValues(v.Settings.Sections)}
	if p.Draft, err = a.loadDraft(ctx, sectionsDraft); err != nil {
		return err
	}
	if d := p.Draft; d != nil {
		p.V, p.Note, p.BaseRevision = d.Form, d.Form.Get("note"), d.BaseRevision
		if d.BaseRevision != v.Revision {
			if p.Conflict, err = a.conflictSince(ctx, d.BaseRevision, v.Revision, func(k string) bool {
				return strings.HasPrefix(k, "sections/")
			}); err != nil {
				return err
			}
		}
	}
	return a.render(w, r, http.StatusOK, "sections.html", pageData{Title: "Team sections", Nav: "sections", Data: p})
}

func (a *Admin) postSections(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	switch r.PostFormValue("action") {
	case "rebase", "discard":
		return a.draftAction(w, r, sectionsDraft, sectionsURL)
	}
	base, err := formRevision(r, "base_revision")
	if err != nil {
		return err
	}
	head, err := a.prompts.Head(ctx)
	if err != nil {
		return err
	}
	s, ps := parseSections(r)
	note := r.PostFormValue("note")
	reshow := func(status int, ps problemSet) error {
		p := sectionsPage{Head: head, BaseRevision: base, V: draftForm(r.PostForm), Note: note}
		return a.render(w, r, status, "sections.html", pageData{Title: "Team sections", Nav: "sections", Problems: ps, Data: p})
	}
	if len(ps) > 0 {
		return reshow(http.StatusUnprocessableEntity, ps)
	}
	switch r.PostFormValue("action") {
	case "edit":
		return reshow(http.StatusOK, nil)
	case "preview":
		v, err := a.prompts.Version(ctx, base)
		if err != nil {
			return err
		}
		order := []string{"Communication", "Ticket scope", "Delivery requirements"}
		return a.render(w, r, http.StatusOK, "preview.html", pageData{Title: "Preview: team sections", Nav: "sections", Data: previewPage{
			Heading: "team sections", Action: sectionsURL, BaseRevision: base,
			Changes: itemChanges(sectionItems(v.Settings.Sections), sectionItems(s), order...),
			Hidden:  carried(r.PostForm),
		}})
	case "save":
		res, err := a.prompts.Save(ctx, promptparts.Patch{BaseRevision: base, Note: note, Sections: sectionsPatch(s)}, panelSave(ctx))
		return a.saveOutcome(w, r, sectionsDraft, sectionsURL, base, res, err, func(ps problemSet) error {
			return reshow(http.StatusUnprocessableEntity, ps)
		})
	}
	return httpserver.Errorf(http.StatusBadRequest, "Unknown action.")
}

// draftAction rebases or discards the draft of page and goes back to it.
func (a *Admin) draftAction(w http.ResponseWriter, r *http.Request, page, pageURL string) error {
	ctx := r.Context()
	sess := currentSession(ctx)
	if r.PostFormValue("action") == "discard" {
		if err := a.drafts.drop(ctx, a.db, sess.IDSHA256, page); err != nil {
			return err
		}
		return redirect(w, r, withQuery(pageURL, "done", "discarded"))
	}
	head, err := a.prompts.Head(ctx)
	if err != nil {
		return err
	}
	if err := a.drafts.rebase(ctx, a.db, sess.IDSHA256, page, head, a.cfg.Now()); err != nil {
		return err
	}
	return redirect(w, r, withQuery(pageURL, "done", "rebased", "rev", strconv.FormatInt(head, 10)))
}
