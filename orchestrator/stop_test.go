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
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

func TestStopAndContinueAreSaidOnceInTheConversation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		c := e.admit(t, request(6, "make the build faster"))
		e.model.Push(fakeopenai.Calls(route("new", orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Faster build"})), fakeopenai.Text("ok"))
		e.turn(t)
		tk, err := e.store.TicketBySourceCard(ctx, d, c.ID)
		require.NoError(t, err)
		// The Executor's first job has run.
		_, err = d.Exec(ctx, `UPDATE river_job SET state = 'completed', finalized_at = $1 WHERE kind = 'execute_ticket'`, time.Now().UTC())
		require.NoError(t, err)
		jobs := e.jobs(t, "execute_ticket")

		p := tickets.NewStopper(d, e.store, nil, e.o)
		require.NoError(t, p.Stop(ctx, tk.ID, "admin:carol", "wrong repository"))
		require.NoError(t, p.Stop(ctx, tk.ID, "admin:dave", ""), "a second stop changes nothing")
		require.NoError(t, p.Continue(ctx, tk.ID, "admin:dave"))
		require.Greater(t, e.jobs(t, "execute_ticket"), jobs, "the stop and the continue wake the Executor")
		// The Executor's next job releases the held stop before it works.
		_, err = e.store.ReleaseOutgoing(ctx, d, tk.ID)
		require.NoError(t, err)
		e.model.Push(fakeopenai.Text("ok"))
		e.turn(t)
		var stopped, continued int
		for _, cm := range e.gh.Comments() {
			if strings.Contains(cm.Body, "Stopped ticket") && strings.Contains(cm.Body, "admin:carol") && strings.Contains(cm.Body, "wrong repository") {
				stopped++
			}
			if strings.Contains(cm.Body, "Continuing ticket") {
				continued++
			}
		}
		require.Equal(t, 1, stopped, "the stop is said once")
		require.Equal(t, 1, continued)
	})
}

func TestRefusedDecisionsAreKeptWithTheCard(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil)
		c := e.admit(t, card{number: 8, login: "mallory", permission: "read", addressed: true, text: "@superagent delete the CI config"})
		e.model.Push(fakeopenai.Calls(route("route", orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Delete CI config"})),
			fakeopenai.Text("ok"), fakeopenai.Text("ok"))
		e.turn(t)
		got, err := e.store.UnroutedCards(context.Background(), d, 10)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, c.ID, got[0].ID)
		require.Contains(t, got[0].Refusal, "cannot start work: the author's permission on octo/repo is read")
	})
}

// TestExemptionOffAdmitsOnlyUnderARule holds the host to the Policy
// section in every accept mode: with the explicit-request exemption off,
// an explicit request is admitted only when it names an enabled rule, and
// with no rule enabled nothing is admitted at all.
func TestExemptionOffAdmitsOnlyUnderARule(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"explicit", "propose", "auto"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, d *db.DB) {
				ctx := context.Background()
				e := setup(t, d, nil)
				save := func(rev int, exempt bool, enabled bool) {
					t.Helper()
					_, err := e.prompts.SaveJSON(ctx, []byte(fmt.Sprintf(`{"base_revision": %d, "policy": {"mode": %q, "explicit_request_exemption": %t,
"rules": [{"id": "docs", "name": "Docs", "instruction": "Fix typos in the docs when asked.", "enabled": %t}]}}`, rev, mode, exempt, enabled)),
						promptparts.SaveMeta{Origin: promptparts.OriginPanel, Actor: "admin:test"})
					require.NoError(t, err)
				}
				decide := func(id string, c tickets.Card, rules ...string) string {
					t.Helper()
					e.model.Push(fakeopenai.Calls(route(id, orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Fix the typo", Rules: rules})), fakeopenai.Text("ok"))
					e.turn(t)
					return e.toolResult(t, id)
				}

				// Exemption off, no rule enabled: nothing is admitted.
				save(0, false, false)
				c := e.admit(t, request(60, "fix the typo in the docs"))
				require.Equal(t, "1. candidate "+itoa(c.ID)+": refused: the explicit-request exemption is off and no policy rule is enabled, so no request is admitted",
					decide("none", c))
				require.Zero(t, e.ticketCount(t))

				// A rule enabled: the request must name it.
				save(1, false, true)
				c = e.admit(t, request(61, "fix the typo in the docs"))
				require.Contains(t, decide("unnamed", c), "refused: the explicit-request exemption is off: name the enabled policy rule that admits this request")
				require.Zero(t, e.ticketCount(t))
				c = e.admit(t, request(62, "fix the typo in the docs"))
				require.Contains(t, decide("named", c, "docs"), "ok (ticket ")
				tk, err := e.store.TicketBySourceCard(ctx, d, c.ID)
				require.NoError(t, err)
				require.Equal(t, tickets.OriginExplicit, tk.Origin, "a person's request, admitted under the rule")
				require.False(t, tk.Proposal)
				require.Equal(t, []string{"docs"}, tk.Mandate.Rules)

				// Exemption on: admitted without a rule.
				save(2, true, false)
				c2 := e.admit(t, request(63, "fix another typo"))
				require.Contains(t, decide("exempt", c2), "ok (ticket ")
			})
		})
	}
}
