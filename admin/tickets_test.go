package admin

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/dbtest"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/session"
	fakeopenai "github.com/superagent-dev/superagent/internal/testfake/openai"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// statePauser is a hand-written Pauser for tests: it records the hold in
// the Ticket's state, as the component that runs Executors will.
type statePauser struct{ d *db.DB }

func (p statePauser) Pause(ctx context.Context, id int64, _, _ string) error {
	_, err := p.d.Exec(ctx, `UPDATE tickets SET state = 'paused' WHERE id = $1`, id)
	return err
}

func (p statePauser) Resume(ctx context.Context, id int64, _ string) error {
	_, err := p.d.Exec(ctx, `UPDATE tickets SET state = 'open' WHERE id = $1`, id)
	return err
}

// ticketWorld is a Ticket that an Executor Session worked on, through the
// real session runtime and a fake model.
type ticketWorld struct {
	panel  *panel
	ticket tickets.Ticket
}

func newTicketWorld(t *testing.T, d *db.DB) ticketWorld {
	t.Helper()
	ctx := context.Background()
	store := tickets.New(tickets.Config{})
	sessions := session.NewStore(d, nil, nil)
	p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{Tickets: store, Sessions: sessions, Pauser: statePauser{d}})
	saveAs(t, p, "ada", `{"base_revision": 0, "sections": {"ticket_scope": {"text": "Small steps."}}}`)

	tk, err := store.CreateTicket(ctx, d, tickets.Ticket{Title: "Fix the flaky login test", Repo: "acme/web", Branch: "superagent/fix-login-test"})
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
	tools, err := session.NewRegistry(session.Tool{
		Name: "read_file", Description: "Read a file.", Idempotent: true,
		Parameters: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}`),
		Handler: func(context.Context, session.Call) (string, error) {
			return "func TestLogin(t *testing.T) {\n\ttime.Sleep(2 * time.Second)\n}", nil
		},
	})
	require.NoError(t, err)
	s, err := rt.Create(ctx, d, session.RoleExecutor, tk.ID)
	require.NoError(t, err)
	_, err = rt.Append(ctx, d, s.ID, "Trigger card: @superagent please fix the flaky login test in acme/web#42.")
	require.NoError(t, err)
	_, err = rt.Run(ctx, s.ID, tools, session.RunOptions{})
	require.NoError(t, err)
	return ticketWorld{panel: p, ticket: tk}
}

func TestTicketPages(t *testing.T) {
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
		tk, err := tickets.New(tickets.Config{}).Ticket(context.Background(), d, w.ticket.ID)
		require.NoError(t, err)
		require.Equal(t, tickets.TicketPaused, tk.State)
		entries, err := w.panel.admin.audit.list(context.Background(), d, 1)
		require.NoError(t, err)
		require.Equal(t, auditEntry{ID: entries[0].ID, CreatedAt: entries[0].CreatedAt, Actor: "ada", Action: actionPauseTicket,
			Target: "ticket " + itoa(w.ticket.ID), Detail: "waiting for the release"}, entries[0])

		require.Equal(t, http.StatusNotFound, c.get("/admin/tickets/999").status)
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
