package promptparts

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

func TestExportImportDiff(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := newService(t, d, testDefaults())
		save(t, s, teamConfig)
		save(t, s, `{"base_revision": 1, "overrides": {"runtime/work": {"text": "# Work\n\nOurs, with a trailing space \n"}}, "skills": {"old": "to be removed"}}`)

		dir := filepath.Join(t.TempDir(), "prompts")
		rev, err := s.Export(ctx, dir, ExportOptions{})
		require.NoError(t, err)
		require.Equal(t, int64(2), rev)
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			return string(b)
		}
		require.Equal(t, "# Work\n\nOurs, with a trailing space \n", read("parts/runtime/work.md"))
		require.Equal(t, "Write plainly. Name the pull request.", read("sections/communication.md"))
		require.Equal(t, "to be removed", read("skills/old.md"))
		require.Contains(t, read("policy.json"), `"id": "flaky-tests"`)
		require.Contains(t, read("manifest.json"), `"revision": 2`)
		require.Contains(t, read("sections/settings.json"), `"max_changed_lines": 40`)

		_, err = s.Export(ctx, dir, ExportOptions{})
		require.ErrorContains(t, err, "not empty")

		// Nothing changed: the directory equals the latest revision.
		diff, err := s.DiffDir(ctx, dir)
		require.NoError(t, err)
		require.Empty(t, diff.Changes)
		require.Equal(t, "no differences\n", diff.Text())
		res, err := s.Import(ctx, dir, -1, "dave")
		require.NoError(t, err)
		require.Equal(t, SaveResult{Revision: 2, Unchanged: true}, res)

		// Edit the directory: change a part, remove a skill, add a rule.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "parts/runtime/dispatch.md"), []byte("# Dispatch\n\nOurs.\n"), 0o644))
		require.NoError(t, os.Remove(filepath.Join(dir, "skills/old.md")))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "sections/ticket_scope.md"), []byte("Small changes only.\n"), 0o644))
		diff, err = s.DiffDir(ctx, dir)
		require.NoError(t, err)
		keys := []string{}
		for _, c := range diff.Changes {
			keys = append(keys, c.Key)
		}
		require.Equal(t, []string{KeyDispatch, "sections/ticket_scope", "skills/old"}, keys)
		require.Contains(t, diff.Text(), "=== runtime/dispatch\n-# runtime/dispatch\n")
		require.Contains(t, diff.Text(), "=== skills/old\n-to be removed\n")

		// Someone saved in between: the import is refused.
		save(t, s, `{"base_revision": 2, "note": "meanwhile", "sections": {"communication": {"text": "x"}}}`)
		_, err = s.Import(ctx, dir, -1, "dave")
		require.ErrorIs(t, err, ErrConflict)

		res, err = s.Import(ctx, dir, 3, "dave")
		require.NoError(t, err)
		require.Equal(t, SaveResult{Revision: 4}, res)
		v, err := s.Latest(ctx)
		require.NoError(t, err)
		require.Equal(t, "dave", v.Actor)
		require.Equal(t, "Small changes only.\n", v.Settings.Sections.TicketScope.Text)
		require.Equal(t, "Write plainly. Name the pull request.", v.Settings.Sections.Communication.Text, "the directory's text wins over the revision in between")
		require.Equal(t, map[string]string{"identities": "Feishu Alice is GitHub @alice."}, v.Settings.Skills)
		require.Equal(t, "# Dispatch\n\nOurs.\n", v.Settings.Overrides[KeyDispatch].Text)
		require.Equal(t, s.reg.SHA256(KeyDispatch), v.Settings.Overrides[KeyDispatch].BaseSHA256)

		// Importing the same directory again saves nothing; the import
		// before brought its manifest to revision 4.
		require.Contains(t, read("manifest.json"), `"revision": 4`)
		res, err = s.Import(ctx, dir, -1, "dave")
		require.NoError(t, err)
		require.Equal(t, SaveResult{Revision: 4, Unchanged: true}, res)

		between, err := s.DiffRevisions(ctx, 2, 4)
		require.NoError(t, err)
		require.Len(t, between.Changes, 3)

		// A forced export replaces the earlier one: the skill removed from
		// the configuration goes, a file of the team's own stays.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("ours"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "skills", "stale.md"), []byte("gone"), 0o644))
		rev, err = s.Export(ctx, dir, ExportOptions{Force: true})
		require.NoError(t, err)
		require.Equal(t, int64(4), rev)
		require.NoFileExists(t, filepath.Join(dir, "skills", "stale.md"))
		require.Equal(t, "ours", read("README.md"))
		require.Contains(t, read("manifest.json"), `"revision": 4`)
		diff, err = s.DiffDir(ctx, dir)
		require.NoError(t, err)
		require.Empty(t, diff.Changes)

		// A typo in a hand-edited JSON file is an error, not ignored.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "policy.json"), []byte(`{"mode": "auto", "rulez": []}`), 0o644))
		_, err = s.DiffDir(ctx, dir)
		require.ErrorContains(t, err, `unknown field "rulez"`)
	})
}

// An export with defaults writes every part; a default text left as it
// was is no override on import, even once a later release changed that
// default, so the part keeps following the defaults.
func TestExportDefaultsStayDefaults(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := newService(t, d, testDefaults())
		save(t, s, `{"base_revision": 0, "overrides": {"runtime/work": {"text": "# Work\n\nOurs.\n"}}}`)
		dir := filepath.Join(t.TempDir(), "prompts")
		_, err := s.Export(ctx, dir, ExportOptions{Defaults: true})
		require.NoError(t, err)
		for _, key := range s.reg.Keys() {
			b, err := os.ReadFile(filepath.Join(dir, "parts", key+".md"))
			require.NoError(t, err, key)
			if key != KeyWork {
				require.Equal(t, s.reg.Text(key), string(b), key)
			}
		}
		var m Manifest
		require.NoError(t, readJSON(os.DirFS(dir), manifestFile, &m))
		require.Len(t, m.Defaults, len(s.reg.Keys())-1)
		require.NotContains(t, m.Defaults, KeyWork)

		// The dispatch file as an earlier release wrote it: untouched.
		old := "# Dispatch\n\nAn older default.\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "parts", KeyDispatch+".md"), []byte(old), 0o644))
		m.Bases[KeyDispatch] = SHA256(old)
		require.NoError(t, os.WriteFile(filepath.Join(dir, manifestFile), mustIndent(m), 0o644))
		diff, err := s.DiffDir(ctx, dir)
		require.NoError(t, err)
		require.Empty(t, diff.Changes, "untouched defaults are no change")

		// An edited default becomes an override based on that default.
		edited := s.reg.Text(KeyDispatch) + "\nOne more line.\n"
		m.Bases[KeyDispatch] = s.reg.SHA256(KeyDispatch)
		require.NoError(t, os.WriteFile(filepath.Join(dir, manifestFile), mustIndent(m), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "parts", KeyDispatch+".md"), []byte(edited), 0o644))
		res, err := s.Import(ctx, dir, -1, "dave")
		require.NoError(t, err)
		v, err := s.Latest(ctx)
		require.NoError(t, err)
		require.Equal(t, res.Revision, v.Revision)
		require.Equal(t, []string{KeyDispatch, KeyWork}, sortedKeys(v.Settings.Overrides))
		require.Equal(t, s.reg.SHA256(KeyDispatch), v.Settings.Overrides[KeyDispatch].BaseSHA256)
		require.NoError(t, readJSON(os.DirFS(dir), manifestFile, &m))
		require.Equal(t, res.Revision, m.Revision)
		require.Len(t, m.Defaults, len(s.reg.Keys())-2, "the edited part is no longer a default")
		require.NotContains(t, m.Defaults, KeyDispatch)
	})
}
