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
	"github.com/superagent-dev/superagent/policy"
	"github.com/superagent-dev/superagent/promptparts"
)

func TestSectionsPreviewAndSave(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{})
		c := p.client(t)
		c.signIn("ada")
		res := c.get("/admin/sections")
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, `value="This is by an automated agent, not a human"`)

		form := url.Values{"csrf": {c.csrf()}, "base_revision": {"0"}, "note": {"team rules"},
			fCommText: {"Answer in English.\r\n"}, fAgentLine: {"Written by our agent"}, fReviewBots: {"review-bot\r\n\r\nlint-bot"},
			fScopeText: {"Stop at a draft when unsure."}, fDeliveryText: {"Show a screenshot for UI changes."},
			fMergeEnabled: {"on"}, fMergeLines: {"40"}, fMergeChecks: {"test\r\nlint"}, fMergeApproval: {"1"},
			fAuthorName: {"Acme Agent"}, fAuthorEmail: {"agent@acme.example"}}
		form.Set("action", "preview")
		res = c.post("/admin/sections", form)
		require.Equal(t, http.StatusOK, res.status)
		body := html.UnescapeString(res.body)
		require.Contains(t, body, "<code>Communication</code>")
		require.Contains(t, body, "Review bots: review-bot, lint-bot")
		require.Contains(t, body, "Commit author: Acme Agent <agent@acme.example>")

		form.Set("action", "save")
		res = c.post("/admin/sections", form)
		require.Equal(t, "/admin/sections?done=saved&rev=1", res.location)
		v, err := p.prompts.Latest(context.Background())
		require.NoError(t, err)
		s := v.Settings.Sections
		require.Equal(t, "Answer in English.\n", s.Communication.Text)
		require.Equal(t, []string{"review-bot", "lint-bot"}, s.Communication.ReviewBots)
		require.Equal(t, promptparts.AutoMerge{Enabled: true, MaxChangedLines: 40, Checks: []string{"test", "lint"}, Approvals: 1}, s.DeliveryRequirements.AutoMerge)
		require.Equal(t, "ada", v.Actor)

		// Saving the page unchanged makes no revision.
		res = c.get("/admin/sections")
		require.Contains(t, res.body, `name="sections.delivery_requirements.auto_merge.enabled" checked`)
		form.Set("base_revision", "1")
		res = c.post("/admin/sections", form)
		require.Equal(t, "/admin/sections?done=unchanged", res.location)

		// A number that is not one is refused at its field.
		form.Set(fMergeLines, "forty")
		res = c.post("/admin/sections", form)
		require.Equal(t, http.StatusUnprocessableEntity, res.status)
		require.Contains(t, res.body, `id="f-sections-delivery_requirements-auto_merge-max_changed_lines-problems"><p>must be a whole number`)
	})
}

func TestSkillsAddChangeRemove(t *testing.T) {
	t.Parallel()
	p := newPanel(t, dbtest.SQLite(t), promptparts.BuiltinDefaults(), Deps{})
	c := p.client(t)
	c.signIn("ada")
	csrf := c.csrf()
	res := c.post("/admin/skills", url.Values{"csrf": {csrf}, "action": {"save"}, "base_revision": {"0"}, "name": {"github"}, "text": {"x"}})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, "built-in names are reserved")
	require.Contains(t, html.UnescapeString(res.body), `"github" is the name of a built-in skill`)

	res = c.post("/admin/skills", url.Values{"csrf": {csrf}, "action": {"save"}, "base_revision": {"0"}, "name": {"identities"}, "text": {"alice is @alice\r\n"}})
	require.Equal(t, "/admin/skills/identities?done=saved&rev=1", res.location)
	res = c.get("/admin/skills")
	require.Contains(t, res.body, `href="/admin/skills/identities"`)
	res = c.post("/admin/skills/identities", url.Values{"csrf": {csrf}, "action": {"save"}, "base_revision": {"1"}, "text": {"alice is @alice-gh"}})
	require.Equal(t, "/admin/skills/identities?done=saved&rev=2", res.location)
	res = c.post("/admin/skills/identities", url.Values{"csrf": {csrf}, "action": {"remove"}, "base_revision": {"2"}})
	require.Equal(t, "/admin/skills?done=saved&rev=3", res.location)
	v, err := p.prompts.Latest(context.Background())
	require.NoError(t, err)
	require.Empty(t, v.Settings.Skills)
	require.Equal(t, http.StatusNotFound, c.get("/admin/skills/identities").status)
}

func TestPolicyRules(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{})
		c := p.client(t)
		c.signIn("ada")
		csrf := c.csrf()
		post := func(v url.Values) response {
			v.Set("csrf", csrf)
			return c.post("/admin/policy", v)
		}
		rules := func() []policy.Rule {
			v, err := p.prompts.Latest(ctx)
			require.NoError(t, err)
			return v.Settings.Policy.Rules
		}

		res := post(url.Values{"op": {"add"}, "base_revision": {"0"}, "id": {"flaky-tests"}, "name": {"Flaky tests"},
			"instruction": {"Fix a test that fails without a code change."}, "enabled": {"on"}})
		require.Equal(t, "/admin/policy?done=saved&rev=1", res.location)
		res = post(url.Values{"op": {"settings"}, "base_revision": {"1"}, "mode": {"propose"}, "explicit_request_exemption": {"on"}})
		require.Equal(t, "/admin/policy?done=saved&rev=2", res.location)
		res = post(url.Values{"op": {"disable"}, "base_revision": {"2"}, "orig_id": {"flaky-tests"}})
		require.Equal(t, "/admin/policy?done=saved&rev=3", res.location)
		require.False(t, rules()[0].Enabled)
		res = post(url.Values{"op": {"enable"}, "base_revision": {"3"}, "orig_id": {"flaky-tests"}})
		require.Equal(t, "/admin/policy?done=saved&rev=4", res.location)
		res = post(url.Values{"op": {"edit"}, "base_revision": {"4"}, "orig_id": {"flaky-tests"}, "id": {"flaky"},
			"name": {"Flaky tests"}, "instruction": {"Fix flaky tests in CI."}, "enabled": {"on"}})
		require.Equal(t, "/admin/policy?done=saved&rev=5", res.location)
		require.Equal(t, []policy.Rule{{ID: "flaky", Name: "Flaky tests", Instruction: "Fix flaky tests in CI.", Enabled: true}}, rules())
		v, err := p.prompts.Latest(ctx)
		require.NoError(t, err)
		require.Equal(t, policy.Propose, v.Settings.Policy.Mode)
		require.Equal(t, "policy: edit rule flaky-tests", v.Note)
		require.Equal(t, "ada", v.Actor)

		// A stale change is kept as a draft that can be applied on the head.
		saveAs(t, p, "grace", `{"base_revision": 5, "policy": {"mode": "auto"}}`)
		res = post(url.Values{"op": {"disable"}, "base_revision": {"5"}, "orig_id": {"flaky"}})
		require.Equal(t, "/admin/policy", res.location)
		res = c.get("/admin/policy")
		body := html.UnescapeString(res.body)
		require.Contains(t, body, "You started from revision 5; revision 6 is now the latest")
		require.Contains(t, body, `"mode": "auto"`)
		res = post(url.Values{"action": {"rebase"}})
		require.Equal(t, "/admin/policy?done=rebased&rev=6", res.location)
		res = c.get("/admin/policy")
		require.Contains(t, res.body, "Apply it on revision 6")
		res = post(url.Values{"op": {"disable"}, "base_revision": {"6"}, "orig_id": {"flaky"}})
		require.Equal(t, "/admin/policy?done=saved&rev=7", res.location)
		require.False(t, rules()[0].Enabled)
		res = c.get("/admin/policy")
		require.NotContains(t, res.body, "Your unsaved change")

		res = post(url.Values{"op": {"remove"}, "base_revision": {"7"}, "orig_id": {"flaky"}})
		require.Equal(t, "/admin/policy?done=saved&rev=8", res.location)
		require.Empty(t, rules())
	})
}
