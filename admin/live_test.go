package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// newOverviewWorld is a panel whose deployment has only a model and a
// database, and whose cards include a waiting, an ignored and a refused
// one.
func newOverviewWorld(t *testing.T, d *db.DB) *panel {
	t.Helper()
	ctx := context.Background()
	store := tickets.New(tickets.Config{})
	conns := func(context.Context) []Connection {
		return []Connection{
			{Kind: ConnGitHub, Name: "GitHub App", Hint: "run `superagent setup github`, or set SUPERAGENT_GITHUB_APP_ID, SUPERAGENT_GITHUB_PRIVATE_KEY and SUPERAGENT_GITHUB_WEBHOOK_SECRET"},
			{Kind: ConnFeishu, Name: "Feishu", Hint: "set SUPERAGENT_FEISHU_APP_ID and SUPERAGENT_FEISHU_APP_SECRET (`superagent setup feishu` checks them)"},
			{Kind: ConnModel, Name: "Model", Configured: true, Detail: "gpt-test", Hint: "check SUPERAGENT_MODEL_BASE_URL and SUPERAGENT_MODEL_API_KEY"},
			{Kind: ConnSandbox, Name: "Sandbox", Hint: "install bubblewrap"},
			{Kind: ConnDatabase, Name: "Database", Configured: true, Detail: "sqlite"},
		}
	}
	p := newPanel(t, d, promptparts.BuiltinDefaults(), Deps{Tickets: store, Connections: conns})
	for i, text := range []string{"@superagent is the build green?", "thanks, all good", "@superagent delete the CI config"} {
		var c tickets.Card
		delivery := seed.Delivery(t, d, "ov"+itoa(int64(i)))
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			c, err = store.Admit(ctx, tx, tickets.NewCard{DeliveryID: delivery, Source: tickets.SourceGitHub, Kind: "comment",
				Thread: tickets.Thread{Source: tickets.SourceGitHub, Key: "github:acme/web#" + itoa(int64(40+i)), Repo: "acme/web", Number: 40 + i},
				Author: tickets.Author{ID: "u" + itoa(int64(i)), Login: []string{"grace", "heidi", "mallory"}[i], Type: tickets.AuthorUser},
				Text:   text, URL: "https://github.com/acme/web/issues/" + itoa(int64(40+i))}, 0)
			return err
		}))
		switch i {
		case 1:
			require.NoError(t, store.SetCardState(ctx, d, c.ID, tickets.CardIgnored, 0))
			require.NoError(t, store.SetRoutingNote(ctx, d, c.ID, "a thank-you, nothing to do"))
		case 2:
			require.NoError(t, store.SetRouteRefusal(ctx, d, c.ID, "the author's permission on acme/web is read; write or higher is needed"))
		}
	}
	return p
}

func TestOverviewShowsConnectionsAndTheCardsInbox(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		p := newOverviewWorld(t, d)
		c := p.client(t)
		c.signIn("ada")
		res := c.get("/admin/")
		require.Equal(t, http.StatusOK, res.status)
		body := res.body
		require.Contains(t, body, "3 need attention", "GitHub, Feishu and the sandbox are not set up")
		for _, want := range []string{
			"GitHub App", "run `superagent setup github`", "SUPERAGENT_FEISHU_APP_ID", "install bubblewrap",
			"not configured", "never seen",
			"thanks, all good", "a thank-you, nothing to do",
			"@superagent delete the CI config", "the author&#39;s permission on acme/web is read",
			"@superagent is the build green?", "for the main Session",
		} {
			require.Contains(t, body, want)
		}
		require.Contains(t, body, `<tr class="conn-database ok">`, "the database answers this page")
		require.NotContains(t, body, "held up")

		// The main Session's model fails: the Model connection says since
		// when and why, and the waiting candidates that it holds them up.
		since := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
		seed.ModelFailing(t, d, "main", "router-model", since.Add(-time.Hour), since.Add(time.Minute), since, "connection refused")
		body = c.get("/admin/").body
		require.Contains(t, body, "failing since 2026-03-01 09:30 UTC")
		require.Contains(t, body, "the main Session&#39;s model router-model: connection refused")
		require.Contains(t, body, "held up")
		require.Contains(t, body, "the main Session's model router-model has been failing since 2026-03-01 09:30 UTC: connection refused")
		require.NotContains(t, body, `<span class="muted">for the main Session</span>`, "no card says it merely waits")
	})
}

// stream opens a Ticket's event stream as the signed-in client.
func (c *client) stream(t *testing.T, ctx context.Context, path string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	require.NoError(t, err)
	res, err := c.http.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	return res, bufio.NewReader(res.Body)
}

// nextEvent reads the next event's name and data.
func nextEvent(t *testing.T, r *bufio.Reader) (string, string) {
	t.Helper()
	var name, data string
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && name != "":
			return name, data
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

func TestTicketEventsStreamFromTheDatabase(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		w := newTicketWorld(t, d)
		p := newPanelWith(t, d, promptparts.BuiltinDefaults(), Deps{Tickets: w.store, Sessions: w.panel.admin.deps.Sessions},
			Config{Token: testToken, MaxStreams: 1, StreamPoll: 50 * time.Millisecond})
		c := p.client(t)
		c.signIn("ada")
		path := "/admin/tickets/" + itoa(w.ticket.ID) + "/events"

		anon := p.client(t)
		res, _ := anon.stream(t, ctx, path)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, "the stream needs a session, like the panel")

		res, r := c.stream(t, ctx, path+"?after=2")
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
		name, data := nextEvent(t, r)
		require.Equal(t, "update", name)
		var ev struct {
			State   liveState   `json:"state"`
			Entries []liveEntry `json:"entries"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &ev))
		require.Equal(t, tickets.TicketOpen, ev.State.State)
		require.Equal(t, "read_file: tests/login_test.go", ev.State.Step)
		require.Len(t, ev.Entries, 2, "only what came after the cursor")
		require.Equal(t, "assistant", ev.Entries[0].Role, "newest first")

		busy, _ := c.stream(t, ctx, path)
		require.Equal(t, http.StatusServiceUnavailable, busy.StatusCode, "the streams are bounded")

		// A change in the database, made by any process, reaches the page.
		require.NoError(t, tickets.NewPauser(d, w.store).Pause(ctx, w.ticket.ID, "bob", "lunch"))
		name, data = nextEvent(t, r)
		require.Equal(t, "update", name)
		require.NoError(t, json.Unmarshal([]byte(data), &ev))
		require.Equal(t, tickets.TicketPaused, ev.State.State)
		require.Equal(t, "Paused by bob", ev.State.Hold)
		require.Empty(t, ev.Entries)

		p.admin.CloseStreams()
		name, _ = nextEvent(t, r)
		require.Equal(t, "bye", name, "shutting down ends the stream")
		_, err := r.ReadString('\n')
		require.Error(t, err, "and closes it")
		res, _ = c.stream(t, ctx, path)
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "no new stream while shutting down")
	})
}

// A stream ends when its session does: every poll reads the session
// again, so signing out (or anything else that ends it) closes the
// session's open pages with a "bye" that says why. One session holds at
// most DefaultMaxStreamsPerSession streams, so it cannot take every slot
// from the next person.
func TestStreamsEndWithTheirSessionAndAreBoundedPerSession(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		w := newTicketWorld(t, d)
		p := newPanelWith(t, d, promptparts.BuiltinDefaults(), Deps{Tickets: w.store, Sessions: w.panel.admin.deps.Sessions},
			Config{Token: testToken, MaxStreams: 2 * DefaultMaxStreamsPerSession, StreamPoll: 50 * time.Millisecond})
		path := "/admin/tickets/" + itoa(w.ticket.ID) + "/events"
		ada := p.client(t)
		ada.signIn("ada")
		var open []*bufio.Reader
		for range DefaultMaxStreamsPerSession {
			res, r := ada.stream(t, ctx, path)
			require.Equal(t, http.StatusOK, res.StatusCode)
			name, _ := nextEvent(t, r)
			require.Equal(t, "update", name)
			open = append(open, r)
		}
		res, _ := ada.stream(t, ctx, path)
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "one session's streams are bounded")
		require.NotEmpty(t, res.Header.Get("Retry-After"))

		grace := p.client(t)
		grace.signIn("grace")
		res, other := grace.stream(t, ctx, path)
		require.Equal(t, http.StatusOK, res.StatusCode, "another session still gets a stream")
		name, _ := nextEvent(t, other)
		require.Equal(t, "update", name)

		res2 := ada.post("/admin/signout", url.Values{"csrf": {ada.csrf()}})
		require.Equal(t, http.StatusSeeOther, res2.status)
		for _, r := range open {
			name, data := nextEvent(t, r)
			require.Equal(t, "bye", name, "a signed-out session's page stops")
			require.JSONEq(t, `{"reason":"session"}`, data)
			_, err := r.ReadString('\n')
			require.Error(t, err, "and its stream closes")
		}

		// Grace's page streams on, and Ada's slots are free again.
		require.NoError(t, tickets.NewPauser(d, w.store).Pause(ctx, w.ticket.ID, "bob", "lunch"))
		name, data := nextEvent(t, other)
		require.Equal(t, "update", name)
		require.Contains(t, data, "Paused by bob")
		again := p.client(t)
		again.signIn("ada")
		for range DefaultMaxStreamsPerSession {
			res, _ := again.stream(t, ctx, path)
			require.Equal(t, http.StatusOK, res.StatusCode)
		}
	})
}

// The live page's stream is exempt from the server's write deadline: it
// streams on long past it, while the Ticket's page itself has it.
func TestStreamOutlastsTheWriteDeadline(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const timeout = 200 * time.Millisecond
	w := newTicketWorld(t, d)
	p := newPanelOn(t, d, promptparts.BuiltinDefaults(), Deps{Tickets: w.store, Sessions: w.panel.admin.deps.Sessions},
		Config{Token: testToken, StreamPoll: 20 * time.Millisecond}, httpserver.Config{WriteTimeout: timeout})
	c := p.client(t)
	c.signIn("ada")
	res, r := c.stream(t, ctx, "/admin/tickets/"+itoa(w.ticket.ID)+"/events")
	require.Equal(t, http.StatusOK, res.StatusCode)
	name, _ := nextEvent(t, r)
	require.Equal(t, "update", name)
	<-time.After(3 * timeout) // well past a page's deadline
	require.NoError(t, tickets.NewPauser(d, w.store).Pause(ctx, w.ticket.ID, "bob", "lunch"))
	name, data := nextEvent(t, r)
	require.Equal(t, "update", name)
	require.Contains(t, data, "Paused by bob")
}
