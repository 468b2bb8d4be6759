package admin

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// ticketWorld is a Ticket that an Executor Session worked on, through the
// real session runtime and a fake model, in a panel wired as main wires it:
// the real tickets.Pauser pauses and resumes.
type ticketWorld struct {
	panel  *panel
	store  *tickets.Store
	ticket tickets.Ticket
}

// worldNow is the tickets store's clock in a ticketWorld.
var worldNow = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func newTicketWorld(t *testing.T, d *db.DB) ticketWorld {
	t.Helper()
	ctx := context.Background()
	store := tickets.New(tickets.Config{Now: func() time.Time { return worldNow }})
	sessions := session.NewStore(d, nil, nil)
	p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{Tickets: store, Sessions: sessions, Pauser: tickets.NewPauser(d, store),
		Stopper: tickets.NewStopper(d, store, nil)})
	saveAs(t, p, "ada", `{"base_revision": 0, "sections": {"ticket_scope": {"text": "Small steps."}}}`)

	tk, err := store.CreateTicket(ctx, d, tickets.Ticket{Title: "Fix the flaky login test", Repo: "acme/web", Branch: "superagent/fix-login-test",
		Mandate: tickets.Mandate{RequestedBy: &tickets.Author{ID: "7", Login: "grace", Type: tickets.AuthorUser, Permission: "write"},
			Source: tickets.SourceGitHub, Repos: []string{"acme/web"}, Actions: []string{"reply", "branch", "pull_request"}}})
	require.NoError(t, err)
	_, err = store.CreateTicket(ctx, d, tickets.Ticket{Title: "Upgrade the linter", Repo: "acme/tools", State: tickets.TicketDone})
	require.NoError(t, err)
	th, err := store.UpsertThread(ctx, d, tickets.Thread{Source: tickets.SourceGitHub, Key: "github:acme/web#42", Repo: "acme/web", Number: 42, Title: "Login test fails one run in ten"})
	require.NoError(t, err)
	require.NoError(t, store.Subscribe(ctx, d, tk.ID, th.ID))

	fake := fakeopenai.New(t,
		fakeopenai.Calls(fakeopenai.Call("call_1", "read_file", `{"path": "tests/login_test.go"}`)),
		fakeopenai.Text("The test waits on a fixed sleep; I will replace it with a poll."),
	)
	client, err := model.New(model.Config{BaseURL: fake.URL(), APIKey: "test-key", Model: "fake-model"})
	require.NoError(t, err)
	prompts := session.PromptFunc(func(ctx context.Context, _ *session.Session) (string, int64, error) {
		head, err := p.prompts.Head(ctx)
		return "You are an Executor.", head, err
	})
	rt := session.New(session.Config{}, d, client, prompts, nil, nil)
	type readArgs struct {
		Path string `json:"path"`
	}
	tools, err := session.NewRegistry(session.Spec[readArgs]{
		Name: "read_file", Description: "Read a file.", Idempotent: true,
		Handler: func(context.Context, session.Call, readArgs) (string, error) {
			return "func TestLogin(t *testing.T) {\n\ttime.Sleep(2 * time.Second)\n}", nil
		},
	}.Tool())
	require.NoError(t, err)
	s, err := rt.Create(ctx, d, session.RoleExecutor, tk.ID)
	require.NoError(t, err)
	_, err = rt.Append(ctx, d, s.ID, "Trigger card: @superagent please fix the flaky login test in acme/web#42.")
	require.NoError(t, err)
	_, err = rt.Run(ctx, s.ID, tools, session.RunOptions{})
	require.NoError(t, err)
	return ticketWorld{panel: p, store: store, ticket: tk}
}

func TestTicketPages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		w := newTicketWorld(t, d)
		c := w.panel.client(t)
		c.signIn("ada")

		res := c.get("/admin/tickets")
		require.Equal(t, http.StatusOK, res.status)
		require.Contains(t, res.body, "Fix the flaky login test")
		require.Contains(t, res.body, "Upgrade the linter")
		res = c.get("/admin/tickets?state=done")
		require.NotContains(t, res.body, "Fix the flaky login test")
		require.Contains(t, res.body, "Upgrade the linter")
		res = c.get("/admin/tickets?q=LOGIN")
		require.Contains(t, res.body, "Fix the flaky login test")
		require.NotContains(t, res.body, "Upgrade the linter")

		path := "/admin/tickets/" + itoa(w.ticket.ID)
		res = c.get(path)
		require.Equal(t, http.StatusOK, res.status)
		body := html.UnescapeString(res.body)
		require.Contains(t, body, "github:acme/web#42")
		require.Contains(t, body, `Tool call <code>read_file</code>`)
		require.Contains(t, body, "time.Sleep(2 * time.Second)", "the tool result is folded under its call")
		require.Contains(t, body, `<a href="/admin/versions/1">revision 1</a>`, "each request names its prompt revision")
		require.Contains(t, body, "I will replace it with a poll.")
		require.Contains(t, body, "2 model requests in 1 Session")

		res = c.post(path, url.Values{"csrf": {c.csrf()}, "action": {"pause"}, "reason": {"waiting for the release"}})
		require.Equal(t, path+"?done=paused", res.location)
		tk, err := w.store.Ticket(context.Background(), d, w.ticket.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketPaused, tk.State)
		require.Equal(t, &tickets.Pause{By: "ada", At: worldNow, Reason: "waiting for the release"}, tk.Pause)
		entries, err := w.panel.admin.audit.list(context.Background(), d, 1)
		require.NoError(t, err)
		require.Equal(t, auditEntry{ID: entries[0].ID, CreatedAt: entries[0].CreatedAt, Actor: "ada", Action: actionPauseTicket,
			Target: "ticket " + itoa(w.ticket.ID), Detail: "waiting for the release"}, entries[0])

		// A Ticket whose last job failed shows why, and Retry runs it again.
		require.NotContains(t, body, `value="retry"`)
		require.NoError(t, tickets.NewPauser(d, w.store).Resume(context.Background(), w.ticket.ID, "ada"))
		require.NoError(t, w.store.Fail(context.Background(), d, w.ticket.ID, "cloning failed"))
		body = html.UnescapeString(c.get(path).body)
		require.Contains(t, body, "Its last job failed on")
		require.Contains(t, body, `value="retry"`)
		res = c.post(path, url.Values{"csrf": {c.csrf()}, "action": {"retry"}})
		require.Equal(t, path+"?done=retried", res.location)
		tk, err = w.store.Ticket(context.Background(), d, w.ticket.ID)
		require.NoError(t, err)
		require.Nil(t, tk.Failed)
		res = c.post(path, url.Values{"csrf": {c.csrf()}, "action": {"retry"}})
		require.Equal(t, http.StatusConflict, res.status, "nothing left to retry")

		require.Equal(t, http.StatusNotFound, c.get("/admin/tickets/999").status)
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// admitCard stores a card on key as ingestion would, for records that
// point at a card.
func admitCard(t *testing.T, d *db.DB, store *tickets.Store, key string) tickets.Card {
	t.Helper()
	ctx := context.Background()
	var card tickets.Card
	require.NoError(t, d.InTx(ctx, func(tx *db.Tx) error {
		var err error
		card, err = store.Admit(ctx, tx, tickets.NewCard{DeliveryID: seed.Delivery(t, tx, key), Source: tickets.SourceGitHub, Kind: "comment",
			Thread: tickets.Thread{Source: tickets.SourceGitHub, Key: key, Repo: "acme/web", Number: 43, Title: "Dark mode"},
			Author: tickets.Author{ID: "9", Login: "linus", Type: tickets.AuthorUser, Permission: "read"},
			Text:   "Could we also add dark mode?"}, 0)
		return err
	}))
	return card
}

func TestTicketRecord(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		w := newTicketWorld(t, d)
		st := w.store
		id := w.ticket.ID
		c := w.panel.client(t)
		c.signIn("ada")
		path := "/admin/tickets/" + itoa(id)

		t.Run("empty", func(t *testing.T) {
			body := html.UnescapeString(c.get(path).body)
			require.Contains(t, body, "Explicit: a person asked the bot")
			require.Contains(t, body, "No Report yet.")
			require.Contains(t, body, "Nothing sent for this Ticket yet.")
			require.NotContains(t, body, `id="handbacks-h"`)
			require.NotContains(t, body, `id="pauses-h"`)
		})

		_, err := st.AddReport(ctx, d, tickets.Report{TicketID: id, State: tickets.ReportProgress, Summary: "Found the fixed sleep in TestLogin."})
		require.NoError(t, err)
		_, err = st.AddReport(ctx, d, tickets.Report{TicketID: id, State: tickets.ReportBlocked, Summary: "CI cannot reach the staging database.",
			HumanAction: "May I skip the staging check for this pull request?"})
		require.NoError(t, err)
		card := admitCard(t, d, st, "github:acme/web#43")
		_, err = st.AddHandBack(ctx, d, tickets.HandBack{CardID: card.ID, TicketID: id, Reason: "dark mode is a separate request"})
		require.NoError(t, err)
		require.NoError(t, st.AddNote(ctx, d, id, "Keep the change to the test file."))
		sent, err := st.RecordIntent(ctx, d, tickets.Outgoing{Key: "react-1", TicketID: id, Source: tickets.SourceGitHub, Kind: "reaction", Target: "comment 5001", Body: "eyes"})
		require.NoError(t, err)
		won, err := st.ClaimIntent(ctx, d, sent.ID)
		require.NoError(t, err)
		require.True(t, won)
		require.NoError(t, st.FinishIntent(ctx, d, sent.ID, nil))
		_, err = st.RecordIntent(ctx, d, tickets.Outgoing{Key: "comment-1", TicketID: id, Source: tickets.SourceGitHub, Kind: "comment", Target: "acme/web#42", Body: "Working on it."})
		require.NoError(t, err)
		require.NoError(t, st.SetPullRequest(ctx, d, id, "superagent/ticket-1", 108))
		inferred, err := st.CreateTicket(ctx, d, tickets.Ticket{Title: "Retry the failing deploy", Repo: "acme/web", State: tickets.TicketWaiting,
			Origin: tickets.OriginInferred, Rules: []string{"ci-failures", "deploys"}, Proposal: true,
			Mandate: tickets.Mandate{Source: tickets.SourceGitHub, Rules: []string{"ci-failures", "deploys"}, Repos: []string{"acme/web"}, Actions: []string{"reply"}}})
		require.NoError(t, err)

		t.Run("explicit ticket", func(t *testing.T) {
			res := c.get(path)
			require.Equal(t, http.StatusOK, res.status)
			body := html.UnescapeString(res.body)
			require.Contains(t, body, "Explicit: a person asked the bot")
			require.Contains(t, body, "<dt>Proposal</dt><dd>No</dd>")
			require.Contains(t, body, `<dt>Asked by</dt><dd>grace <span class="muted">(write on the repository)</span> on github</dd>`)
			require.Contains(t, body, "<dt>Repositories</dt><dd><code>acme/web</code></dd>")
			require.Contains(t, body, "<dt>May</dt><dd>reply, branch, pull_request</dd>")
			require.Contains(t, body, "<dt>Pull request</dt><dd><code>acme/web#108</code></dd>")

			blocked := strings.Index(body, "CI cannot reach the staging database.")
			progress := strings.Index(body, "Found the fixed sleep in TestLogin.")
			require.Positive(t, blocked)
			require.Positive(t, progress)
			require.Less(t, blocked, progress, "the newest Report comes first")
			require.Contains(t, body, `<span class="state state-blocked">blocked</span>`)
			require.Contains(t, body, "May I skip the staging check for this pull request?")

			require.Contains(t, body, "2026-11-30 09:00 UTC: card "+itoa(card.ID)+": dark mode is a separate request")
			require.Contains(t, body, "<li>Keep the change to the test file.</li>")

			pending := strings.Index(body, "<code>acme/web#42</code>")
			reaction := strings.Index(body, "<code>comment 5001</code>")
			require.Positive(t, pending)
			require.Positive(t, reaction)
			require.Less(t, pending, reaction, "the newest message comes first")
			require.Contains(t, body, "github reaction")
			require.Contains(t, body, `<span class="state state-sent">sent</span>`)
			require.Contains(t, body, `<span class="state state-pending">pending</span>`)
		})

		t.Run("inferred proposal", func(t *testing.T) {
			body := html.UnescapeString(c.get("/admin/tickets/" + itoa(inferred.ID)).body)
			require.Contains(t, body, "Inferred: admitted by policy rules <code>ci-failures</code>, <code>deploys</code>")
			require.Contains(t, body, "Proposed: waits for a person to accept it")
			require.Contains(t, body, "nobody: no person asked")
			require.Contains(t, body, "<dt>Rules</dt><dd><code>ci-failures</code>, <code>deploys</code></dd>")
		})

		t.Run("pause and resume", func(t *testing.T) {
			res := c.post(path, url.Values{"csrf": {c.csrf()}, "action": {"pause"}, "reason": {"waiting for the release"}})
			require.Equal(t, path+"?done=paused", res.location)
			body := html.UnescapeString(c.get(path).body)
			require.Contains(t, body, `<span class="state state-paused">paused</span>`)
			require.Contains(t, body, "Paused by <strong>ada</strong> on 2026-11-30 09:00 UTC: waiting for the release.")
			require.Contains(t, body, `value="resume"`)
			require.NotContains(t, body, `value="pause"`)

			res = c.post(path, url.Values{"csrf": {c.csrf()}, "action": {"resume"}})
			require.Equal(t, path+"?done=resumed", res.location)
			tk, err := st.Ticket(ctx, d, id)
			require.NoError(t, err)
			require.Equal(t, tickets.TicketOpen, tk.State)
			require.Nil(t, tk.Pause)
			body = html.UnescapeString(c.get(path).body)
			require.NotContains(t, body, "Paused by")
			require.Contains(t, body, `value="pause"`)
			resumed := strings.Index(body, "<td>Resumed</td>")
			paused := strings.Index(body, "<td>Paused: waiting for the release</td>")
			require.Positive(t, resumed)
			require.Positive(t, paused)
			require.Less(t, resumed, paused, "the newest pause or resume comes first")
		})

		t.Run("a stop from Feishu names the person", func(t *testing.T) {
			// The stop as a Feishu button records it: by the open_id, which
			// the webhooks recorded as a person with the contact API's name.
			_, err := people.New(d, nil).SeenOnFeishu(ctx, "ou_rita", "Rita Alves")
			require.NoError(t, err)
			_, err = st.Stop(ctx, d, id, "feishu:ou_rita", "wrong page")
			require.NoError(t, err)
			body := html.UnescapeString(c.get(path).body)
			require.Contains(t, body, "Stopped by <strong>Rita Alves</strong> on 2026-11-30 09:00 UTC: wrong page.")
			require.Contains(t, body, `data-live="hold">Stopped by Rita Alves<`)
			require.NotContains(t, body, "ou_rita")
			require.NoError(t, st.Continue(ctx, d, id, "feishu:ou_rita", false))
		})

		t.Run("an ended ticket cannot be paused", func(t *testing.T) {
			require.NoError(t, st.Cancel(ctx, d, inferred.ID))
			other := "/admin/tickets/" + itoa(inferred.ID)
			body := c.get(other).body
			require.Contains(t, body, "The Ticket has ended, so it cannot be paused.")
			require.NotContains(t, body, `value="pause"`)
			res := c.post(other, url.Values{"csrf": {c.csrf()}, "action": {"pause"}})
			require.Equal(t, http.StatusConflict, res.status)
			require.Contains(t, res.body, "The Ticket has ended, so there is nothing to pause.")
		})
	})
}

func TestTicketPageWithoutPauser(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	store := tickets.New(tickets.Config{})
	tk, err := store.CreateTicket(context.Background(), d, tickets.Ticket{Title: "Fix the flaky login test"})
	require.NoError(t, err)
	p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{Tickets: store})
	c := p.client(t)
	c.signIn("ada")
	body := c.get("/admin/tickets/" + itoa(tk.ID)).body
	require.Contains(t, body, "Pausing Tickets is not available in this process.")
	require.NotContains(t, body, `name="action"`)
	require.Contains(t, body, "Sessions are not available in this process.")
}

// The Ticket's page shows how its model behaved: the reminders, the
// refused calls and the faults its Sessions recorded.
func TestTicketPageShowsHowTheModelBehaved(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		w := newTicketWorld(t, d)
		var sid int64
		require.NoError(t, d.QueryRow(ctx, `SELECT id FROM sessions WHERE ticket_id = $1`, w.ticket.ID).Scan(&sid))
		_, err := session.NewStore(d, nil, nil).Append(ctx, d, sid, session.NudgePrefix+"the Ticket has no report.")
		require.NoError(t, err)
		c := w.panel.client(t)
		c.signIn("ada")
		body := html.UnescapeString(c.get("/admin/tickets/" + itoa(w.ticket.ID)).body)
		require.Contains(t, body, "How the model behaved")
		require.Regexp(t, `<tr class="behaviour"><td><code>fake-model</code></td><td>2 in 1 Session</td>\s*<td><span class="muted">none</span></td>\s*<td>1</td>`, body)
	})
}
