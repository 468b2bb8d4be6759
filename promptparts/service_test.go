package promptparts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/policy"
)

func TestVersions(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := newService(t, d, testDefaults())

		v0, err := s.Latest(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(0), v0.Revision)
		require.Equal(t, DefaultSettings(), v0.Settings)

		res := save(t, s, `{"base_revision": 0, "note": "first", "overrides": {"runtime/work": {"text": "Team work."}},
			"sections": {"communication": {"text": "Be brief.", "review_bots": ["coderabbitai"]}}}`)
		require.Equal(t, SaveResult{Revision: 1}, res)
		res, err = s.SaveTool(ctx, "bob", []byte(`{"request": "card-7", "base_revision": 1, "note": "second",
			"skills": {"identities": "alice = @alice"}, "policy": {"mode": "propose", "rules": [{"id": "flaky", "name": "Flaky", "instruction": "Fix flaky tests."}]}}`))
		require.NoError(t, err)
		require.Equal(t, SaveResult{Revision: 2}, res)

		v2, err := s.Version(ctx, 2)
		require.NoError(t, err)
		require.Equal(t, int64(1), v2.Predecessor)
		require.Equal(t, OriginTool, v2.Origin)
		require.Equal(t, "bob", v2.Actor)
		require.Equal(t, "card-7", v2.Request)
		require.Equal(t, "second", v2.Note)
		// The whole configuration is in every version, not just the change.
		require.Equal(t, Override{Text: "Team work.", BaseSHA256: s.reg.SHA256(KeyWork)}, v2.Settings.Overrides[KeyWork])
		require.Equal(t, "Be brief.", v2.Settings.Sections.Communication.Text)
		require.Equal(t, DefaultAgentLine, v2.Settings.Sections.Communication.AgentLine)
		require.Equal(t, []string{"coderabbitai"}, v2.Settings.Sections.Communication.ReviewBots)
		require.Equal(t, map[string]string{"identities": "alice = @alice"}, v2.Settings.Skills)
		require.Equal(t, policy.Policy{Mode: policy.Propose, ExplicitRequestExemption: true, Rules: []policy.Rule{
			{ID: "flaky", Name: "Flaky", Instruction: "Fix flaky tests.", Enabled: true},
		}}, v2.Settings.Policy)

		v1, err := s.Version(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, OriginPanel, v1.Origin)
		require.Equal(t, "alice", v1.Actor)
		require.Empty(t, v1.Settings.Skills)
		require.False(t, v1.CreatedAt.IsZero())
		require.True(t, v2.CreatedAt.After(v1.CreatedAt))

		list, err := s.Versions(ctx, 0, 0)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, []int64{2, 1}, []int64{list[0].Revision, list[1].Revision})
		list, err = s.Versions(ctx, 2, 10)
		require.NoError(t, err)
		require.Len(t, list, 1)

		_, err = s.Version(ctx, 9)
		require.ErrorIs(t, err, ErrNotFound)
	})
}

func TestStaleSaveIsRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := newService(t, d, testDefaults())
		save(t, s, `{"base_revision": 0, "sections": {"ticket_scope": {"text": "v1"}}}`)
		save(t, s, `{"base_revision": 1, "sections": {"ticket_scope": {"text": "v2"}}}`)

		_, err := s.SaveJSON(ctx, []byte(`{"base_revision": 1, "sections": {"ticket_scope": {"text": "late"}}}`), panel)
		require.ErrorIs(t, err, ErrConflict)
		var ce *ConflictError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, ConflictError{BaseRevision: 1, HeadRevision: 2}, *ce)

		head, err := s.Head(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(2), head)
	})
}

func TestConcurrentSavesOnOneBaseExactlyOneWins(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := newService(t, d, testDefaults())
		save(t, s, `{"base_revision": 0, "sections": {"ticket_scope": {"text": "start"}}}`)

		const n = 8
		var (
			wg       sync.WaitGroup
			start    = make(chan struct{})
			errs     = make([]error, n)
			revision = make([]int64, n)
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				body := fmt.Sprintf(`{"base_revision": 1, "sections": {"ticket_scope": {"text": "writer %d"}}}`, i)
				res, err := s.SaveJSON(ctx, []byte(body), panel)
				errs[i], revision[i] = err, res.Revision
			}()
		}
		close(start)
		wg.Wait()

		winners := 0
		for i, err := range errs {
			if err == nil {
				winners++
				require.Equal(t, int64(2), revision[i])
				continue
			}
			require.ErrorIs(t, err, ErrConflict, "writer %d", i)
			var ce *ConflictError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, int64(2), ce.HeadRevision)
		}
		require.Equal(t, 1, winners)
		list, err := s.Versions(ctx, 0, 0)
		require.NoError(t, err)
		require.Len(t, list, 2)

		// The loser of a race that read the same head is stopped by the
		// primary key itself.
		err = d.InTx(ctx, func(tx *db.Tx) error {
			return s.store.insert(ctx, tx, VersionInfo{Revision: 2, Predecessor: 1, CreatedAt: s.cfg.Now(), Origin: OriginPanel}, []byte(`{}`))
		})
		require.ErrorIs(t, err, ErrConflict)
	})
}

func TestIdenticalSaveCreatesNoVersion(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		s := newService(t, d, testDefaults())
		// A save that sets what is already there (defaults included) is no change.
		require.Equal(t, SaveResult{Revision: 0, Unchanged: true}, save(t, s,
			`{"base_revision": 0, "sections": {"communication": {"agent_line": "`+DefaultAgentLine+`", "review_bots": []}}, "policy": {"mode": "explicit"}, "skills": {"gone": null}}`))
		body := `{"base_revision": %d, "overrides": {"runtime/work": {"text": "Team work."}}, "skills": {"identities": "x"}, "policy": {"rules": [{"id": "a", "name": "A", "instruction": "i"}]}}`
		require.Equal(t, SaveResult{Revision: 1}, save(t, s, fmt.Sprintf(body, 0)))
		require.Equal(t, SaveResult{Revision: 1, Unchanged: true}, save(t, s, fmt.Sprintf(body, 1)))
		// An override identical to the default is no override.
		require.Equal(t, SaveResult{Revision: 1, Unchanged: true}, save(t, s,
			`{"base_revision": 1, "overrides": {"runtime/replies": {"text": "# runtime/replies\n\nBuilt-in text of runtime/replies.\n"}}}`))
	})
}

func TestOverrideEqualToDefaultIsRemoved(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := newService(t, d, testDefaults())
		save(t, s, `{"base_revision": 0, "overrides": {"runtime/work": {"text": "Team work."}}}`)
		save(t, s, `{"base_revision": 1, "overrides": {"runtime/work": {"text": "# runtime/work\n\nBuilt-in text of runtime/work.\n"}}}`)
		v, err := s.Latest(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(2), v.Revision)
		require.Empty(t, v.Settings.Overrides)
	})
}

func TestRestore(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := newService(t, d, testDefaults())
		save(t, s, `{"base_revision": 0, "overrides": {"runtime/work": {"text": "one"}}}`)
		save(t, s, `{"base_revision": 1, "overrides": {"runtime/work": {"text": "two"}}, "skills": {"s": "t"}}`)

		_, err := s.Restore(ctx, 1, 1, panel, "")
		require.ErrorIs(t, err, ErrConflict)

		res, err := s.Restore(ctx, 1, 2, panel, "")
		require.NoError(t, err)
		require.Equal(t, SaveResult{Revision: 3}, res)
		v3, err := s.Version(ctx, 3)
		require.NoError(t, err)
		v1, err := s.Version(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, v1.Settings, v3.Settings)
		require.Equal(t, ptr(int64(1)), v3.RestoredFrom)
		require.Equal(t, int64(2), v3.Predecessor)
		require.Equal(t, "restore revision 1", v3.Note)

		// Restoring what is already the latest creates nothing.
		res, err = s.Restore(ctx, 1, 3, panel, "")
		require.NoError(t, err)
		require.Equal(t, SaveResult{Revision: 3, Unchanged: true}, res)

		// Revision 0 is the defaults.
		res, err = s.Restore(ctx, 0, 3, panel, "back to defaults")
		require.NoError(t, err)
		require.Equal(t, SaveResult{Revision: 4}, res)
		v4, err := s.Latest(ctx)
		require.NoError(t, err)
		require.Equal(t, DefaultSettings(), v4.Settings)

		_, err = s.Restore(ctx, 42, 4, panel, "")
		require.ErrorIs(t, err, ErrNotFound)
	})
}

func TestValidationListsEveryProblem(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s := newService(t, d, testDefaults())
		body := `{
			"base_revision": 0,
			"colour": "blue",
			"overrides": {
				"runtime/nonsense": {"text": "x"},
				"runtime/environment": {"text": "no variables but {weather}"},
				"runtime/work": {"text": "t", "base": "not-a-sha", "extra": 1}
			},
			"sections": {"communication": {"agent_line": "", "tone": "warm"}, "delivery_requirements": {"auto_merge": {"enabled": true}, "commit_author": {"name": "Bot"}}},
			"skills": {"github": "mine", "Bad Name": "x", "empty": " "},
			"policy": {"mode": "yolo", "rules": [{"id": "a", "name": "A", "instruction": "i"}, {"id": "a", "name": "", "instruction": "j"}]}
		}`
		_, err := s.SaveJSON(ctx, []byte(body), panel)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, []Problem{
			{Key: "colour", Message: "unknown field (known: base_revision, note, request, overrides, sections, skills, policy)"},
			{Key: "overrides.runtime/work.extra", Message: "unknown field (known: text, base)"},
			{Key: "sections.communication.tone", Message: "unknown field (known: text, agent_line, review_bots)"},
			{Key: "overrides.runtime/nonsense", Message: "unknown part: the built-in parts are " + strings.Join(s.reg.Keys(), ", ")},
			{Key: "overrides.runtime/work.base", Message: "must be the SHA-256 (64 lowercase hex digits) of a default text"},
			{Key: "overrides.runtime/environment", Message: "template must keep the placeholder {variables}"},
			{Key: "overrides.runtime/environment", Message: "unknown placeholder {weather} (allowed: {variables})"},
			{Key: "skills.Bad Name", Message: `skill name "Bad Name" is malformed: use 1 to 63 lowercase letters, digits and '-', starting with a letter`},
			{Key: "skills.empty", Message: "skill text is empty (send null to remove the skill)"},
			{Key: "skills.github", Message: `"github" is the name of a built-in skill: choose another name`},
			{Key: "sections.communication.agent_line", Message: "must not be empty: every GitHub message begins with it"},
			{Key: "sections.delivery_requirements.auto_merge.max_changed_lines", Message: "must be above 0 when auto-merge is enabled"},
			{Key: "sections.delivery_requirements.commit_author", Message: "set both name and email, or neither for the App's bot account"},
			{Key: "policy.mode", Message: `unknown accept mode "yolo": use explicit, propose or auto`},
			{Key: "policy.rules[1].id", Message: `rule id "a" is already used by rules[0]`},
			{Key: "policy.rules[1].name", Message: "rule name is empty"},
		}, ve.Problems)

		// Without a base nothing is saved, and the rest is still checked.
		_, err = s.SaveJSON(ctx, []byte(`{"overrides": {"runtime/nope": {"text": "x"}}}`), panel)
		require.ErrorAs(t, err, &ve)
		require.Equal(t, []string{"base_revision", "overrides.runtime/nope"}, []string{ve.Problems[0].Key, ve.Problems[1].Key})
		// An otherwise valid save with one unknown field writes nothing.
		_, err = s.SaveJSON(ctx, []byte(`{"base_revision": 0, "nte": "typo", "sections": {"ticket_scope": {"text": "x"}}}`), panel)
		require.ErrorAs(t, err, &ve)
		require.Len(t, ve.Problems, 1)

		head, err := s.Head(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(0), head, "nothing was written")
	})
}

func TestSizeLimit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s, err := New(Config{Defaults: testDefaults(), SizeLimit: 1000}, d)
		require.NoError(t, err)
		long := strings.Repeat("word ", 300)
		_, err = s.SaveJSON(ctx, []byte(`{"base_revision": 0, "skills": {"long": "`+long+`"}}`), panel)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve)
		require.Len(t, ve.Problems, 1)
		require.Equal(t, "size", ve.Problems[0].Key)
		require.Contains(t, ve.Problems[0].Message, "over the limit of 1000 bytes")
	})
}

func TestTypeErrorsAndMalformedJSON(t *testing.T) {
	t.Parallel()
	_, err := ParsePatch([]byte(`{"base_revision": 0,`))
	var se *SyntaxError
	require.ErrorAs(t, err, &se)

	_, err = ParsePatch([]byte(`{"note": 5, "overrides": {"runtime/work": {"base": "x"}}, "policy": {"rules": [{"id": 1, "enabled": "yes"}]}}`))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, []Problem{
		{Key: "base_revision", Message: "is required: name the revision the change was made against"},
		{Key: "note", Message: "must be a string"},
		{Key: "overrides.runtime/work.text", Message: "is required (send null to remove the override)"},
		{Key: "policy.rules[0].id", Message: "must be a string"},
		{Key: "policy.rules[0].enabled", Message: "must be true or false"},
	}, ve.Problems)
	require.False(t, errors.Is(err, ErrConflict))
}
