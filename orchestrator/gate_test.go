package orchestrator_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/orchestrator"
	"github.com/superagent-dev/superagent/policy"
	"github.com/superagent-dev/superagent/tickets"
)

func ghCard(perm string, addressed bool, typ string) tickets.Card {
	return tickets.Card{ID: 1, Source: tickets.SourceGitHub, Addressed: addressed,
		Thread: tickets.Thread{Source: tickets.SourceGitHub, Repo: "octo/repo", Number: 7, Key: "github:octo/repo#7"},
		Author: tickets.Author{ID: "1", Login: "alice", Type: typ, Permission: perm}}
}

func fsCard(chat, member string) tickets.Card {
	return tickets.Card{ID: 2, Source: tickets.SourceFeishu, Addressed: true,
		Thread: tickets.Thread{Source: tickets.SourceFeishu, Repo: chat, Key: "feishu:" + chat + "/om_1"},
		Author: tickets.Author{ID: member, Type: tickets.AuthorUser}}
}

func TestGateExplicitNew(t *testing.T) {
	t.Parallel()
	g := orchestrator.Gate{FeishuChats: []string{"oc_team"}, FeishuMembers: []string{"ou_lead"}}
	tests := []struct {
		name string
		card tickets.Card
		gate orchestrator.Gate
		err  string
	}{
		{"write passes", ghCard("write", true, tickets.AuthorUser), g, ""},
		{"admin passes", ghCard("admin", true, tickets.AuthorUser), g, ""},
		{"maintain passes", ghCard("maintain", true, tickets.AuthorUser), g, ""},
		{"triage is below write", ghCard("triage", true, tickets.AuthorUser), g, "permission on octo/repo is triage; write or higher"},
		{"read is below write", ghCard("read", true, tickets.AuthorUser), g, "read; write or higher"},
		{"unknown permission", ghCard("unknown", true, tickets.AuthorUser), g, "is unknown"},
		{"empty permission", ghCard("", true, tickets.AuthorUser), g, "is unknown"},
		{"configured level", ghCard("write", true, tickets.AuthorUser), orchestrator.Gate{GitHubPermission: "maintain"}, "maintain or higher"},
		{"triage when triage is enough", ghCard("triage", true, tickets.AuthorUser), orchestrator.Gate{GitHubPermission: "triage"}, ""},
		{"not addressed", ghCard("admin", false, tickets.AuthorUser), g, "does not address the bot"},
		{"bot", ghCard("admin", true, tickets.AuthorBot), g, "is a bot"},
		{"feishu allowed chat", fsCard("oc_team", "ou_x"), g, ""},
		{"feishu allowed member elsewhere", fsCard("oc_other", "ou_lead"), g, ""},
		{"feishu neither", fsCard("oc_other", "ou_x"), g, "allowed Feishu lists"},
		{"feishu with no lists", fsCard("oc_team", "ou_lead"), orchestrator.Gate{}, "allowed Feishu lists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.gate.ExplicitNew(tt.card)
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestGateAdmin(t *testing.T) {
	t.Parallel()
	g := orchestrator.Gate{AdminGitHubLogins: []string{"alice"}, AdminFeishuIDs: []string{"ou_lead"}}
	require.NoError(t, g.Admin(ghCard("read", true, tickets.AuthorUser)), "admin identity, not repository permission, decides")
	require.ErrorContains(t, g.Admin(ghCard("admin", false, tickets.AuthorUser)), "explicit request")
	require.ErrorContains(t, g.Admin(ghCard("admin", true, tickets.AuthorBot)), "explicit request")
	require.ErrorContains(t, orchestrator.Gate{}.Admin(ghCard("admin", true, tickets.AuthorUser)), "not an admin")
	require.NoError(t, g.Admin(fsCard("oc_any", "ou_lead")))
	require.ErrorContains(t, g.Admin(fsCard("oc_any", "alice")), "not an admin")
}

func TestInferredNew(t *testing.T) {
	t.Parallel()
	rules := []policy.Rule{{ID: "ci", Name: "CI", Instruction: "fix red CI", Enabled: true}, {ID: "old", Name: "Old", Instruction: "x"}}
	tests := []struct {
		name     string
		mode     policy.Mode
		rules    []string
		proposal bool
		err      string
	}{
		{"auto with an enabled rule", policy.Auto, []string{"ci"}, false, ""},
		{"propose makes a proposal", policy.Propose, []string{"ci"}, true, ""},
		{"explicit mode infers nothing", policy.Explicit, []string{"ci"}, false, "only explicit requests"},
		{"no rule", policy.Auto, nil, false, "at least one enabled policy rule"},
		{"disabled rule", policy.Auto, []string{"ci", "old"}, false, `"old" is not enabled`},
		{"unknown rule", policy.Auto, []string{"nope"}, false, `no policy rule has the id "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proposal, err := orchestrator.InferredNew(policy.Policy{Mode: tt.mode, Rules: rules}, tt.rules)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.proposal, proposal)
		})
	}
}

func TestNotes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		check func(string) error
		text  string
		err   string
	}{
		{"routing 30 words", orchestrator.RoutingNote, words(30), ""},
		{"routing 31 words", orchestrator.RoutingNote, words(31), "31 words; at most 30"},
		{"routing empty", orchestrator.RoutingNote, "", ""},
		{"routing words split by newlines", orchestrator.RoutingNote, strings.ReplaceAll(words(31), " ", "\n"), "31 words"},
		{"ticket 100 words", orchestrator.TicketNote, words(100), ""},
		{"ticket 101 words", orchestrator.TicketNote, words(101), "101 words; at most 100"},
		{"ticket empty", orchestrator.TicketNote, "  ", "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.text)
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestAttach(t *testing.T) {
	t.Parallel()
	ticket := tickets.Ticket{ID: 5, State: tickets.TicketWorking, Repo: "octo/repo", Branch: "fix/crash"}
	facts := orchestrator.TicketFacts{
		Ticket:        ticket,
		Threads:       []tickets.Thread{{Source: tickets.SourceGitHub, Repo: "octo/repo", Number: 12}, {Source: tickets.SourceGitHub, Repo: "octo/repo", Number: 40}},
		Messages:      []string{"feishu:message/om_src", "feishu:message/om_ack"},
		BranchTickets: 1,
	}
	card := func(refs ...tickets.Reference) tickets.Card {
		return tickets.Card{ID: 9, Source: tickets.SourceGitHub, References: refs,
			Thread: tickets.Thread{Source: tickets.SourceGitHub, Repo: "octo/repo", Number: 77, Key: "github:octo/repo#77"}}
	}
	branchCard := tickets.Card{ID: 10, Source: tickets.SourceGitHub, Kind: "check_failure",
		Thread: tickets.Thread{Source: tickets.SourceGitHub, Repo: "octo/repo", Key: "github:octo/repo@fix/crash"}}
	ended := facts
	ended.Ticket.State = tickets.TicketDone
	two := facts
	two.BranchTickets = 2
	tests := []struct {
		name  string
		card  tickets.Card
		ref   string
		facts orchestrator.TicketFacts
		err   string
	}{
		{"its issue, referenced", card(tickets.Reference{Repo: "octo/repo", Number: 12}), "octo/repo#12", facts, ""},
		{"its PR, referenced", card(tickets.Reference{Repo: "octo/repo", Number: 40}), "octo/repo#40", facts, ""},
		{"referenced but not the Ticket's", card(tickets.Reference{Repo: "octo/repo", Number: 13}), "octo/repo#13", facts, "does not belong to ticket 5"},
		{"the Ticket's but not in the card", card(), "octo/repo#12", facts, "card 9 does not reference octo/repo#12"},
		{"no reference", card(), "", facts, "needs the explicit reference"},
		{"its source message", card(tickets.Reference{Ref: "feishu:message/om_src"}), "feishu:message/om_src", facts, ""},
		{"its acknowledgement", card(tickets.Reference{Ref: "feishu:message/om_ack"}), "feishu:message/om_ack", facts, ""},
		{"another message", card(tickets.Reference{Ref: "feishu:message/om_x"}), "feishu:message/om_x", facts, "does not belong"},
		{"a change on its branch", branchCard, "octo/repo@fix/crash", facts, ""},
		{"a change on a shared branch", branchCard, "octo/repo@fix/crash", two, "exactly one"},
		{"an ended Ticket", card(tickets.Reference{Repo: "octo/repo", Number: 12}), "octo/repo#12", ended, "has ended"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := orchestrator.Attach(tt.card, tt.ref, tt.facts)
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestWaitGuard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args string
		err  string
	}{
		{`{"ticket": 3, "text": "sleep on it"}`, ""},
		{`{"timeout_seconds": 30}`, ""},
		{`{"timeout_seconds": 31}`, "31 s is over the 30 s limit"},
		{`{"wait_seconds": 5}`, ""},
		{`{"wait_seconds": 6}`, "6 s is over the 5 s limit"},
		{`{"sleep": 1}`, "never sleeps"},
		{`{"command": "make test; sleep 60"}`, "never sleeps or waits"},
		{`{"command": "go test ./..."}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			err := orchestrator.WaitGuard(json.RawMessage(tt.args))
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
		})
	}
}

// A request opens work only where its author passes the gate: a writer
// on octo/repo asking for work in octo/other, where GitHub says they can
// only read, gets no Ticket there; with write there, they do.
func TestGateOnTheTargetRepository(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil)
		seed.Installation(t, d, installation+1, "octo/other")
		e.gh.SetPermission("octo/other", "alice", "read")
		e.gh.SetPermission("octo/other", "carol", "maintain")

		reader := e.admit(t, request(1, "please fix the flaky test in octo/other"))
		maintainer := request(2, "please fix the flaky test in octo/other")
		maintainer.login = "carol"
		other := e.admit(t, maintainer)
		e.model.Push(fakeopenai.Calls(route("target",
			orchestrator.Decision{Candidate: reader.ID, Action: "new", Title: "Flaky test", Repo: "octo/other"},
			orchestrator.Decision{Candidate: other.ID, Action: "new", Title: "Flaky test", Repo: "octo/other"})), fakeopenai.Text("ok"))
		e.turn(t)
		result := e.toolResult(t, "target")
		require.Contains(t, result, fmt.Sprintf("1. candidate %d: refused: alice's permission on octo/other is read; write or higher is needed to open work there", reader.ID))
		require.Contains(t, result, fmt.Sprintf("2. candidate %d: ok (ticket", other.ID))
		require.Equal(t, 1, e.ticketCount(t), "no Ticket where the author may only read")
	})
}
