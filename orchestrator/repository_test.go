package orchestrator_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// A Ticket without a repository gets one on attach only where its
// requester passes the gate now: alice, who can only read octo/other,
// is refused there (recorded on the card, nothing set); octo/repo, where
// she writes, is set and becomes the Mandate's only repository; after
// that no attach changes it.
func TestAttachSetsTheRepositoryOnlyWhereTheRequesterMay(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		seed.Installation(t, d, installation+1, "octo/other")
		e.gh.SetPermission("octo/other", "alice", "read")
		e.gh.SetPermission("octo/repo", "alice", "write")

		// alice's request, as a Ticket whose repository nobody named.
		src := e.admit(t, request(1, "please fix the login page typo"))
		alice := src.Author
		var tk tickets.Ticket
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			tk, err = e.store.CreateTicket(ctx, tx, tickets.Ticket{Title: "Login typo", SourceCardID: src.ID,
				Mandate: tickets.Mandate{Source: tickets.SourceGitHub, RequestedBy: &alice, Actions: []string{"reply"}}})
			if err != nil {
				return err
			}
			if err := e.store.SetCardState(ctx, tx, src.ID, tickets.CardRouted, tk.ID); err != nil {
				return err
			}
			return e.store.Subscribe(ctx, tx, tk.ID, src.Thread.ID)
		}))

		// The answers come from other issues, pointing at the request's.
		pointing := func(issue int, text string) tickets.Card {
			c := request(issue, text)
			c.refs = []tickets.Reference{{Repo: "octo/repo", Number: 1}}
			return e.admit(t, c)
		}
		answer := pointing(2, "it is the one in octo/other, see octo/repo#1")
		e.model.Push(fakeopenai.Calls(route("other", orchestrator.Decision{Candidate: answer.ID, Action: "attach", Ticket: tk.ID,
			Reference: "octo/repo#1", Repo: "octo/other"})), fakeopenai.Text("ok"))
		e.turn(t)
		reason := "alice's permission on octo/other is read; write or higher is needed to open work there"
		require.Contains(t, e.toolResult(t, "other"), fmt.Sprintf("1. candidate %d: refused: %s", answer.ID, reason))
		got := e.ticket(t, tk.ID)
		require.Empty(t, got.Repo, "nothing is set")
		require.Empty(t, got.Mandate.Repos)
		var state, recorded string
		require.NoError(t, d.QueryRow(ctx, `SELECT state, route_refusal FROM cards WHERE id = $1`, answer.ID).Scan(&state, &recorded))
		require.Equal(t, [2]string{"candidate", reason}, [2]string{state, recorded}, "the refusal is recorded on the card")

		answer = pointing(3, "sorry, octo/repo it is, see octo/repo#1")
		e.model.Push(fakeopenai.Calls(route("repo", orchestrator.Decision{Candidate: answer.ID, Action: "attach", Ticket: tk.ID,
			Reference: "octo/repo#1", Repo: "octo/repo"})), fakeopenai.Text("ok"))
		e.turn(t)
		require.Contains(t, e.toolResult(t, "repo"), fmt.Sprintf("ok (attached to ticket %d, which now works in octo/repo)", tk.ID))
		got = e.ticket(t, tk.ID)
		require.Equal(t, "octo/repo", got.Repo)
		require.Equal(t, []string{"octo/repo"}, got.Mandate.Repos)
		require.Equal(t, alice.Login, got.Mandate.RequestedBy.Login, "the rest of the Mandate stays")

		again := pointing(4, "actually octo/other, see octo/repo#1")
		e.model.Push(fakeopenai.Calls(route("again", orchestrator.Decision{Candidate: again.ID, Action: "attach", Ticket: tk.ID,
			Reference: "octo/repo#1", Repo: "octo/other"})), fakeopenai.Text("ok"))
		e.turn(t)
		require.Contains(t, e.toolResult(t, "again"), fmt.Sprintf("refused: ticket %d already works in octo/repo; a Ticket's repository is set once", tk.ID))
		require.Equal(t, "octo/repo", e.ticket(t, tk.ID).Repo)
	})
}

// RequesterMayWorkIn refuses, as a refusal the model reads, a repository
// the App is not installed on, a Ticket nobody asked for, a Feishu
// requester the gate does not admit, and one whose chat does not open the
// repository (with no linked GitHub login); it lets an admitted one
// through.
func TestRequesterMayWorkIn(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		// The team's chat opens octo/repo to its members; no chat opens
		// another.
		e.deps = func(deps *orchestrator.Deps) {
			deps.ChatRepos = func(_ context.Context, _ db.Querier, chat string) ([]string, error) {
				if chat == "oc_team" {
					return []string{"octo/repo"}, nil
				}
				return nil, nil
			}
		}
		e.o = e.orchestrator(t)
		member := tickets.Author{ID: "ou_member", Type: tickets.AuthorUser}
		feishuTicket := func(chat string) tickets.Ticket {
			var tk tickets.Ticket
			require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
				th, err := e.store.UpsertThread(ctx, tx, tickets.Thread{Source: tickets.SourceFeishu, Key: "feishu:" + chat + "/om_1", Repo: chat})
				if err != nil {
					return err
				}
				id := seed.Delivery(t, tx, "feishu-"+chat)
				c, err := e.store.Admit(ctx, tx, tickets.NewCard{DeliveryID: id, Source: tickets.SourceFeishu, Kind: "message", Thread: th,
					Author: member, Addressed: true, AddressedWhy: "mention", Text: "fix the login page typo"}, 0)
				if err != nil {
					return err
				}
				tk, err = e.store.CreateTicket(ctx, tx, tickets.Ticket{Title: "Login typo", SourceCardID: c.ID,
					Mandate: tickets.Mandate{Source: tickets.SourceFeishu, RequestedBy: &member}})
				return err
			}))
			return tk
		}
		refused := func(err error, reason string) {
			t.Helper()
			var r *session.Refusal
			require.ErrorAs(t, err, &r)
			require.Contains(t, r.Reason, reason)
		}
		allowed, stranger := feishuTicket("oc_team"), feishuTicket("oc_elsewhere")
		require.NoError(t, e.o.RequesterMayWorkIn(ctx, allowed, "octo/repo"))
		refused(e.o.RequesterMayWorkIn(ctx, allowed, "octo/nowhere"), "the GitHub App is not installed on octo/nowhere")
		refused(e.o.RequesterMayWorkIn(ctx, allowed, "octo"), `"octo" is not a repository name`)
		refused(e.o.RequesterMayWorkIn(ctx, stranger, "octo/repo"), "feishu:ou_member may not have work done in octo/repo")
		inferred := allowed
		inferred.Origin, inferred.Mandate.RequestedBy = tickets.OriginInferred, nil
		refused(e.o.RequesterMayWorkIn(ctx, inferred, "octo/repo"), "was not asked for by a person")
	})
}
