package promptparts

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

// A revision reads as it did when it was saved after any number of
// releases changed the built-in texts: its content, its diff against
// another revision and its restore.
func TestHistoryIsExactAcrossUpgrades(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		const oldWork = "# Work\n\nConfirm once.\nDeliver honestly.\n"
		const oldReplies = "# Replies\n\nOld replies.\n"
		oldRelease := withText(withText(testDefaults(), KeyWork, oldWork), KeyReplies, oldReplies)
		s1 := newService(t, d, oldRelease)
		s1.cfg.Version = "v1.0.0"
		// r1 overrides dispatch; r2 drops that override and overrides work.
		save(t, s1, `{"base_revision": 0, "note": "r1", "overrides": {"runtime/dispatch": {"text": "# Dispatch\n\nOurs.\n"}}}`)
		save(t, s1, `{"base_revision": 1, "note": "r2", "overrides": {"runtime/dispatch": null, "runtime/work": {"text": "# Work\n\nOur way.\n"}}}`)
		beforeContent, err := s1.Content(ctx, 1)
		require.NoError(t, err)
		beforeDiff, err := s1.DiffRevisions(ctx, 1, 2)
		require.NoError(t, err)
		require.Equal(t, BuiltinsRecorded, beforeContent.Builtins)
		require.Equal(t, "v1.0.0", beforeContent.BinaryVersion)
		require.Equal(t, oldReplies, itemText(t, beforeContent, KeyReplies))
		require.Equal(t, oldWork, itemText(t, beforeContent, KeyWork))

		// Two upgrades, each changing the defaults r1 and r2 read.
		mid := withText(withText(withText(oldRelease, KeyWork, "# Work\n\nConfirm once, concretely.\n"), KeyReplies, "# Replies\n\nMiddle.\n"),
			KeyDispatch, "# Dispatch\n\nMiddle dispatch.\n")
		newService(t, d, mid)
		newRelease := withText(withText(withText(mid, KeyWork, "# Work\n\nNew work.\n"), KeyReplies, "# Replies\n\nNew replies.\n"),
			KeyDispatch, "# Dispatch\n\nNew dispatch.\n")
		s3 := newService(t, d, newRelease)

		afterContent, err := s3.Content(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, beforeContent, afterContent, "r1's content is what it was")
		afterDiff, err := s3.DiffRevisions(ctx, 1, 2)
		require.NoError(t, err)
		require.Equal(t, beforeDiff.Text(), afterDiff.Text(), "the diff of r1 and r2 is what it was")
		require.Equal(t, "=== runtime/dispatch\n-# Dispatch\n+# runtime/dispatch\n \n-Ours.\n+Built-in text of runtime/dispatch.\n"+
			"=== runtime/work\n # Work\n \n-Confirm once.\n-Deliver honestly.\n+Our way.\n", afterDiff.Text())

		// Restoring r1 brings back its content exactly: the parts that
		// followed the default then keep the text they had, as overrides
		// marked Default updated.
		res, err := s3.Restore(ctx, 1, 2, panel, "")
		require.NoError(t, err)
		require.Empty(t, res.Inexact)
		restored, err := s3.Content(ctx, res.Revision)
		require.NoError(t, err)
		for _, it := range beforeContent.Items {
			require.Equal(t, it.Text, itemText(t, restored, it.Key), "item %s", it.Key)
		}
		o, err := s3.Overview(ctx)
		require.NoError(t, err)
		require.Equal(t, StatusDefaultUpdated, partOf(t, o, KeyReplies).Status)
		require.Equal(t, StatusDefaultUpdated, partOf(t, o, KeyWork).Status)
		require.Equal(t, StatusDefaultUpdated, partOf(t, o, KeyDispatch).Status, "its base changed too")
		require.Equal(t, StatusDefault, partOf(t, o, KeyShared).Status, "a default nobody changed still follows the release")

		// A restore that follows today's defaults takes only the overrides.
		res, err = s3.RestoreWith(ctx, 1, res.Revision, panel, RestoreOptions{FollowDefaults: true})
		require.NoError(t, err)
		v, err := s3.Version(ctx, res.Revision)
		require.NoError(t, err)
		require.Equal(t, map[string]Override{KeyDispatch: {Text: "# Dispatch\n\nOurs.\n", BaseSHA256: SHA256("# runtime/dispatch\n\nBuilt-in text of runtime/dispatch.\n")}}, v.Settings.Overrides)
	})
}

// A revision whose built-in texts were not recorded says so, in its
// content, its diffs and a restore.
func TestHistoryNotRecorded(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s1 := newService(t, d, withText(testDefaults(), KeyWork, "# Work\n\nOld.\n"))
		save(t, s1, `{"base_revision": 0, "overrides": {"runtime/dispatch": {"text": "ours"}}}`)
		save(t, s1, `{"base_revision": 1, "overrides": {"runtime/dispatch": null}}`)
		// As a binary from before the history was recorded would have left it.
		_, err := d.Exec(ctx, `UPDATE prompt_versions SET builtin_set = NULL WHERE revision = 1`)
		require.NoError(t, err)

		s2 := newService(t, d, withText(testDefaults(), KeyWork, "# Work\n\nNew.\n"))
		c, err := s2.Content(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, BuiltinsNotRecorded, c.Builtins)
		require.Contains(t, c.Unrecorded, KeyWork)
		require.NotContains(t, c.Unrecorded, KeyDispatch, "an override is known whatever the defaults")
		require.Equal(t, "# Work\n\nNew.\n", itemText(t, c, KeyWork))

		diff, err := s2.DiffRevisions(ctx, 1, 2)
		require.NoError(t, err)
		require.Len(t, diff.Changes, 2)
		require.Equal(t, KeyDispatch, diff.Changes[0].Key)
		require.Empty(t, diff.Changes[0].Note, "both sides of dispatch are known")
		require.Equal(t, KeyWork, diff.Changes[1].Key, "r2 recorded the old text of work; r1 reads as today's")
		require.Equal(t, "# Work\n\nNew.\n", diff.Changes[1].From)
		require.Equal(t, "# Work\n\nOld.\n", diff.Changes[1].To)
		require.Contains(t, diff.Changes[1].Note, "not recorded for the first revision")

		res, err := s2.Restore(ctx, 1, 2, panel, "")
		require.NoError(t, err)
		require.Contains(t, res.Inexact, KeyWork)
	})
}

func itemText(t *testing.T, c Content, key string) string {
	t.Helper()
	for _, it := range c.Items {
		if it.Key == key {
			return it.Text
		}
	}
	t.Fatalf("revision %d has no item %s", c.Revision, key)
	return ""
}
