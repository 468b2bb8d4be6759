package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/policy"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

func TestProposeModeWaitsForAPerson(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		_, rev, err := e.prompts.Current(ctx)
		require.NoError(t, err)
		admin := e.admit(t, request(20, "switch to propose mode with a CI rule"))
		other := e.admit(t, card{number: 20, login: "bob", permission: "admin", addressed: true, text: "@superagent switch to auto mode"})
		save := func(id string, req int64, mode string) fakeopenai.ToolCall {
			return fakeopenai.Call(id, orchestrator.ToolPromptsSave, fmt.Sprintf(`{"request": %d, "base_revision": %d, "note": "asked in chat",
"policy": {"mode": %q, "rules": [{"id": "ci", "name": "CI", "instruction": "Fix a red CI run on main.", "enabled": true}]}}`, req, rev, mode))
		}
		e.model.Push(
			fakeopenai.Calls(save("by-bob", other.ID, "auto"), save("by-alice", admin.ID, "propose")),
			fakeopenai.Calls(route("done", orchestrator.Decision{Candidate: admin.ID, Action: "ignore"}, orchestrator.Decision{Candidate: other.ID, Action: "ignore"})),
			fakeopenai.Text("Saved."))
		e.turn(t)
		require.Equal(t, fmt.Sprintf("refused: the author of card %d is not an admin", other.ID), e.toolResult(t, "by-bob"))
		require.Contains(t, e.toolResult(t, "by-alice"), `"revision"`)
		settings, _, err := e.prompts.Current(ctx)
		require.NoError(t, err)
		require.Equal(t, policy.Propose, settings.Policy.Mode)

		ci := e.admit(t, card{number: 21, login: "github-actions[bot]", bot: true, kind: "check_failure", text: "test failed on main"})
		e.model.Push(fakeopenai.Calls(route("infer",
			orchestrator.Decision{Candidate: ci.ID, Action: "new", Title: "Fix CI", Rules: []string{"ci"}},
		)), fakeopenai.Text("ok"))
		e.turn(t)
		tk, err := e.store.TicketBySourceCard(ctx, d, ci.ID)
		require.NoError(t, err)
		require.Contains(t, e.toolResult(t, "infer"), fmt.Sprintf("ok (ticket %d proposed", tk.ID))
		require.True(t, tk.Proposal)
		require.Equal(t, tickets.OriginInferred, tk.Origin)
		require.Equal(t, []string{"ci"}, tk.Mandate.Rules)
		require.Zero(t, e.jobs(t, "execute_ticket"), "a proposal starts no work")
		comments := e.gh.Comments()
		require.Len(t, comments, 1)
		require.Equal(t, 21, comments[0].Number)
		require.True(t, strings.HasPrefix(comments[0].Body, promptparts.DefaultAgentLine+"\n\n"), comments[0].Body)

		e.admit(t, card{number: 21, login: "reviewbot[bot]", bot: true, addressed: true, text: "@superagent accept"})
		got, err := e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.True(t, got.Proposal, "a bot cannot accept")
		e.admit(t, card{number: 21, login: "alice", permission: "write", addressed: true, text: "@superagent accept"})
		got, err = e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.False(t, got.Proposal)
		require.Equal(t, tickets.TicketOpen, got.State)
		require.Equal(t, 1, e.jobs(t, "execute_ticket"))
	})
}

func TestForwardAsksTheQuestionUnchanged(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		c := e.admit(t, request(30, "cache the sessions"))
		e.model.Push(fakeopenai.Calls(route("new", orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Session cache"})), fakeopenai.Text("ok"))
		e.turn(t)
		tk, err := e.store.TicketBySourceCard(ctx, d, c.ID)
		require.NoError(t, err)
		question := "Should the cache be per user or global? *Per user* costs 2x memory."
		var r tickets.Report
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			r, err = e.o.Waker().Report(ctx, tx, tickets.Report{TicketID: tk.ID, State: tickets.ReportWaiting, Summary: "cache designed", HumanAction: question})
			return err
		}))
		require.Equal(t, 1, e.jobs(t, "route_turn"), "a Report schedules a turn")
		e.model.Push(fakeopenai.Calls(fakeopenai.Call("fwd", orchestrator.ToolForward, fmt.Sprintf(`{"report": %d}`, r.ID))), fakeopenai.Text("ok"))
		e.turn(t)
		require.Equal(t, "ok (question forwarded)", e.toolResult(t, "fwd"))
		require.Contains(t, e.model.Requests()[2].LastMessage().Content, question, "the Report reached the main Session")
		comments := e.gh.Comments()
		require.Len(t, comments, 1)
		require.Equal(t, promptparts.DefaultAgentLine+"\n\n"+question, comments[0].Body)
		log, err := e.store.Outgoings(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Len(t, log, 2, "the acknowledgement and the question are logged")
	})
}

func TestFeishuRequestAcknowledgedAndPausedByButton(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		// The team's chat opens octo/repo to its members.
		e.deps = func(deps *orchestrator.Deps) {
			deps.ChatRepos = func(context.Context, db.Querier, string) ([]string, error) { return []string{"octo/repo"}, nil }
		}
		e.o = e.orchestrator(t)
		body, err := os.ReadFile("../internal/feishu/testdata/im.message.receive_v1.group_mention.json")
		require.NoError(t, err)
		var ev struct {
			Event struct {
				Message struct {
					ID string `json:"message_id"`
				} `json:"message"`
			} `json:"event"`
		}
		require.NoError(t, json.Unmarshal(body, &ev))
		e.fs.AddMessage(fakefeishu.Message{ID: ev.Event.Message.ID, ChatID: "oc_team", MsgType: "text", Content: `{"text":"hello"}`})
		delivery := seed.FeishuDelivery(t, d, "fs1", body)
		admit := func(nc tickets.NewCard) tickets.Card {
			var c tickets.Card
			require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
				c, err = e.store.Admit(ctx, tx, nc, 0, e.o)
				return err
			}))
			return c
		}
		thread := tickets.Thread{Source: tickets.SourceFeishu, Key: "feishu:oc_team/om_root", Repo: "oc_team"}
		c := admit(tickets.NewCard{DeliveryID: delivery, Source: tickets.SourceFeishu, Kind: "message", Thread: thread,
			Author: tickets.Author{ID: "ou_member", Type: tickets.AuthorUser}, Addressed: true, AddressedWhy: "mention", Text: "@_user_1 please fix the login page"})
		e.model.Push(fakeopenai.Calls(route("new", orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Login page", Repo: "octo/repo"})), fakeopenai.Text("ok"))
		e.turn(t)
		require.Contains(t, e.toolResult(t, "new"), "ok (ticket")
		reactions := e.fs.Reactions()
		require.Len(t, reactions, 1)
		require.Equal(t, ev.Event.Message.ID, reactions[0].MessageID)
		require.Equal(t, "OnIt", reactions[0].EmojiType)
		tk, err := e.store.TicketBySourceCard(ctx, d, c.ID)
		require.NoError(t, err)
		require.Equal(t, []string{"octo/repo"}, tk.Mandate.Repos)
		require.Equal(t, "ou_member", tk.Mandate.RequestedBy.ID)

		// An unaddressed message a rule covers becomes a proposal with an
		// Accept button under it.
		_, rev, err := e.prompts.Current(ctx)
		require.NoError(t, err)
		_, err = e.prompts.SaveTool(ctx, "test", []byte(fmt.Sprintf(`{"base_revision": %d, "policy": {"mode": "propose",
"rules": [{"id": "bugs", "name": "Bug reports", "instruction": "Fix reported bugs.", "enabled": true}]}}`, rev)))
		require.NoError(t, err)
		e.fs.AddMessage(fakefeishu.Message{ID: "om_bug", ChatID: "oc_team", MsgType: "text", Content: `{"text":"the export button is broken"}`})
		bugBody := strings.Replace(string(body), ev.Event.Message.ID, "om_bug", 1)
		delivery = seed.FeishuDelivery(t, d, "fs2", []byte(bugBody))
		bug := admit(tickets.NewCard{DeliveryID: delivery, Source: tickets.SourceFeishu, Kind: "message",
			Thread: tickets.Thread{Source: tickets.SourceFeishu, Key: "feishu:oc_team/om_bug", Repo: "oc_team"},
			Author: tickets.Author{ID: "ou_other", Type: tickets.AuthorUser}, Text: "the export button is broken"})
		e.model.Push(fakeopenai.Calls(route("infer", orchestrator.Decision{Candidate: bug.ID, Action: "new", Title: "Export button", Repo: "octo/repo", Rules: []string{"bugs"}})), fakeopenai.Text("ok"))
		e.turn(t)
		proposal, err := e.store.TicketBySourceCard(ctx, d, bug.ID)
		require.NoError(t, err)
		require.True(t, proposal.Proposal)
		var card *fakefeishu.Message
		for _, m := range e.fs.Messages() {
			if m.ParentID == "om_bug" {
				card = &m
			}
		}
		require.NotNil(t, card, "the proposal is asked under the message")
		require.Equal(t, "interactive", card.MsgType)
		require.Contains(t, card.Content, fmt.Sprintf(`"value":{"action":"accept","ticket":%d}`, proposal.ID))
		admit(tickets.NewCard{Source: tickets.SourceFeishu, Kind: "card_action",
			Thread: tickets.Thread{Source: tickets.SourceFeishu, Key: "feishu:oc_team/" + card.ID, Repo: "oc_team"},
			Author: tickets.Author{ID: "ou_member", Type: tickets.AuthorUser}, Addressed: true, AddressedWhy: "card_action",
			References: []tickets.Reference{{Ref: "feishu:message/" + card.ID}}, Text: fmt.Sprintf(`{"action":"accept","ticket":%d}`, proposal.ID)})
		proposal, err = e.store.Ticket(ctx, d, proposal.ID)
		require.NoError(t, err)
		require.False(t, proposal.Proposal)
		require.Equal(t, tickets.TicketOpen, proposal.State)

		// A button on the bot's status card pauses the Ticket it names;
		// the confirmation names the person as Feishu's contact API did.
		_, err = people.New(d, nil).SeenOnFeishu(ctx, "ou_member", "Mei Lin")
		require.NoError(t, err)
		e.fs.AddMessage(fakefeishu.Message{ID: "om_card", ChatID: "oc_team", MsgType: "interactive", Content: `{"elements":[]}`})
		admit(tickets.NewCard{Source: tickets.SourceFeishu, Kind: "card_action",
			Thread: tickets.Thread{Source: tickets.SourceFeishu, Key: "feishu:oc_team/om_card", Repo: "oc_team"},
			Author: tickets.Author{ID: "ou_member", Type: tickets.AuthorUser}, Addressed: true, AddressedWhy: "card_action",
			References: []tickets.Reference{{Ref: "feishu:message/om_card"}}, Text: fmt.Sprintf(`{"action":"pause","ticket":%d}`, tk.ID)})
		got, err := e.store.Ticket(ctx, d, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketPaused, got.State)
		require.Equal(t, "feishu:ou_member", got.Pause.By, "the record keeps the account")
		e.model.Push(fakeopenai.Text("ok"))
		e.turn(t)
		var said []string
		for _, m := range e.fs.Messages() {
			if m.ParentID == "om_card" {
				said = append(said, m.Content)
			}
		}
		require.Len(t, said, 1, "the pause is confirmed under the card")
		require.Contains(t, said[0], fmt.Sprintf("Paused ticket %d (Login page) at Mei Lin's word.", tk.ID))
		require.NotContains(t, said[0], "ou_member")
	})
}

func TestParseCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		card tickets.Card
		want orchestrator.Command
		ok   bool
	}{
		{"mention then pause", tickets.Card{Addressed: true, Text: "@superagent pause this is wrong"}, orchestrator.Command{Name: "pause", Reason: "this is wrong"}, true},
		{"resume with punctuation", tickets.Card{Addressed: true, Text: "@superagent Resume."}, orchestrator.Command{Name: "resume"}, true},
		{"feishu mention key", tickets.Card{Addressed: true, Text: "@_user_1 accept"}, orchestrator.Command{Name: "accept"}, true},
		{"stop with a reason", tickets.Card{Addressed: true, Text: "@superagent stop: wrong repository"}, orchestrator.Command{Name: "stop", Reason: "wrong repository"}, true},
		{"continue", tickets.Card{Addressed: true, Text: "@superagent continue"}, orchestrator.Command{Name: "continue"}, true},
		{"retry in Feishu", tickets.Card{Addressed: true, Text: "@_user_1 Retry!"}, orchestrator.Command{Name: "retry"}, true},
		{"a request that mentions stopping", tickets.Card{Addressed: true, Text: "@superagent please stop the flaky test"}, orchestrator.Command{}, false},
		{"not addressed", tickets.Card{Text: "@someone pause"}, orchestrator.Command{}, false},
		{"other words first", tickets.Card{Addressed: true, Text: "@superagent please pause"}, orchestrator.Command{}, false},
		{"button", tickets.Card{Addressed: true, Kind: "card_action", Text: `{"action":"resume","ticket":4}`}, orchestrator.Command{Name: "resume", TicketID: 4}, true},
		{"other button", tickets.Card{Addressed: true, Kind: "card_action", Text: `{"action":"approve"}`}, orchestrator.Command{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := orchestrator.ParseCommand(tt.card)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestStopNeedsAPersonsStopRequest holds orchestrator_stop to a person's
// request to stop, given to the turn as a follow-up notice or as a
// candidate, from someone who may command the Ticket on its own
// repository — and to nothing else.
func TestStopNeedsAPersonsStopRequest(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		seed.Installation(t, d, installation+1, "octo/other")
		e.gh.SetPermission("octo/other", "bob", "read")
		e.gh.SetPermission("octo/other", "carol", "write")
		stop := func(id string, ticket int64) string {
			t.Helper()
			e.model.Push(fakeopenai.Calls(fakeopenai.Call(id, orchestrator.ToolStop, fmt.Sprintf(`{"ticket": %d, "reason": "asked to"}`, ticket))), fakeopenai.Text("ok"))
			e.turn(t)
			return e.toolResult(t, id)
		}
		c := e.admit(t, request(40, "rename the flag"))
		e.model.Push(
			fakeopenai.Calls(route("new", orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Rename flag"})),
			fakeopenai.Calls(fakeopenai.Call("early", orchestrator.ToolStop, `{"ticket": 1, "reason": "seems done"}`)),
			fakeopenai.Text("ok"))
		e.turn(t)
		require.Contains(t, e.toolResult(t, "early"), "refused: no card this turn was given is a person's request to stop ticket 1")

		// The requester's thanks is a follow-up notice, and no stop.
		e.admit(t, card{number: 40, login: "alice", permission: "write", text: "thanks!"})
		require.Contains(t, stop("thanks", 1), "refused: no card this turn was given")
		// A reader who did not ask may not stop it, however they say it.
		e.admit(t, card{number: 40, login: "mallory", permission: "read", text: "please stop this"})
		require.Contains(t, stop("reader", 1), "github:mallory is not the requester of ticket 1, nor an admin, and the author's permission on octo/repo is read")
		require.Nil(t, e.ticket(t, 1).Stop)

		// The requester withdraws it in a follow-up: stopped as theirs,
		// said once under their card when the Executor releases it.
		withdraw := e.admit(t, card{number: 40, login: "alice", permission: "write", text: "never mind, we keep the old name"})
		e.model.Push(fakeopenai.Calls(fakeopenai.Call("stop", orchestrator.ToolStop, `{"ticket": 1, "reason": "withdrawn"}`),
			fakeopenai.Call("again", orchestrator.ToolStop, `{"ticket": 1, "reason": "withdrawn"}`)), fakeopenai.Text("ok"))
		e.turn(t)
		require.Equal(t, fmt.Sprintf("ok (ticket 1 stopped at github:alice's request, card %d)", withdraw.ID), e.toolResult(t, "stop"))
		require.Equal(t, "ok (ticket 1 is already stopped)", e.toolResult(t, "again"))
		got := e.ticket(t, 1)
		require.Equal(t, tickets.TicketCancelled, got.State)
		require.Equal(t, "github:alice", got.Stop.By)
		// The Executor's job releases the held stop: it is said once.
		_, err := e.store.ReleaseOutgoing(ctx, d, 1)
		require.NoError(t, err)
		e.model.Push(fakeopenai.Text("ok"))
		e.turn(t)
		require.Equal(t, 1, e.said("Stopped ticket 1", "at @alice's word"))

		// A Ticket in another repository: a candidate elsewhere stops it
		// only for someone with the gate's permission there.
		var other tickets.Ticket
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			other, err = e.store.CreateTicket(ctx, tx, tickets.Ticket{Title: "Flaky test", Repo: "octo/other",
				Mandate: tickets.Mandate{Source: tickets.SourceGitHub, Repos: []string{"octo/other"}}})
			return err
		}))
		e.admit(t, card{number: 41, login: "bob", permission: "admin", addressed: true, text: "@superagent cancel the flaky test work in octo/other"})
		require.Contains(t, stop("elsewhere", other.ID), fmt.Sprintf("bob's permission on octo/other, ticket %d's repository, is read; write or higher is needed", other.ID))
		require.Nil(t, e.ticket(t, other.ID).Stop)
		byWriter := e.admit(t, card{number: 42, login: "carol", permission: "read", addressed: true, text: "@superagent please stop the flaky test work in octo/other"})
		require.Equal(t, fmt.Sprintf("ok (ticket %d stopped at github:carol's request, card %d)", other.ID, byWriter.ID), stop("writer", other.ID))
	})
}

func TestHandedBackCardArrivesWithItsReasons(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		c := e.admit(t, request(50, "speed up the tests"))
		e.model.Push(fakeopenai.Calls(route("new", orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Faster tests"})), fakeopenai.Text("ok"))
		e.turn(t)
		f := e.admit(t, card{number: 50, login: "bob", permission: "read", text: "unrelated: the logo is blurry"})
		require.Equal(t, tickets.CardFollowUp, f.State)
		e.model.Push(fakeopenai.Text("noted"))
		e.turn(t) // the follow-up notice
		var back bool
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			back, err = e.o.Waker().HandBack(ctx, tx, tickets.HandBack{CardID: f.ID, TicketID: 1, Reason: "a design issue, not about tests"})
			return err
		}))
		require.True(t, back)
		e.model.Push(fakeopenai.Calls(route("ignore", orchestrator.Decision{Candidate: f.ID, Action: "ignore"})), fakeopenai.Text("ok"))
		res := e.turn(t)
		require.Equal(t, 1, res.Candidates)
		reqs := e.model.Requests()
		offered := reqs[len(reqs)-2].LastMessage().Content
		require.Contains(t, offered, fmt.Sprintf("card %d · github · comment", f.ID))
		require.Contains(t, offered, "handed back by ticket 1: a design issue, not about tests")
	})
}

func TestAcknowledgementCutOffMidCallIsRetriedOnlyWhereSafe(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		c := e.admit(t, request(60, "bump the version"))
		e.model.Push(fakeopenai.Calls(route("new", orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Bump"})), fakeopenai.Text("ok"))
		e.turn(t)
		require.Len(t, e.gh.Reactions(), 1)
		// As if the process had died an hour ago while the reaction was on
		// its way: claimed, never finished.
		_, err := d.Exec(ctx, `UPDATE outgoing_messages SET state = 'sending', claimed_at = $1`, time.Now().UTC().Add(-time.Hour))
		require.NoError(t, err)
		e.turn(t)
		var state string
		require.NoError(t, d.QueryRow(ctx, `SELECT state FROM outgoing_messages`).Scan(&state))
		require.Equal(t, tickets.OutgoingSent, state, "a stale GitHub reaction is sent again")
		require.Len(t, e.gh.Reactions(), 1, "GitHub keeps one reaction per content")
	})
}

func TestReadingToolsGiveContext(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil)
		c := e.admit(t, request(70, "document the API"))
		e.model.Push(fakeopenai.Calls(route("new", orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "API docs"})), fakeopenai.Text("ok"))
		e.turn(t)
		next := e.admit(t, card{number: 71, login: "bob", text: "typo in README"})
		e.model.Push(fakeopenai.Calls(
			fakeopenai.Call("tickets", orchestrator.ToolRead, `{"what": "tickets"}`),
			fakeopenai.Call("ticket", orchestrator.ToolRead, `{"what": "ticket", "id": 1}`),
			fakeopenai.Call("thread", orchestrator.ToolRead, fmt.Sprintf(`{"what": "thread", "id": %d}`, c.Thread.ID)),
			fakeopenai.Call("prompts", orchestrator.ToolRead, `{"what": "prompts"}`),
			fakeopenai.Call("policy", orchestrator.ToolRead, `{"what": "policy"}`),
			fakeopenai.Call("eval", orchestrator.ToolEval, fmt.Sprintf(`{"candidate": %d}`, next.ID)),
			fakeopenai.Call("skill", orchestrator.ToolSkillLoad, `{"name": "github"}`),
			fakeopenai.Call("nope", orchestrator.ToolSkillLoad, `{"name": "nope"}`),
			fakeopenai.Call("wait", orchestrator.ToolRead, `{"what": "tickets", "wait_seconds": 60}`),
		), fakeopenai.Calls(route("ignore", orchestrator.Decision{Candidate: next.ID, Action: "ignore"})), fakeopenai.Text("ok"))
		e.turn(t)
		require.Contains(t, e.toolResult(t, "tickets"), `"title": "API docs"`)
		require.Contains(t, e.toolResult(t, "ticket"), `"threads"`)
		require.Contains(t, e.toolResult(t, "thread"), `"key": "github:octo/repo#70"`)
		require.Contains(t, e.toolResult(t, "prompts"), `"default_changed"`)
		require.Contains(t, e.toolResult(t, "policy"), `"mode": "explicit"`)
		require.Contains(t, e.toolResult(t, "eval"), `"author_passes_gate": false`)
		require.True(t, strings.HasPrefix(e.toolResult(t, "skill"), "# GitHub"))
		require.Equal(t, `refused: there is no skill "nope"`, e.toolResult(t, "nope"))
		require.Contains(t, e.toolResult(t, "wait"), "refused:")
	})
}

func TestGitHubMessagesBeginWithTheTeamsAgentLine(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		const line = "Written by the team's build agent."
		_, err := e.prompts.SaveJSON(ctx, []byte(`{"base_revision": 0, "sections": {"communication": {"agent_line": "`+line+`"}}}`),
			promptparts.SaveMeta{Origin: promptparts.OriginPanel, Actor: "test"})
		require.NoError(t, err)

		c := e.admit(t, request(31, "cache the sessions"))
		e.model.Push(fakeopenai.Calls(route("new", orchestrator.Decision{Candidate: c.ID, Action: "new", Title: "Session cache"})), fakeopenai.Text("ok"))
		e.turn(t)
		tk, err := e.store.TicketBySourceCard(ctx, d, c.ID)
		require.NoError(t, err)
		var r tickets.Report
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			r, err = e.o.Waker().Report(ctx, tx, tickets.Report{TicketID: tk.ID, State: tickets.ReportWaiting, Summary: "designed", HumanAction: "Per user or global?"})
			return err
		}))
		e.model.Push(fakeopenai.Calls(fakeopenai.Call("fwd", orchestrator.ToolForward, fmt.Sprintf(`{"report": %d}`, r.ID))), fakeopenai.Text("ok"))
		e.turn(t)
		comments := e.gh.Comments()
		require.Len(t, comments, 1)
		require.Equal(t, line+"\n\nPer user or global?", comments[0].Body, "the configured line, not the default")
	})
}

// A card that commits while a turn is running may come after that turn's
// last look; it must get a turn of its own instead of being absorbed.
func TestCardDuringARunningTurnGetsAnotherTurn(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d, nil)
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error { return e.o.ScheduleTurn(ctx, tx) }))
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error { return e.o.ScheduleTurn(ctx, tx) }))
		var n int
		require.NoError(t, d.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'route_turn'").Scan(&n))
		require.Equal(t, 1, n, "a waiting turn absorbs later requests")
		var available int
		require.NoError(t, d.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'route_turn' AND state = 'available'").Scan(&available))
		require.Equal(t, 1, available, "on a quiet service the turn may start at once")

		// The turn runs, holding the main Session's lease, and waits for
		// the burst to end before it reads: what arrives is its to read.
		_, err := d.Exec(ctx, "UPDATE river_job SET state = 'running', attempt = 1, attempted_at = $1 WHERE kind = 'route_turn'", time.Now().UTC())
		require.NoError(t, err)
		until := time.Now().Add(time.Minute).UTC()
		seed.RoutingLease(t, d, "job:1", until, until)
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error { return e.o.ScheduleTurn(ctx, tx) }))
		count := func(state string) int {
			var n int
			require.NoError(t, d.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'route_turn' AND state = $1", state).Scan(&n))
			return n
		}
		require.Zero(t, count("available"), "the turn that has not read yet absorbs the card")

		// Once it has read, a card needs another turn.
		_, err = d.Exec(ctx, "UPDATE routing_state SET turn_due = NULL")
		require.NoError(t, err)
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error { return e.o.ScheduleTurn(ctx, tx) }))
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error { return e.o.ScheduleTurn(ctx, tx) }))
		require.Equal(t, 1, count("running"))
		require.Equal(t, 1, count("available"), "one more turn waits behind the running one, and only one")
	})
}
