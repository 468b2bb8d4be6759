package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/tickets"
)

// The status card of a Ticket asked for in Feishu is posted once, under
// the request in its thread, even when the process lost Feishu's answer to
// the post or died before recording it: the retry finds the card (the
// same uuid, or the finished intent) and patches it. Each later change
// patches it; no change writes nothing.
func TestStatusCardPostsOnceAndPatches(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, nil)
		fs := fakefeishu.New(t)
		// Feishu's answer to the first post is held back until the
		// caller gives up: the card landed, the process never heard.
		var hold atomic.Bool
		hold.Store(true)
		upstream, err := url.Parse(fs.URL)
		require.NoError(t, err)
		rp := httputil.NewSingleHostReverseProxy(upstream)
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/reply") && hold.CompareAndSwap(true, false) {
				rp.ServeHTTP(httptest.NewRecorder(), r)
				<-r.Context().Done()
				return
			}
			rp.ServeHTTP(w, r)
		}))
		t.Cleanup(proxy.Close)
		e.fsc, err = feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: proxy.URL, ChatInterval: -1, MaxRetries: -1}, nil, nil)
		require.NoError(t, err)
		e.publicURL = "https://superagent.example.com"
		e.x = e.executor(t)

		ctx := context.Background()
		const request = "om_a1b2c3d4e5f60718293a4b5c6d7e8f90"
		tk := feishuTicket(t, e, fs, "CSV export")
		cards := func() []fakefeishu.Message {
			var out []fakefeishu.Message
			for _, m := range fs.Messages() {
				if m.MsgType == "interactive" {
					out = append(out, m)
				}
			}
			return out
		}

		// The first attempt dies waiting for the answer.
		cut, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- e.x.SyncCard(cut, tk.ID) }()
		deadline := time.Now().Add(30 * time.Second)
		for len(cards()) == 0 {
			require.True(t, time.Now().Before(deadline), "the card never reached Feishu")
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		require.Error(t, <-done)

		// The retry finds the card under its uuid and patches it.
		require.NoError(t, e.x.SyncCard(ctx, tk.ID))
		got := cards()
		require.Len(t, got, 1, "posted once")
		require.Equal(t, request, got[0].ParentID)
		require.True(t, got[0].ReplyInThread)
		require.Equal(t, 1, got[0].Patches, "what the lost post showed is unknown, so it is patched")
		for _, want := range []string{`"update_multi":true`, `"State\nopen"`, `"action":"pause"`, `"action":"stop"`,
			"https://superagent.example.com/admin/tickets/"} {
			require.Contains(t, got[0].Content, want)
		}

		// Nothing changed: nothing is written.
		require.NoError(t, e.x.SyncCard(ctx, tk.ID))
		require.Equal(t, 1, cards()[0].Patches)

		// A change patches the same card.
		require.NoError(t, e.store.SetTicketState(ctx, d, tk.ID, tickets.TicketWaiting))
		require.NoError(t, e.x.SyncCard(ctx, tk.ID))
		got = cards()
		require.Len(t, got, 1)
		require.Equal(t, 2, got[0].Patches)
		require.Contains(t, got[0].Content, "waiting for an answer")

		// A process that died after the post but before recording it:
		// the finished intent gives the card back, and nothing is posted.
		_, err = d.Exec(ctx, "DELETE FROM ticket_feishu_cards WHERE ticket_id = $1", tk.ID)
		require.NoError(t, err)
		require.NoError(t, e.store.SetTicketState(ctx, d, tk.ID, tickets.TicketDone))
		require.NoError(t, e.x.SyncCard(ctx, tk.ID))
		got = cards()
		require.Len(t, got, 1, "never posted again")
		require.Equal(t, 3, got[0].Patches)
		require.Contains(t, got[0].Content, `"State\ndone"`)
		require.NotContains(t, got[0].Content, `"action":`, "a done Ticket offers no command")
		require.Len(t, fs.RequestsTo(http.MethodPost, "/open-apis/im/v1/messages/"+request+"/reply"), 2, "the lost post and its retry under the same uuid")
	})
}

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// feishuTicket stores a person's direct message to the bot (the p2p
// fixture, which fs also holds) and makes it a Ticket titled title.
func feishuTicket(t *testing.T, e *env, fs *fakefeishu.Server, title string) tickets.Ticket {
	t.Helper()
	ctx := context.Background()
	body, err := os.ReadFile("../internal/feishu/testdata/im.message.receive_v1.p2p.json")
	require.NoError(t, err)
	const request, chat = "om_a1b2c3d4e5f60718293a4b5c6d7e8f90", "oc_a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5"
	fs.AddMessage(fakefeishu.Message{ID: request, ChatID: chat, Content: `{"text":"export the list as CSV"}`})
	delivery := seed.FeishuDelivery(t, e.d, "fs-card", body)
	var tk tickets.Ticket
	require.NoError(t, e.d.InTx(ctx, func(tx *db.Tx) error {
		c, err := e.store.Admit(ctx, tx, tickets.NewCard{DeliveryID: delivery, Source: tickets.SourceFeishu, Kind: "message",
			Thread: tickets.Thread{Source: tickets.SourceFeishu, Key: "feishu:" + chat + "/" + request, Repo: chat},
			Author: tickets.Author{ID: "ou_member", Type: tickets.AuthorUser}, Addressed: true, AddressedWhy: "direct_message",
			Text: "export the list as CSV"}, 0)
		if err != nil {
			return err
		}
		author := c.Author
		tk, err = e.store.CreateTicket(ctx, tx, tickets.Ticket{Title: title, SourceCardID: c.ID,
			Mandate: tickets.Mandate{RequestedBy: &author, Source: "feishu"}})
		return err
	}))
	return tk
}

// The status card as Feishu receives it, in each state that changes its
// buttons, with hostile text from the title and the Report kept plain.
func TestStatusCardGolden(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	e := setup(t, d, nil)
	fs := fakefeishu.New(t)
	var err error
	e.fsc, err = feishu.New(feishu.Config{AppID: fakefeishu.AppID, AppSecret: "secret", BaseURL: fs.URL, ChatInterval: -1}, nil, nil)
	require.NoError(t, err)
	e.publicURL = "https://superagent.example.com"
	e.x = e.executor(t)
	ctx := context.Background()
	tk := feishuTicket(t, e, fs, "Export <at id=all></at> the [list](https://evil.example)")
	// The requester as the webhooks record a Feishu sender: a person named
	// by the contact API. The card names them, not their open_id.
	_, err = people.New(d, nil).SeenOnFeishu(ctx, "ou_member", "Mei Lin")
	require.NoError(t, err)
	require.NoError(t, e.store.SetTicketState(ctx, d, tk.ID, tickets.TicketWorking))
	require.NoError(t, e.store.SetPullRequest(ctx, d, tk.ID, "superagent/ticket-1", 7))
	_, err = d.Exec(ctx, "UPDATE tickets SET repo = $2 WHERE id = $1", tk.ID, repo)
	require.NoError(t, err)
	_, err = e.store.AddReport(ctx, d, tickets.Report{TicketID: tk.ID, State: tickets.ReportProgress,
		Summary: "Wrote the export; <at id=all></at> **tests** next.\n\nUsage: 10 tokens"})
	require.NoError(t, err)
	for _, step := range []struct {
		name   string
		change func() error
	}{
		{"working", func() error { return nil }},
		{"paused", func() error { return e.store.Pause(ctx, d, tk.ID, "feishu:ou_member", "wrong list") }},
		{"stopped", func() error { _, err := e.store.Stop(ctx, d, tk.ID, "feishu:ou_member", ""); return err }},
	} {
		require.NoError(t, step.change(), step.name)
		require.NoError(t, e.x.SyncCard(ctx, tk.ID), step.name)
		var card fakefeishu.Message
		for _, m := range fs.Messages() {
			if m.MsgType == "interactive" {
				card = m
			}
		}
		var out bytes.Buffer
		require.NoError(t, json.Indent(&out, []byte(card.Content), "", "  "))
		out.WriteString("\n")
		golden := filepath.Join("testdata", "status_card_"+step.name+".golden")
		if *update {
			require.NoError(t, os.MkdirAll("testdata", 0o755))
			require.NoError(t, os.WriteFile(golden, out.Bytes(), 0o644))
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err, "run go test -run TestStatusCardGolden -update")
		require.Equal(t, string(want), out.String(), step.name)
	}
}
