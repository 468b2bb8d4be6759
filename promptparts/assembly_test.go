package promptparts

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
)

// Every assembled prompt can be rebuilt from what was recorded, byte for
// byte, after a release changed the built-in texts it read; each stretch
// says where it came from.
func TestReassemble(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		s1 := newService(t, d, testDefaults())
		save(t, s1, teamConfig)
		save(t, s1, `{"base_revision": 1, "overrides": {"runtime/work": {"text": "# Work\n\nThe team's way of working.\n"}}}`)
		mainPrompt, rev, err := s1.Assemble(ctx, Input{Role: RoleMain, Environment: mainEnv})
		require.NoError(t, err)
		require.Equal(t, int64(2), rev)
		execPrompt, _, err := s1.Assemble(ctx, executorInput)
		require.NoError(t, err)

		// A new release changes a built-in part both prompts read.
		s2 := newService(t, d, withText(testDefaults(), KeyShared, "# Shared\n\nChanged.\n"))
		for _, want := range []string{mainPrompt, execPrompt} {
			a, err := s2.Reassemble(ctx, SHA256(want))
			require.NoError(t, err)
			require.True(t, a.Verified)
			require.Equal(t, want, a.Text)
			require.Equal(t, int64(2), a.Revision)
			var joined string
			for _, seg := range a.Segments {
				joined += seg.Text
			}
			require.Equal(t, want, joined)
		}
		a, err := s2.Reassemble(ctx, SHA256(execPrompt))
		require.NoError(t, err)
		origins := map[string]PartOrigin{}
		for _, seg := range a.Segments {
			origins[seg.Key] = seg.Origin
		}
		require.Equal(t, map[string]PartOrigin{
			KeyShared: OriginBuiltin, KeyWorker: OriginBuiltin, "sections": OriginTeam, KeySubscriptions: OriginBuiltin,
			KeyReplies: OriginBuiltin, KeyWork: OriginOverride, KeyHandoffWorker: OriginBuiltin, KeyCoding: OriginBuiltin,
			"agents": OriginGenerated, "agents/AGENTS.md": OriginRepository, "agents/services/login/AGENTS.md": OriginRepository,
			KeyEnvironment: OriginGenerated, "inferred": OriginGenerated,
		}, origins)
		require.Equal(t, executorInput.AgentsMD, a.Input.AgentsMD)

		// Today's prompt of the same revision differs: the shared part is
		// the new release's.
		now, _, err := s2.Assemble(ctx, executorInput)
		require.NoError(t, err)
		require.NotEqual(t, execPrompt, now)
		require.Contains(t, now, "Changed.")

		_, err = s2.Reassemble(ctx, SHA256("never assembled"))
		require.ErrorIs(t, err, ErrNotRecorded)
	})
}
