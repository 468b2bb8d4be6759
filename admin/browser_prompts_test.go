package admin

import (
	"context"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/promptparts"
)

func TestBrowserSignIn(t *testing.T) {
	ctx := browser(t, 1280)
	p := newPanel(t, dbtest.SQLite(t), promptparts.BuiltinDefaults(), Deps{})
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(p.srv.URL+"/admin/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), "not the token"),
		chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("#signin-error")),
	))
	require.Equal(t, "That is not the admin token.", text(t, ctx, "#signin-error"))
	screenshot(t, ctx, "refused", "")

	signInBrowser(t, ctx, p.srv.URL, "Ada Lovelace")
	require.Contains(t, text(t, ctx, ".who"), "Signed in as Ada Lovelace")
	require.Equal(t, "Prompt parts", text(t, ctx, "h1"))
	screenshot(t, ctx, "prompts", "")

	click(t, ctx, ".who button", "#token")
	require.Contains(t, text(t, ctx, ".flash"), "You are signed out.")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(p.srv.URL+"/admin/prompts"), chromedp.WaitVisible(chromedp.CSS("#token"))))
	url, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Contains(t, url, "/admin/signin")
}

func TestBrowserEditAndSaveAnOverride(t *testing.T) {
	ctx := browser(t, 1280)
	p := newPanel(t, dbtest.SQLite(t), promptparts.BuiltinDefaults(), Deps{})
	signInBrowser(t, ctx, p.srv.URL, "Ada")
	const editor = "#f-overrides-runtime-replies"
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`a[href="/admin/prompts/runtime/replies"]`)),
		chromedp.WaitVisible(chromedp.CSS(editor)),
		chromedp.SetValue(chromedp.CSS(editor), "# Replies\n\nAnswer in one sentence.\nLink the pull request.\n"),
		chromedp.SendKeys(chromedp.CSS("#note"), "shorter replies"),
	))
	click(t, ctx, `button[value="preview"]`, "table.diff")
	require.Contains(t, text(t, ctx, ".lead"), "Saving creates revision 1 on top of revision 0")
	require.Contains(t, text(t, ctx, "table.diff"), "Answer in one sentence.")
	screenshot(t, ctx, "preview", "")

	click(t, ctx, `button[value="save"]`, ".flash-ok")
	require.Equal(t, "Saved as revision 1.", text(t, ctx, ".flash-ok"))
	require.Equal(t, "Overridden", text(t, ctx, "h1 .badge"))
	require.Equal(t, "# Replies\n\nAnswer in one sentence.\nLink the pull request.\n", value(t, ctx, editor))
	screenshot(t, ctx, "saved", "prompt-page.png")

	v, err := p.prompts.Latest(context.Background())
	require.NoError(t, err)
	require.Equal(t, "Ada", v.Actor)
	require.Equal(t, "shorter replies", v.Note)
}

// A save on a stale base is refused; the draft survives a reload, the page
// shows what changed at the head, and the draft can be rebased and saved.
func TestBrowserStaleSaveKeepsTheDraftThroughAReload(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := browser(t, 1280)
		p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{})
		signInBrowser(t, ctx, p.srv.URL, "Ada")
		const editor = "#f-overrides-runtime-dispatch"
		const draftText = "# Dispatch\n\nAda's draft of the dispatch rules.\n"
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Navigate(p.srv.URL+"/admin/prompts/runtime/dispatch"),
			chromedp.WaitVisible(chromedp.CSS(editor)),
			chromedp.SetValue(chromedp.CSS(editor), draftText),
		))
		// Grace saves the same part while Ada edits.
		saveAs(t, p, "grace", `{"base_revision": 0, "note": "grace's change", "overrides": {"runtime/dispatch": {"text": "# Dispatch\n\nGrace's dispatch rules.\n"}}}`)

		click(t, ctx, `button[value="preview"]`, `button[value="save"]`)
		click(t, ctx, `button[value="save"]`, ".conflict")
		require.Contains(t, text(t, ctx, ".conflict"), "You started from revision 0; revision 1 is now the latest")
		require.Contains(t, text(t, ctx, ".conflict table.diff"), "Grace's dispatch rules.")
		require.Equal(t, draftText, value(t, ctx, editor))

		require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".conflict"))))
		require.Equal(t, draftText, value(t, ctx, editor), "the draft survives a reload")
		screenshot(t, ctx, "conflict", "")

		click(t, ctx, `.conflict button[value="rebase"]`, ".draft")
		require.Equal(t, "Your draft is now based on revision 1. Preview it and save.", text(t, ctx, ".flash-ok"))
		require.Equal(t, draftText, value(t, ctx, editor))
		click(t, ctx, `button[value="preview"]`, `button[value="save"]`)
		require.Contains(t, text(t, ctx, "table.diff"), "Grace's dispatch rules.", "the preview compares with the head")
		click(t, ctx, `button[value="save"]`, ".flash-ok")
		require.Equal(t, "Saved as revision 2.", text(t, ctx, ".flash-ok"))

		v, err := p.prompts.Latest(context.Background())
		require.NoError(t, err)
		require.Equal(t, draftText, v.Settings.Overrides["runtime/dispatch"].Text)
	})
}

// A release changes three defaults the team overrides; each is resolved
// with one of the three actions.
func TestBrowserResolveDefaultUpdated(t *testing.T) {
	// runtime/replies: the new default is this binary's text; the old one
	// said less about chat and had no "yield" purpose. The team's text is
	// the old default with one rule of its own.
	b, err := fs.ReadFile(promptparts.BuiltinDefaults(), "runtime/replies.md")
	require.NoError(t, err)
	newReplies := string(b)
	oldReplies := mustReplace(t, newReplies, "one sentence by default; 100 words is a hard limit the host enforces. Put detail in the pull request and link it.", "keep it short. Put detail in the pull request.")
	oldReplies = mustReplace(t, oldReplies, "- `yield`: the Executor stops because someone else's work already covers the Ticket.\n", "")
	ourReplies := mustReplace(t, oldReplies, "- Answer in the language of the message you reply to, unless \"Communication\" says otherwise.", "- Always answer in English, whatever the language of the message.")
	const oldWork = "# Work\n\nConfirm each new request once.\n"
	const newWork = "# Work\n\nConfirm each new request once, concretely, under the original message.\n"
	const oldHandoff = "# Handoff\n\nSummarize the state.\n"
	const newHandoff = "# Handoff\n\nSummarize the state and the open questions.\n"

	ctx := browser(t, 1280)
	d := dbtest.SQLite(t)
	old := newPanel(t, d, release(t, map[string]string{"runtime/replies": oldReplies, "runtime/work": oldWork, "runtime/handoff/worker": oldHandoff}), Deps{})
	body, err := json.Marshal(map[string]any{"base_revision": 0, "note": "our own words", "overrides": map[string]any{
		"runtime/replies":        map[string]string{"text": ourReplies},
		"runtime/work":           map[string]string{"text": "# Work\n\nConfirm in the team's words.\n"},
		"runtime/handoff/worker": map[string]string{"text": "# Handoff\n\nWrite the state down.\n"},
	}})
	require.NoError(t, err)
	saveAs(t, old, "ada", string(body))

	p := newPanel(t, d, release(t, map[string]string{"runtime/work": newWork, "runtime/handoff/worker": newHandoff}), Deps{})
	signInBrowser(t, ctx, p.srv.URL, "Ada")
	require.Contains(t, text(t, ctx, ".flash-warn"), "3 parts need a decision")
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("tr.attention").length`))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	screenshot(t, ctx, "list", "")

	// Keep.
	const repliesEditor = "#f-overrides-runtime-replies"
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(p.srv.URL+"/admin/prompts/runtime/replies"),
		chromedp.WaitVisible(chromedp.CSS(".updated")),
	))
	require.Equal(t, "Default updated", text(t, ctx, "h1 .badge"))
	sbs := text(t, ctx, "table.sbs")
	require.Contains(t, sbs, "keep it short. Put detail in the pull request.")
	require.Contains(t, sbs, "100 words is a hard limit")
	require.Equal(t, ourReplies, value(t, ctx, repliesEditor))
	screenshot(t, ctx, "default-updated", "default-updated.png")
	click(t, ctx, `.updated button[value="keep"]`, ".flash-ok")
	require.Equal(t, "Overridden", text(t, ctx, "h1 .badge"))
	require.Equal(t, ourReplies, value(t, ctx, repliesEditor))

	// Use new default.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(p.srv.URL+"/admin/prompts/runtime/work"),
		chromedp.WaitVisible(chromedp.CSS(".updated")),
	))
	click(t, ctx, `.updated button[value="use-default"]`, ".flash-ok")
	require.Equal(t, "Default", text(t, ctx, "h1 .badge"))
	require.Equal(t, newWork, value(t, ctx, "#f-overrides-runtime-work"))

	// Edit: the button takes the keyboard to the editor.
	const editor = "#f-overrides-runtime-handoff-worker"
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(p.srv.URL+"/admin/prompts/runtime/handoff/worker"),
		chromedp.WaitVisible(chromedp.CSS(".updated")),
		chromedp.Click(chromedp.CSS(`.updated a.button`)),
	))
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`))
	require.NoError(t, err)
	require.Equal(t, editor[1:], focused)
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(editor), "# Handoff\n\nWrite the state and the open questions down.\n")))
	click(t, ctx, `button[value="preview"]`, `button[value="save"]`)
	click(t, ctx, `button[value="save"]`, ".flash-ok")
	require.Equal(t, "Overridden", text(t, ctx, "h1 .badge"))

	sum, err := p.prompts.ReadPrompts(context.Background())
	require.NoError(t, err)
	require.Empty(t, sum.DefaultChanged)
	require.Equal(t, []string{"runtime/replies", "runtime/handoff/worker"}, sum.Overridden)
}

func mustReplace(t *testing.T, s, old, repl string) string {
	t.Helper()
	require.Contains(t, s, old, "the built-in text changed: update the test")
	return strings.Replace(s, old, repl, 1)
}

func TestBrowserRestoreAVersion(t *testing.T) {
	ctx := browser(t, 1280)
	p := newPanel(t, dbtest.SQLite(t), promptparts.BuiltinDefaults(), Deps{})
	saveAs(t, p, "ada", `{"base_revision": 0, "note": "identities", "skills": {"identities": "alice on Feishu is @alice on GitHub.\n"}}`)
	saveAs(t, p, "grace", `{"base_revision": 1, "note": "oops", "skills": {"identities": "nobody.\n"}}`)
	signInBrowser(t, ctx, p.srv.URL, "Ada")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(p.srv.URL+"/admin/versions"),
		chromedp.WaitVisible(chromedp.CSS("table.list")),
	))
	rows := text(t, ctx, "table.list tbody")
	require.Contains(t, rows, "grace")
	require.Contains(t, rows, "oops")
	screenshot(t, ctx, "history", "")
	click(t, ctx, `a[href="/admin/versions/1"]`, "#restore-h")
	require.Contains(t, text(t, ctx, ".facts"), "by ada from the panel")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#note"), "undo grace's change")))
	click(t, ctx, `button.primary[type="submit"]`, ".flash-ok")
	require.Equal(t, "Restored as revision 3.", text(t, ctx, ".flash-ok"))
	require.Contains(t, text(t, ctx, "table.list tbody tr:first-child"), "restores revision 1")
	screenshot(t, ctx, "restored", "")

	v, err := p.prompts.Latest(context.Background())
	require.NoError(t, err)
	require.Equal(t, "alice on Feishu is @alice on GitHub.\n", v.Settings.Skills["identities"])
	require.Equal(t, "Ada", v.Actor)
}

// The merge page: a release's change on lines the team did not touch is
// applied cleanly; one on lines the team changed is a conflict, marked in
// the editor and refused on save until resolved.
func TestBrowserMergeTheUpdatedDefault(t *testing.T) {
	const oldWork = "# Work\n\nConfirm each new request once.\nDeliver honestly.\nReport at the end.\n"
	const ourWork = "# Work\n\nConfirm each new request once.\nDeliver honestly.\nReport at the end, with the test output.\n"
	const newWork = "# Work\n\nConfirm each new request once, concretely.\nDeliver honestly.\nReport at the end.\n"
	const oldHandoff = "# Handoff\n\nSummarize the state.\n\nName the next step.\n"
	const ourHandoff = "# Handoff\n\nWrite the state down.\n\nName the next step.\n"
	const newHandoff = "# Handoff\n\nSummarize the state and the open questions.\n\nName the next step.\n"

	ctx := browser(t, 1280)
	p := upgraded(t, dbtest.SQLite(t),
		map[string]string{"runtime/work": oldWork, "runtime/handoff/worker": oldHandoff},
		map[string]string{"runtime/work": ourWork, "runtime/handoff/worker": ourHandoff},
		map[string]string{"runtime/work": newWork, "runtime/handoff/worker": newHandoff})
	signInBrowser(t, ctx, p.srv.URL, "Ada")

	// A clean merge.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(p.srv.URL+"/admin/prompts/runtime/work"),
		chromedp.WaitVisible(chromedp.CSS(".updated")),
	))
	primaries, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".choices .primary").length`))
	require.NoError(t, err)
	require.Zero(t, primaries, "none of Keep, Use new default, Merge and Edit is styled as the recommended one")
	choices, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".choices button, .choices a.button")).map(e => e.textContent.trim())`))
	require.NoError(t, err)
	require.Equal(t, []string{"Keep", "Use new default", "Merge", "Edit"}, choices)
	click(t, ctx, `.choices button[aria-describedby="merge-hint"]`, ".merge")
	require.Contains(t, text(t, ctx, ".merge p"), "1 change from the new default applied, and no conflict")
	const editor = "#f-overrides-runtime-work"
	require.Equal(t, "# Work\n\nConfirm each new request once, concretely.\nDeliver honestly.\nReport at the end, with the test output.\n", value(t, ctx, editor))
	screenshot(t, ctx, "clean", "")
	click(t, ctx, `button[value="preview"]`, `button[value="save"]`)
	click(t, ctx, `button[value="save"]`, ".flash-ok")
	require.Equal(t, "Overridden", text(t, ctx, "h1 .badge"))

	// A conflict.
	const hEditor = "#f-overrides-runtime-handoff-worker"
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(p.srv.URL+"/admin/prompts/runtime/handoff/worker"),
		chromedp.WaitVisible(chromedp.CSS(".updated")),
	))
	click(t, ctx, `.choices button[aria-describedby="merge-hint"]`, ".mblock-conflict")
	require.Contains(t, text(t, ctx, ".merge p"), "1 conflict to resolve")
	require.Contains(t, text(t, ctx, "#conflict-1"), "Write the state down.")
	require.Contains(t, text(t, ctx, "#conflict-1"), "Summarize the state and the open questions.")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`a[href="#conflict-1"]`))))
	// The click lands when the browser gets to it: wait for the hash.
	jumped, err := chromedp.Run(ctx, chromedp.Poll[bool](`location.hash === "#conflict-1"`, chromedp.WithPollingTimeout(10*time.Second)))
	require.NoError(t, err, "the jump link leads to the conflict")
	require.True(t, jumped, "the jump link leads to the conflict")
	merged := value(t, ctx, hEditor)
	require.Contains(t, merged, "<<<<<<< your text\nWrite the state down.\n||||||| old default\nSummarize the state.\n=======\nSummarize the state and the open questions.\n>>>>>>> new default\n")
	viewportShot(t, ctx, "conflict")

	click(t, ctx, `button[value="preview"]`, "#problems")
	require.Contains(t, text(t, ctx, "#problems"), "unresolved merge conflict at lines 3–9")
	require.Equal(t, merged, value(t, ctx, hEditor), "the merge stays in the editor")
	screenshot(t, ctx, "refused", "")

	const resolved = "# Handoff\n\nWrite the state and the open questions down.\n\nName the next step.\n"
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(hEditor), resolved)))
	click(t, ctx, `button[value="preview"]`, `button[value="save"]`)
	click(t, ctx, `button[value="save"]`, ".flash-ok")
	require.Equal(t, "Overridden", text(t, ctx, "h1 .badge"))
	v, err := p.prompts.Latest(context.Background())
	require.NoError(t, err)
	require.Equal(t, resolved, v.Settings.Overrides["runtime/handoff/worker"].Text)
}

// upgraded is a panel on a release with the texts newer, over d where an
// older release (the texts older) saved the team's overrides ours.
func upgraded(t *testing.T, d *db.DB, older, ours, newer map[string]string) *panel {
	t.Helper()
	old := newPanel(t, d, release(t, older), Deps{})
	overrides := map[string]any{}
	for key, text := range ours {
		overrides[key] = map[string]string{"text": text}
	}
	body, err := json.Marshal(map[string]any{"base_revision": 0, "overrides": overrides})
	require.NoError(t, err)
	saveAs(t, old, "ada", string(body))
	return newPanel(t, d, release(t, newer), Deps{})
}
