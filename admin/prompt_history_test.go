package admin

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/secret"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/promptparts/trial"
	"github.com/superagent-dev/superagent/session"
)

// apiKey is a secret the process holds; the team pasted it into a part.
const apiKey = "sk-live-0123456789abcdefABCDEF"

// recordedPanel is a panel whose database holds model requests made by
// real Sessions against a fake model: an Executor of Ticket 7, under a
// team override that holds a pasted secret.
type recordedPanel struct {
	*panel
	srv   *fakeopenai.Server
	scrub *secret.Scrubber
	ids   []int64
}

func newRecordedPanel(t *testing.T, d *db.DB, replies ...fakeopenai.Reply) *recordedPanel {
	t.Helper()
	ctx := context.Background()
	srv := fakeopenai.New(t)
	scrub := secret.New(apiKey)
	store := session.NewStore(d, scrub, nil)
	client, err := model.New(model.Config{BaseURL: srv.URL(), Model: "fake-model", Prices: map[string]model.Price{"fake-model": {Input: 1, Output: 4}}})
	require.NoError(t, err)
	rp := &recordedPanel{srv: srv, scrub: scrub}
	rp.panel = newPanel(t, d, promptparts.BuiltinDefaults(), Deps{Sessions: store, Scrubber: scrub})
	rp.admin.deps.Trial = trial.New(trial.Config{Models: map[session.Role]trial.Model{session.RoleExecutor: client}, Scrubber: scrub}, d, rp.prompts, store)
	saveAs(t, rp.panel, "ada", `{"base_revision": 0, "overrides": {"runtime/work": {"text": "# Work\n\nDeploy with the key `+apiKey+` only when asked.\n"}}}`)

	rt := session.New(session.Config{}, d, client, session.PromptFunc(func(ctx context.Context, s *session.Session) (string, int64, error) {
		return rp.prompts.Assemble(ctx, promptparts.Input{Role: promptparts.RoleExecutor, Environment: []promptparts.Var{{Name: "Ticket", Value: "7: fix the typo"}},
			AgentsMD: []promptparts.AgentsFile{{Path: "AGENTS.md", Text: "Run make test.\n"}}})
	}), scrub, nil)
	tools, err := session.NewRegistry(session.Spec[map[string]any]{Name: "read_file", Description: "reads a file",
		Handler: func(context.Context, session.Call, map[string]any) (string, error) { return "README", nil }}.Tool())
	require.NoError(t, err)
	srv.Push(replies...)
	s, err := rt.Create(ctx, d, session.RoleExecutor, 7)
	require.NoError(t, err)
	_, err = rt.Append(ctx, d, s.ID, "fix the typo in README.md")
	require.NoError(t, err)
	_, err = rt.Run(ctx, s.ID, tools, session.RunOptions{})
	require.NoError(t, err)
	reqs, err := store.Requests(ctx, d, s.ID)
	require.NoError(t, err)
	for _, r := range reqs {
		rp.ids = append(rp.ids, r.ID)
	}
	return rp
}

// The prompt page of a recorded request shows exactly the bytes the model
// received, secrets scrubbed as they were before sending, each stretch
// with its origin, and verifies them against the recorded SHA-256.
func TestRequestPromptIsWhatTheModelReceived(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		rp := newRecordedPanel(t, d, fakeopenai.Calls(fakeopenai.Call("c1", "read_file", `{"path":"README.md"}`)), fakeopenai.Text("fixed"))
		require.Len(t, rp.ids, 2)
		c := rp.client(t)
		c.signIn("ada")

		// A release changes the built-in texts: the page still shows what was sent.
		newer := newPanel(t, d, release(t, map[string]string{"runtime/shared": "# Shared\n\nA newer release.\n"}), Deps{Sessions: session.NewStore(d, rp.scrub, nil), Scrubber: rp.scrub})
		nc := newer.client(t)
		nc.signIn("ada")
		for i, id := range rp.ids {
			sent := rp.srv.Requests()[i].System()
			require.NotContains(t, sent, apiKey, "the Session scrubbed the pasted key")
			for _, cl := range []*client{c, nc} {
				res := cl.get("/admin/prompts/requests/" + strconv.FormatInt(id, 10) + "?format=text")
				require.Equal(t, http.StatusOK, res.status, res.body)
				require.Equal(t, sent, res.body, "byte for byte what the fake model received")
				require.Equal(t, "true", res.header.Get("X-Prompt-Verified"))
			}
		}
		res := nc.get("/admin/prompts/requests/" + strconv.FormatInt(rp.ids[0], 10))
		require.Equal(t, http.StatusOK, res.status)
		body := html.UnescapeString(res.body)
		require.Contains(t, body, "Verified:")
		require.NotContains(t, body, "A newer release.")
		require.NotContains(t, body, apiKey)
		for _, want := range []string{
			`class="segment origin-built-in" aria-label="runtime/shared, built-in"`,
			`class="segment origin-team-override" aria-label="runtime/work, team override"`,
			`class="segment origin-team-section" aria-label="sections, team section"`,
			`class="segment origin-repository" aria-label="agents/AGENTS.md, repository"`,
			`class="segment origin-generated" aria-label="runtime/environment, generated"`,
			"(from the built-in template)",
		} {
			require.Contains(t, body, want)
		}

		// A request made before prompts were recorded says so.
		_, err := d.Exec(context.Background(), `UPDATE session_requests SET assembled_sha256 = '' WHERE id = $1`, rp.ids[1])
		require.NoError(t, err)
		res = c.get("/admin/prompts/requests/" + strconv.FormatInt(rp.ids[1], 10))
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, "made before prompts were recorded")
		require.Equal(t, http.StatusNotFound, c.get("/admin/prompts/requests/999").status)
	})
}

// Trying a part's unsaved text from its editor shows, for the requests
// chosen, the prompt diff and both answers; it writes nothing.
func TestTryADraftFromTheEditor(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		rp := newRecordedPanel(t, d, fakeopenai.Calls(fakeopenai.Call("c1", "read_file", `{"path":"README.md"}`)), fakeopenai.Text("fixed"))
		c := rp.client(t)
		c.signIn("ada")
		csrf := c.csrf()
		const text = "# Replies\n\nAnswer in one sentence.\n"
		form := url.Values{"csrf": {csrf}, "base_revision": {"1"}, "key": {"runtime/replies"}, "text": {text}, "action": {"draft"}}
		res := c.post("/admin/prompts/try", form)
		require.Equal(t, http.StatusOK, res.status, res.body)
		require.Contains(t, res.body, "your unsaved text of <code>runtime/replies</code>")

		rp.srv.Push(fakeopenai.Calls(fakeopenai.Call("d1", "read_file", `{"path":"docs/README.md"}`)), fakeopenai.Text("fixed, in one sentence"))
		form.Set("action", "run")
		form.Set("requests", strconv.FormatInt(rp.ids[0], 10)+", "+strconv.FormatInt(rp.ids[1], 10))
		before := dbtest.RowCounts(t, d)
		res = c.post("/admin/prompts/try", form)
		require.Equal(t, http.StatusOK, res.status, res.body)
		require.Equal(t, before, dbtest.RowCounts(t, d), "trying wrote nothing")
		body := html.UnescapeString(res.body)
		require.Contains(t, body, "2 requests tried")
		require.Equal(t, 2, strings.Count(body, `class="answer answer-recorded"`))
		require.Contains(t, body, "Answer in one sentence.")
		require.Contains(t, body, `{"path":"docs/README.md"}`, "the draft's tool call is shown")
		require.Contains(t, body, "fixed, in one sentence")
		require.NotContains(t, body, apiKey)
		for _, r := range rp.srv.Requests()[2:] {
			require.Contains(t, r.System(), "Answer in one sentence.")
		}

		// A draft with conflict markers is refused like a save.
		form.Set("text", "<<<<<<< your text\na\n=======\nb\n>>>>>>> new default\n")
		res = c.post("/admin/prompts/try", form)
		require.Equal(t, http.StatusUnprocessableEntity, res.status)
		require.Contains(t, html.UnescapeString(res.body), "unresolved merge conflict at lines 1–5")
	})
}

// The merge of an updated default into the team's text: a change on other
// lines is applied, one on the same lines is a conflict in the editor, and
// a save with the markers left is refused, listing where they are.
func TestMergeTheUpdatedDefault(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		const old = "# Work\n\nConfirm once.\nDeliver honestly.\nReport at the end.\n\nAsk before merging.\n"
		const ours = "# Work\n\nConfirm once, in the team's words.\nDeliver honestly.\nReport at the end.\n\nAsk before merging.\n"
		const newer = "# Work\n\nConfirm once, concretely.\nDeliver honestly.\nReport at the end.\n\nAsk before merging, always.\n"
		p := upgraded(t, d, map[string]string{"runtime/work": old}, map[string]string{"runtime/work": ours}, map[string]string{"runtime/work": newer})
		c := p.client(t)
		c.signIn("ada")

		res := c.get("/admin/prompts/runtime/work")
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, `<button type="submit" aria-describedby="merge-hint">Merge</button>`)
		require.NotContains(t, res.body, `value="keep" class="primary"`, "no choice is styled as the recommended one")
		require.Contains(t, res.body, `href="#change-1"`)
		require.Contains(t, res.body, `id="change-2"`)

		res = c.get("/admin/prompts/runtime/work?merge=1")
		require.Equal(t, http.StatusOK, res.status)
		page := html.UnescapeString(res.body)
		require.Contains(t, page, "1 change from the new default applied; <strong>1 conflict to resolve</strong>")
		require.Contains(t, page, `href="#conflict-1"`)
		merged := "# Work\n\n<<<<<<< your text\nConfirm once, in the team's words.\n||||||| old default\nConfirm once.\n=======\nConfirm once, concretely.\n>>>>>>> new default\n" +
			"Deliver honestly.\nReport at the end.\n\nAsk before merging, always.\n"
		require.Contains(t, page, ">"+merged+"</textarea>", "the editor holds the merge")

		form := url.Values{"csrf": {c.csrf()}, "base_revision": {"1"}, "text": {merged}, "action": {"preview"},
			"default_sha256": {promptparts.SHA256(newer)}}
		res = c.post("/admin/prompts/runtime/work", form)
		require.Equal(t, http.StatusUnprocessableEntity, res.status)
		require.Contains(t, html.UnescapeString(res.body), "unresolved merge conflict at lines 3–9")
		form.Set("action", "save")
		res = c.post("/admin/prompts/runtime/work", form)
		require.Equal(t, http.StatusUnprocessableEntity, res.status, "a save with markers is refused too")

		resolved := "# Work\n\nConfirm once, concretely, in the team's words.\nDeliver honestly.\nReport at the end.\n\nAsk before merging, always.\n"
		form.Set("text", resolved)
		res = c.post("/admin/prompts/runtime/work", form)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		o, err := p.prompts.Overview(context.Background())
		require.NoError(t, err)
		for _, part := range o.Parts {
			if part.Key == "runtime/work" {
				require.Equal(t, promptparts.StatusOverridden, part.Status)
				require.Equal(t, resolved, *part.Override)
			}
		}
	})
}

// A revision's page says what is known of the built-in texts it was
// saved with.
func TestVersionPageShowsItsBuiltinTexts(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{})
	saveAs(t, p, "ada", `{"base_revision": 0, "sections": {"ticket_scope": {"text": "small"}}}`)
	saveAs(t, p, "ada", `{"base_revision": 1, "sections": {"ticket_scope": {"text": "smaller"}}}`)
	_, err := d.Exec(context.Background(), `UPDATE prompt_versions SET builtin_set = NULL WHERE revision = 1`)
	require.NoError(t, err)
	c := p.client(t)
	c.signIn("ada")
	require.Contains(t, c.get("/admin/versions/2").body, "recorded with the revision")
	require.Contains(t, c.get("/admin/versions/1").body, "<strong>not recorded</strong> (saved before superagent kept them)")
}

// Each model request on a Ticket's page links to its prompt; one that no
// prompt record explains says it cannot be rebuilt.
func TestTicketRequestsLinkToTheirPrompt(t *testing.T) {
	t.Parallel()
	w := newTicketWorld(t, dbtest.SQLite(t))
	c := w.panel.client(t)
	c.signIn("ada")
	res := c.get("/admin/tickets/" + itoa(w.ticket.ID))
	require.Equal(t, http.StatusOK, res.status)
	require.Contains(t, res.body, `<a href="/admin/prompts/requests/1" aria-label="The system prompt of request 1">prompt</a>`)
	// This world's Sessions read a fixed prompt, not one promptparts
	// assembled and recorded.
	res = c.get("/admin/prompts/requests/1")
	require.Equal(t, http.StatusOK, res.status)
	require.Contains(t, html.UnescapeString(res.body), "The prompt of this request cannot be rebuilt")
}
