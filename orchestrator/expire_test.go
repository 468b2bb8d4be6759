package orchestrator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/tickets"
)

// A proposal nobody accepts within the TTL is cancelled by the periodic
// River job, with one sentence where it was proposed; a proposal a person
// accepted in time is left alone.
func TestUnansweredProposalsExpire(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, func(c *orchestrator.Config) { c.ProposalTTL = 3 * time.Second })
		_, rev, err := e.prompts.Current(ctx)
		require.NoError(t, err)
		_, err = e.prompts.SaveTool(ctx, "test", []byte(fmt.Sprintf(`{"base_revision": %d, "policy": {"mode": "propose",
"rules": [{"id": "ci", "name": "CI", "instruction": "Fix a red CI run on main.", "enabled": true}]}}`, rev)))
		require.NoError(t, err)

		left := e.admit(t, card{number: 31, login: "github-actions[bot]", bot: true, kind: "check_failure", text: "lint failed on main"})
		taken := e.admit(t, card{number: 32, login: "github-actions[bot]", bot: true, kind: "check_failure", text: "test failed on main"})
		e.model.Push(fakeopenai.Calls(route("infer",
			orchestrator.Decision{Candidate: left.ID, Action: "new", Title: "Fix lint", Rules: []string{"ci"}},
			orchestrator.Decision{Candidate: taken.ID, Action: "new", Title: "Fix the test", Rules: []string{"ci"}},
		)), fakeopenai.Text("ok"))
		e.turn(t)
		leftT, err := e.store.TicketBySourceCard(ctx, d, left.ID)
		require.NoError(t, err)
		require.True(t, leftT.Proposal)
		e.admit(t, card{number: 32, login: "alice", permission: "write", addressed: true, text: "@superagent accept"})

		require.NoError(t, e.q.Start(ctx))
		t.Cleanup(func() {
			stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, e.q.Stop(stop))
		})
		expiredNote := func() int {
			n := 0
			for _, c := range e.gh.Comments() {
				if strings.Contains(c.Body, "Nobody accepted the proposed work") {
					require.Equal(t, 31, c.Number, "said where it was proposed")
					require.Contains(t, c.Body, `"Fix lint" within 3s`)
					n++
				}
			}
			return n
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			got, err := e.store.Ticket(ctx, d, leftT.ID)
			require.NoError(t, err)
			if got.State == tickets.TicketCancelled && expiredNote() > 0 {
				require.False(t, got.Proposal)
				break
			}
			require.True(t, time.Now().Before(deadline), "the proposal did not expire: %+v", got)
			time.Sleep(100 * time.Millisecond)
		}
		takenT, err := e.store.TicketBySourceCard(ctx, d, taken.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketOpen, takenT.State, "an accepted proposal does not expire")

		n, err := e.o.ExpireProposals(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "an expired proposal expires once")
		require.Equal(t, 1, expiredNote(), "one sentence")
	})
}
