package admin

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/promptparts"
)

func saveAs(t *testing.T, p *panel, actor, body string) promptparts.SaveResult {
	t.Helper()
	res, err := p.prompts.SaveJSON(context.Background(), []byte(body), promptparts.SaveMeta{Origin: promptparts.OriginPanel, Actor: actor})
	require.NoError(t, err)
	return res
}

// A save on a stale base keeps the draft on the server: the part's page
// shows it after any reload, with what changed at the head, until it is
// rebased and saved.
func TestStaleSaveKeepsTheDraft(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{})
		c := p.client(t)
		c.signIn("ada")
		csrf := c.csrf()
		const path = "/admin/prompts/runtime/replies"

		res := c.get(path)
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, `name="base_revision" value="0"`)

		// Someone else saves first.
		saveAs(t, p, "grace", `{"base_revision": 0, "overrides": {"runtime/replies": {"text": "Grace's replies.\n"}}}`)

		form := url.Values{"csrf": {csrf}, "base_revision": {"0"}, "note": {"tighter replies"},
			"text": {"Ada's replies.\r\nOne sentence.\r\n"}, "default_sha256": {p.prompts.Registry().SHA256("runtime/replies")}}
		form.Set("action", "preview")
		res = c.post(path, form)
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, "Save as revision 1")
		require.Contains(t, res.body, "on top of <strong>revision 0</strong>")

		form.Set("action", "save")
		res = c.post(path, form)
		require.Equal(t, http.StatusSeeOther, res.status, "a stale save goes back to the page")
		require.Equal(t, path, res.location)

		for range 2 { // a reload shows the same
			res = c.get(path)
			require.Equal(t, http.StatusOK, res.status)
			body := html.UnescapeString(res.body)
			require.Contains(t, body, "Your draft was not saved: the configuration changed")
			require.Contains(t, body, "You started from revision 0; revision 1 is now the latest")
			require.Contains(t, body, "Grace's replies.", "what changed at the head is shown")
			require.Contains(t, body, "Ada's replies.\nOne sentence.\n</textarea>", "the draft is in the editor")
			require.Contains(t, body, `value="tighter replies"`)
			require.Contains(t, body, "Rebase my draft onto revision 1")
		}

		res = c.post(path, url.Values{"csrf": {csrf}, "action": {"rebase"}})
		require.Equal(t, http.StatusSeeOther, res.status)
		res = c.get(path)
		body := html.UnescapeString(res.body)
		require.NotContains(t, body, "the configuration changed")
		require.Contains(t, body, "Unsaved draft")
		require.Contains(t, body, `name="base_revision" value="1"`)

		form.Set("base_revision", "1")
		res = c.post(path, form)
		require.Equal(t, http.StatusSeeOther, res.status)
		require.Equal(t, path+"?done=saved&rev=2", res.location)
		res = c.get(res.location)
		require.Contains(t, res.body, "Saved as revision 2.")
		require.NotContains(t, res.body, "Unsaved draft", "the draft is gone once saved")

		v, err := p.prompts.Latest(context.Background())
		require.NoError(t, err)
		require.Equal(t, "Ada's replies.\nOne sentence.\n", v.Settings.Overrides["runtime/replies"].Text, "line breaks are stored as LF")
		require.Equal(t, "ada", v.Actor)
		require.Equal(t, "tighter replies", v.Note)
	})
}

// An invalid save answers 422 and shows each problem at its field, the
// text still in the editor.
func TestInvalidSaveShowsProblemsAtTheirParts(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{})
		c := p.client(t)
		c.signIn("ada")
		csrf := c.csrf()

		res := c.post("/admin/prompts/runtime/policy", url.Values{"csrf": {csrf}, "action": {"save"}, "base_revision": {"0"},
			"text": {"Policy {version}, mode {mode}, {colour}."}})
		require.Equal(t, http.StatusUnprocessableEntity, res.status)
		body := html.UnescapeString(res.body)
		require.Contains(t, body, "Nothing was saved: 2 problems to fix")
		require.Contains(t, body, `<a href="#f-overrides-runtime-policy"><code>overrides.runtime/policy</code></a>: template must keep the placeholder {rules}`)
		require.Contains(t, body, "unknown placeholder {colour}")
		require.Contains(t, body, `<div class="field-problems" id="f-overrides-runtime-policy-problems"><p>template must keep the placeholder {rules}</p>`)
		require.Contains(t, body, `mode {mode}, {colour}.</textarea>`)

		// Sections: problems land at their own fields.
		res = c.post("/admin/sections", url.Values{"csrf": {csrf}, "action": {"save"}, "base_revision": {"0"},
			fAgentLine: {""}, fMergeEnabled: {"on"}, fMergeLines: {"0"}, fAuthorName: {"Bot"}})
		require.Equal(t, http.StatusUnprocessableEntity, res.status)
		body = html.UnescapeString(res.body)
		require.Contains(t, body, `id="f-sections-communication-agent_line-problems"><p>must not be empty`)
		require.Contains(t, body, `id="f-sections-delivery_requirements-auto_merge-max_changed_lines-problems"><p>must be above 0 when auto-merge is enabled`)
		require.Contains(t, body, `id="f-sections-delivery_requirements-commit_author-problems"><p>set both name and email`)

		// Policy: a rule's problems land in that rule's form.
		res = c.post("/admin/policy", url.Values{"csrf": {csrf}, "op": {"add"}, "base_revision": {"0"},
			"id": {"Bad Id"}, "name": {""}, "instruction": {"Fix flaky tests"}})
		require.Equal(t, http.StatusUnprocessableEntity, res.status)
		body = html.UnescapeString(res.body)
		require.Contains(t, body, `id="f-policy-rules-0--id-problems"><p>rule id "Bad Id" is malformed`)
		require.Contains(t, body, `id="f-policy-rules-0--name-problems"><p>rule name is empty`)
		require.Contains(t, body, `value="Bad Id"`)

		head, err := p.prompts.Head(context.Background())
		require.NoError(t, err)
		require.Zero(t, head)
	})
}

func TestDefaultUpdatedActions(t *testing.T) {
	t.Parallel()
	const oldWork = "# Work\n\nConfirm once.\nDeliver honestly.\n"
	const newWork = "# Work\n\nConfirm once, concretely.\nDeliver honestly.\nYield to duplicates.\n"
	const ours = "# Work\n\nOur own way of working.\n"
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		old := newPanel(t, d, release(t, map[string]string{"runtime/work": oldWork}), Deps{})
		saveAs(t, old, "ada", `{"base_revision": 0, "overrides": {"runtime/work": {"text": "# Work\n\nOur own way of working.\n"}}}`)

		p := newPanel(t, d, release(t, map[string]string{"runtime/work": newWork}), Deps{})
		c := p.client(t)
		c.signIn("ada")
		csrf := c.csrf()
		res := c.get("/admin/prompts")
		require.Contains(t, res.body, "1 part needs")
		res = c.get("/admin/prompts/runtime/work")
		body := html.UnescapeString(res.body)
		require.Contains(t, body, `<span class="badge badge-default_updated">Default updated</span>`)
		require.Contains(t, body, `<span class="vh">removed: </span>Confirm once.</td>`)
		require.Contains(t, body, `<span class="vh">added: </span>Confirm once, concretely.</td>`)
		require.Contains(t, body, `<span class="vh">added: </span>Yield to duplicates.</td>`)
		require.Contains(t, body, ours+"</textarea>")

		res = c.post("/admin/prompts/runtime/work", url.Values{"csrf": {csrf}, "action": {"keep"}, "base_revision": {"1"}})
		require.Equal(t, "/admin/prompts/runtime/work?done=kept&rev=2", res.location)
		o, err := p.prompts.Overview(ctx)
		require.NoError(t, err)
		require.Equal(t, promptparts.StatusOverridden, partByKey(t, o, "runtime/work").Status)
		require.Equal(t, ours, *partByKey(t, o, "runtime/work").Override)

		// A stale one-click action saves nothing and says so.
		res = c.post("/admin/prompts/runtime/work", url.Values{"csrf": {csrf}, "action": {"use-default"}, "base_revision": {"1"}})
		require.Equal(t, "/admin/prompts/runtime/work?done=stale&rev=2", res.location)

		res = c.post("/admin/prompts/runtime/work", url.Values{"csrf": {csrf}, "action": {"use-default"}, "base_revision": {"2"}})
		require.Equal(t, "/admin/prompts/runtime/work?done=default&rev=3", res.location)
		o, err = p.prompts.Overview(ctx)
		require.NoError(t, err)
		require.Equal(t, promptparts.StatusDefault, partByKey(t, o, "runtime/work").Status)
	})
}

func partByKey(t *testing.T, o promptparts.Overview, key string) promptparts.Part {
	t.Helper()
	for _, p := range o.Parts {
		if p.Key == key {
			return p
		}
	}
	t.Fatalf("no part %s", key)
	return promptparts.Part{}
}

func TestRestoreAndDiffPages(t *testing.T) {
	t.Parallel()
	p := newPanel(t, dbtest.SQLite(t), promptparts.BuiltinDefaults(), Deps{})
	saveAs(t, p, "ada", `{"base_revision": 0, "note": "first", "skills": {"identities": "alice is @alice"}}`)
	saveAs(t, p, "grace", `{"base_revision": 1, "note": "second", "skills": {"identities": "alice is @alice-gh"}}`)
	c := p.client(t)
	c.signIn("ada")
	res := c.get("/admin/versions")
	require.Contains(t, res.body, "grace")
	require.Contains(t, res.body, "second")
	res = c.get("/admin/versions/diff?from=1&to=2")
	require.Contains(t, html.UnescapeString(res.body), "alice is @alice-gh")
	res = c.post("/admin/versions/1", url.Values{"csrf": {c.csrf()}, "base_revision": {"2"}})
	require.Equal(t, "/admin/versions?done=restored&rev=3", res.location)
	v, err := p.prompts.Latest(context.Background())
	require.NoError(t, err)
	require.Equal(t, "alice is @alice", v.Settings.Skills["identities"])
	require.Equal(t, int64(1), *v.RestoredFrom)
	require.Equal(t, "ada", v.Actor)
}
