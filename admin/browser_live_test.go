package admin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// liveWorld is a Ticket whose Executor Session a test steps through: the
// fake model answers each request only when the test lets it.
type liveWorld struct {
	panel  *panel
	store  *tickets.Store
	ticket tickets.Ticket
	// step lets the model answer its next request.
	step chan fakeopenai.Reply
	// ran receives the Session's outcome.
	ran chan session.Outcome
}

func newLiveWorld(t *testing.T, d *db.DB) *liveWorld {
	t.Helper()
	ctx := context.Background()
	store := tickets.New(tickets.Config{})
	sessions := session.NewStore(d, nil, nil)
	p := newPanelWith(t, d, promptparts.BuiltinDefaults(), Deps{Tickets: store, Sessions: sessions,
		Pauser: tickets.NewPauser(d, store), Stopper: tickets.NewStopper(d, store, nil)},
		Config{Token: testToken, StreamPoll: 100 * time.Millisecond})
	tk, err := store.CreateTicket(ctx, d, tickets.Ticket{Title: "Fix the flaky login test", Repo: "acme/web", State: tickets.TicketWorking})
	require.NoError(t, err)
	w := &liveWorld{panel: p, store: store, ticket: tk, step: make(chan fakeopenai.Reply), ran: make(chan session.Outcome, 1)}

	fake := fakeopenai.New(t)
	fake.Fallback(fakeopenai.Respond(func(fakeopenai.Request) fakeopenai.Reply {
		select {
		case r := <-w.step:
			return r
		case <-time.After(60 * time.Second):
			return fakeopenai.Text("The test gave up.")
		}
	}))
	client, err := model.New(model.Config{BaseURL: fake.URL(), APIKey: "test-key", Model: "fake-model"})
	require.NoError(t, err)
	rt := session.New(session.Config{}, d, client, session.PromptFunc(func(context.Context, *session.Session) (string, int64, error) {
		return "You are an Executor.", 1, nil
	}), nil, nil)
	type cmdArgs struct {
		Command string `json:"command,omitempty"`
		Path    string `json:"path,omitempty"`
	}
	handler := func(context.Context, session.Call, cmdArgs) (string, error) { return "ok", nil }
	tools, err := session.NewRegistry(
		session.Spec[cmdArgs]{Name: "run_command", Description: "Run a command.", Handler: handler}.Tool(),
		session.Spec[cmdArgs]{Name: "edit_file", Description: "Edit a file.", Handler: handler}.Tool(),
	)
	require.NoError(t, err)
	s, err := rt.Create(ctx, d, session.RoleExecutor, tk.ID)
	require.NoError(t, err)
	_, err = rt.Append(ctx, d, s.ID, "Assignment: fix the flaky login test in acme/web#42.")
	require.NoError(t, err)
	go func() {
		out, _ := rt.Run(ctx, s.ID, tools, session.RunOptions{StopCheck: store.StopCheck(d, tk.ID)})
		w.ran <- out
	}()
	return w
}

// waitText waits until the element's text contains want.
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err)
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed %q; it shows %q", sel, want, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestBrowserWatchAndStopATicket(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := browser(t, 1280)
		w := newLiveWorld(t, d)
		base := w.panel.srv.URL
		signInBrowser(t, ctx, base, "Ada")
		page := base + "/admin/tickets/" + itoa(w.ticket.ID)
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("section.live"))))
		waitText(t, ctx, `[data-live="status"]`, "live")
		require.Contains(t, text(t, ctx, "ol.entries"), "Assignment: fix the flaky login test", "the page renders the transcript without the script")

		// The Session takes a step: the page shows it without a reload.
		w.step <- fakeopenai.Calls(fakeopenai.Call("c1", "run_command", `{"command":"go test ./..."}`))
		waitText(t, ctx, `[data-live="step"]`, "run_command: go test ./...")
		waitText(t, ctx, "ol.entries", "→ run_command: go test ./...")
		// The command's result follows its call; the script adds it at the top.
		waitText(t, ctx, "ol.entries li.fresh", "ok")
		waitText(t, ctx, `[data-live="usage"]`, "1 model requests")
		w.step <- fakeopenai.Reply{Content: "The test sleeps; I will poll instead.", ToolCalls: []fakeopenai.ToolCall{
			fakeopenai.Call("c2", "edit_file", `{"path":"login_test.go"}`)}}
		waitText(t, ctx, `[data-live="step"]`, "edit_file: login_test.go")
		waitText(t, ctx, "ol.entries li:nth-child(2)", "edit_file: login_test.go")
		require.Contains(t, text(t, ctx, "ol.entries li:first-child"), "ok", "newest first: the step's result above the step")
		waitText(t, ctx, "ol.entries", "The test sleeps; I will poll instead.")
		screenshot(t, ctx, "live", "live-ticket.png")

		// A person stops it while the model thinks about its next step.
		require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#stop-reason"), "wrong approach")))
		click(t, ctx, `button[value="stop"]`, ".flash-ok")
		require.Contains(t, text(t, ctx, ".flash-ok"), "Ticket stopped.")
		require.Equal(t, "cancelled", text(t, ctx, "h1 .state"))
		require.Contains(t, text(t, ctx, ".live .pause-now"), "Stopped by Ada")
		waitText(t, ctx, `[data-live="status"]`, "live")
		w.step <- fakeopenai.Calls(fakeopenai.Call("c3", "run_command", `{"command":"git push"}`))
		select {
		case out := <-w.ran:
			require.Equal(t, session.StateStopped, out.State)
			require.Equal(t, "stopped by Ada", out.Reason, "the next step ended the Session")
		case <-time.After(30 * time.Second):
			t.Fatal("the Session did not stop")
		}
		waitText(t, ctx, `[data-live="session"]`, "stopped (stopped by Ada)")
		waitText(t, ctx, `[data-live="hold"]`, "Stopped by Ada")
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`button[value="continue"]`))))
		screenshot(t, ctx, "stopped", "")
	})
}

func TestBrowserOverviewShowsConnectionsAndTheCardsInbox(t *testing.T) {
	ctx := browser(t, 1280)
	d := dbtest.SQLite(t)
	o := newOverviewWorld(t, d)
	signInBrowser(t, ctx, o.srv.URL, "Ada")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(o.srv.URL+"/admin/"), chromedp.WaitVisible(chromedp.CSS("table.conn"))))
	require.Contains(t, text(t, ctx, "#conn-h"), "3 need attention")
	require.Contains(t, text(t, ctx, "tr.conn-github"), "not configured")
	require.Contains(t, text(t, ctx, "tr.conn-github"), "superagent setup github")
	require.Contains(t, text(t, ctx, "table.inbox"), "refused")
	screenshot(t, ctx, "overview", "overview.png")
}
