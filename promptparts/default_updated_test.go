package promptparts

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

func partOf(t *testing.T, o Overview, key string) Part {
	t.Helper()
	for _, p := range o.Parts {
		if p.Key == key {
			return p
		}
	}
	t.Fatalf("no part %s", key)
	return Part{}
}

// A release that changes a default turns the team's override of it into
// default_updated; keep, use-new-default and edit then work as the panel's
// "Default updated" diff offers them (docs/prompts.md#default-updated).
func TestNewReleaseChangesADefault(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		oldRelease := testDefaults()
		const oldText = "# Work\n\nConfirm once.\nDeliver honestly.\n"
		const newText = "# Work\n\nConfirm once, concretely.\nDeliver honestly.\nYield to duplicates.\n"
		oldRelease = withText(oldRelease, KeyWork, oldText)
		oldRelease = withText(oldRelease, KeyReplies, "# Replies\n\nOld replies.\n")
		s1 := newService(t, d, oldRelease)
		save(t, s1, `{"base_revision": 0, "overrides": {
			"runtime/work": {"text": "# Work\n\nOur own way of working.\n"},
			"runtime/dispatch": {"text": "Our dispatch."}}}`)
		o, err := s1.Overview(ctx)
		require.NoError(t, err)
		require.Equal(t, StatusOverridden, partOf(t, o, KeyWork).Status)
		require.Nil(t, partOf(t, o, KeyWork).BaseText)

		// The next release: runtime/work changed, runtime/replies changed but
		// nobody overrides it, runtime/dispatch unchanged.
		newRelease := withText(withText(oldRelease, KeyWork, newText), KeyReplies, "# Replies\n\nNew replies.\n")
		s2 := newService(t, d, newRelease)
		o, err = s2.Overview(ctx)
		require.NoError(t, err)
		work := partOf(t, o, KeyWork)
		require.Equal(t, StatusDefaultUpdated, work.Status)
		require.Equal(t, SHA256(oldText), *work.BaseSHA256)
		require.Equal(t, SHA256(newText), work.DefaultSHA256)
		require.Equal(t, newText, work.Default)
		require.Equal(t, oldText, *work.BaseText, "the old default is shown beside the new one")
		require.Equal(t, " # Work\n \n-Confirm once.\n+Confirm once, concretely.\n Deliver honestly.\n+Yield to duplicates.\n", *work.DefaultDiff)
		require.Equal(t, "# Work\n\nOur own way of working.\n", *work.Override, "the team's text is kept")
		require.Equal(t, StatusOverridden, partOf(t, o, KeyDispatch).Status)
		replies := partOf(t, o, KeyReplies)
		require.Equal(t, StatusDefault, replies.Status, "parts without overrides follow new defaults")
		require.Equal(t, "# Replies\n\nNew replies.\n", replies.Default)

		sum, err := s2.ReadPrompts(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{KeyWork}, sum.DefaultChanged)
		require.Equal(t, []string{KeyDispatch, KeyWork}, sum.Overridden)

		// An unrelated save keeps the override's old base: still updated.
		save(t, s2, `{"base_revision": 1, "overrides": {"runtime/work": {"text": "# Work\n\nOur own way of working.\n"}}, "sections": {"ticket_scope": {"text": "small"}}}`)
		o, err = s2.Overview(ctx)
		require.NoError(t, err)
		require.Equal(t, StatusDefaultUpdated, partOf(t, o, KeyWork).Status)

		// Keep: the same text with the current default as base.
		res := save(t, s2, fmt.Sprintf(`{"base_revision": 2, "overrides": {"runtime/work": {"text": "# Work\n\nOur own way of working.\n", "base": %q}}}`, SHA256(newText)))
		require.Equal(t, int64(3), res.Revision)
		o, err = s2.Overview(ctx)
		require.NoError(t, err)
		work = partOf(t, o, KeyWork)
		require.Equal(t, StatusOverridden, work.Status)
		require.Nil(t, work.BaseText)

		// Basing an override on the old default is still accepted: that text
		// is stored, as every shipped default is.
		save(t, s2, fmt.Sprintf(`{"base_revision": 3, "overrides": {"runtime/work": {"text": "# Work\n\nEdited.\n", "base": %q}}}`, SHA256(oldText)))
		o, err = s2.Overview(ctx)
		require.NoError(t, err)
		require.Equal(t, StatusDefaultUpdated, partOf(t, o, KeyWork).Status)

		// Use the new default: null removes the override.
		save(t, s2, `{"base_revision": 4, "overrides": {"runtime/work": null}}`)
		o, err = s2.Overview(ctx)
		require.NoError(t, err)
		work = partOf(t, o, KeyWork)
		require.Equal(t, StatusDefault, work.Status)
		require.Nil(t, work.Override)
	})
}

// A release that removes a part drops its override on the next save; a
// part no release knows is refused.
func TestRemovedPartIsDroppedOnSave(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		oldRelease := withText(testDefaults(), "runtime/legacy", "# Legacy\n")
		s1 := newService(t, d, oldRelease)
		save(t, s1, `{"base_revision": 0, "overrides": {"runtime/legacy": {"text": "ours"}, "runtime/work": {"text": "w"}}}`)

		s2 := newService(t, d, testDefaults())
		o, err := s2.Overview(ctx)
		require.NoError(t, err)
		for _, p := range o.Parts {
			require.NotEqual(t, "runtime/legacy", p.Key)
		}

		_, err = s2.SaveJSON(ctx, []byte(`{"base_revision": 1, "overrides": {"runtime/other": {"text": "x"}}}`), panel)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "overrides.runtime/other", ve.Problems[0].Key)

		// Naming the removed part (an old draft, an import) is no error.
		res := save(t, s2, `{"base_revision": 1, "overrides": {"runtime/legacy": {"text": "ours, edited"}}}`)
		require.Equal(t, int64(2), res.Revision)
		v, err := s2.Latest(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]Override{KeyWork: {Text: "w", BaseSHA256: s2.reg.SHA256(KeyWork)}}, v.Settings.Overrides)
	})
}
