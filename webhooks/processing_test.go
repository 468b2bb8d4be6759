package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/tickets"
	"github.com/superagent-dev/superagent/webhooks"
)

var botUser = webhookUser("superagent[bot]", 99, "Bot")

// webhookUser is a user as GitHub's payloads carry one, every field of it
// (an issues fixture's sender, renamed), so that patched payloads still
// match GitHub's schema.
func webhookUser(login string, id float64, typ string) map[string]any {
	b, err := os.ReadFile("testdata/github/issues/opened.payload.json")
	if err != nil {
		panic(err)
	}
	var m struct {
		Sender map[string]any `json:"sender"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	u := m.Sender
	for k, v := range u {
		if s, ok := v.(string); ok {
			u[k] = strings.ReplaceAll(s, "Codertocat", login)
		}
	}
	u["login"], u["id"], u["type"], u["node_id"] = login, id, typ, fmt.Sprintf("U_%d", int64(id))
	return u
}

func TestAddressing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d)
		ctx := context.Background()

		t.Run("mention", func(t *testing.T) {
			body := patch(t, fixture(t, "issue_comment/created.payload.json"), func(m map[string]any) {
				obj(m, "comment")["body"] = "@superagent please fix #3 and octo/other#9, see https://github.com/Codertocat/Hello-World/pull/2"
			})
			c := e.card(t, e.deliver(t, "issue_comment", body))
			require.True(t, c.Addressed)
			require.Equal(t, "mention", c.AddressedWhy)
			require.Equal(t, []tickets.Reference{
				{Repo: "Codertocat/Hello-World", Number: 2},
				{Repo: "Codertocat/Hello-World", Number: 3},
				{Repo: "octo/other", Number: 9},
			}, c.References)
		})
		t.Run("quoted or code mentions do not address", func(t *testing.T) {
			body := patch(t, fixture(t, "issue_comment/created.payload.json"), func(m map[string]any) {
				obj(m, "comment")["body"] = "> @superagent said so\n`@superagent` and me@superagent.dev and @superagent-fan"
			})
			c := e.card(t, e.deliver(t, "issue_comment", body))
			require.False(t, c.Addressed)
		})
		t.Run("comment on a pull request", func(t *testing.T) {
			body := patch(t, fixture(t, "issue_comment/created.payload.json"), func(m map[string]any) {
				obj(m, "issue")["pull_request"] = map[string]any{"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"}
				obj(m, "comment")["body"] = "@SuperAgent[bot] rebase please"
			})
			c := e.card(t, e.deliver(t, "issue_comment", body))
			require.Equal(t, "comment", c.Kind)
			require.Equal(t, hello+"#1", c.Thread.Key)
			require.Equal(t, "mention", c.AddressedWhy)
		})
		t.Run("assignment", func(t *testing.T) {
			body := patch(t, fixture(t, "issues/assigned.payload.json"), func(m map[string]any) { m["assignee"] = botUser })
			c := e.card(t, e.deliver(t, "issues", body))
			require.Equal(t, "assigned", c.Kind)
			require.Equal(t, "assignment", c.AddressedWhy)
			require.Contains(t, c.Text, "Spelling error")
		})
		t.Run("review request", func(t *testing.T) {
			body := patch(t, fixture(t, "pull_request/review_requested.payload.json"), func(m map[string]any) { m["requested_reviewer"] = botUser })
			c := e.card(t, e.deliver(t, "pull_request", body))
			require.Equal(t, "review_requested", c.Kind)
			require.Equal(t, "review_request", c.AddressedWhy)
			require.Equal(t, "changes", c.Thread.HeadRef)
		})
		t.Run("reply where the bot spoke", func(t *testing.T) {
			body := patch(t, fixture(t, "pull_request_review_comment/created.payload.json"), func(m map[string]any) {
				obj(m, "comment")["id"] = float64(555)
				obj(m, "comment")["in_reply_to_id"] = float64(284312630)
			})
			key := hello + "#2/review-thread/284312630"
			_, err := e.store.UpsertThread(ctx, d, tickets.Thread{Source: tickets.SourceGitHub, Key: key, Repo: "Codertocat/Hello-World", Number: 2, BotSpoke: true})
			require.NoError(t, err)
			c := e.card(t, e.deliver(t, "pull_request_review_comment", body))
			require.Equal(t, key, c.Thread.Key)
			require.True(t, c.Addressed)
			require.Equal(t, "reply", c.AddressedWhy)
		})
		t.Run("the bot's own events are dropped", func(t *testing.T) {
			body := patch(t, fixture(t, "issue_comment/created.payload.json"), func(m map[string]any) {
				m["sender"] = botUser
				obj(m, "comment")["user"] = botUser
			})
			id := e.deliver(t, "issue_comment", body)
			got := e.delivery(t, id)
			require.Equal(t, webhooks.DeliveryIgnored, got.State)
			require.Contains(t, got.Error, "bot")
		})
		t.Run("other bots make bot cards", func(t *testing.T) {
			other := webhookUser("dependabot[bot]", 49699333, "Bot")
			body := patch(t, fixture(t, "issue_comment/created.payload.json"), func(m map[string]any) {
				m["sender"] = other
				obj(m, "comment")["user"] = other
			})
			c := e.card(t, e.deliver(t, "issue_comment", body))
			require.Equal(t, tickets.AuthorBot, c.Author.Type)
			require.Empty(t, c.Author.Permission)
		})
	})
}

func TestFollowUpsAndBranches(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d)
		ctx := context.Background()

		// Pull request #2 (head "changes") becomes known, then a Ticket
		// follows it.
		pr := e.card(t, e.deliver(t, "pull_request", fixture(t, "pull_request/opened.payload.json")))
		require.Equal(t, "changes", pr.Thread.HeadRef)
		require.Equal(t, tickets.CardCandidate, pr.State)

		push := func() []byte {
			return patch(t, fixture(t, "push/with-new-branch.payload.json"), func(m map[string]any) { m["ref"] = "refs/heads/changes" })
		}
		id := e.deliver(t, "push", push())
		require.Equal(t, webhooks.DeliveryIgnored, e.delivery(t, id).State, "an untracked branch does not matter")

		var ticket tickets.Ticket
		require.NoError(t, d.InTx(ctx, func(tx *db.Tx) (err error) {
			if ticket, err = e.store.CreateTicket(ctx, tx, tickets.Ticket{Title: "fix README", Repo: "Codertocat/Hello-World"}); err != nil {
				return err
			}
			return e.store.Subscribe(ctx, tx, ticket.ID, pr.Thread.ID)
		}))

		c := e.card(t, e.deliver(t, "push", push()))
		require.Equal(t, "push", c.Kind)
		require.Equal(t, hello+"#2", c.Thread.Key, "a push to a pull request's branch joins its Thread")
		require.Equal(t, tickets.CardFollowUp, c.State)
		require.Equal(t, ticket.ID, c.TicketID)

		comment := patch(t, fixture(t, "issue_comment/created.payload.json"), func(m map[string]any) { obj(m, "issue")["number"] = float64(2) })
		c = e.card(t, e.deliver(t, "issue_comment", comment))
		require.Equal(t, tickets.CardFollowUp, c.State)
		notices, err := e.store.PendingNotices(ctx, d, 10)
		require.NoError(t, err)
		require.Len(t, notices, 2)
		require.Equal(t, c.ID, notices[1].CardID)

		// A failed check on the pull request follows up too.
		failed := patch(t, fixture(t, "check_run/completed.payload.json"), func(m map[string]any) {
			obj(m, "check_run")["conclusion"] = "failure"
		})
		c = e.card(t, e.deliver(t, "check_run", failed))
		require.Equal(t, "check_failure", c.Kind)
		require.Equal(t, hello+"#2", c.Thread.Key)
		require.Equal(t, tickets.CardFollowUp, c.State)
		require.Contains(t, c.Text, "Octocoders-linter: failure")

		// A failed workflow on the default branch is a candidate, even when
		// the bot's own push started it.
		wf := patch(t, fixture(t, "workflow_run/completed.payload.json"), func(m map[string]any) {
			obj(m, "workflow_run")["conclusion"] = "failure"
			m["sender"] = botUser
		})
		c = e.card(t, e.deliver(t, "workflow_run", wf))
		require.Equal(t, "check_failure", c.Kind)
		require.Equal(t, tickets.Author{Login: "github-actions", Type: tickets.AuthorBot}, c.Author)
		require.Equal(t, "github:octo-org/octo-repo@master", c.Thread.Key)
		require.Equal(t, tickets.CardCandidate, c.State)

		// Hooks saw every card, inside its transaction.
		require.Len(t, e.hooked, 5)
	})
}

func TestTruncationAndCardsAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, func(c *webhooks.Config) { c.TextLimit = 100 })
		long := strings.Repeat("long text ", 50)
		body := patch(t, fixture(t, "issue_comment/created.payload.json"), func(m map[string]any) { obj(m, "comment")["body"] = long })
		first := e.card(t, e.deliver(t, "issue_comment", body))
		require.True(t, first.Truncated)
		require.Len(t, first.Text, 100)
		second := e.card(t, e.deliver(t, "issues", fixture(t, "issues/opened.payload.json")))

		get := func(path string) (*http.Response, []byte) {
			resp, err := http.Get(e.srv.URL + path)
			require.NoError(t, err)
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp, raw
		}
		resp, raw := get("/api/cards")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var cards []map[string]any
		require.NoError(t, json.Unmarshal(raw, &cards))
		require.Len(t, cards, 2)
		require.Equal(t, float64(second.ID), cards[0]["id"])
		for _, k := range []string{"id", "source", "kind", "thread", "addressed", "author", "text", "state", "ticket"} {
			require.Contains(t, cards[0], k)
		}
		require.Equal(t, "candidate", cards[0]["state"])
		require.Nil(t, cards[0]["ticket"])
		require.Equal(t, hello+"#1", cards[0]["thread"])
		require.Equal(t, first.TextPointer(), cards[1]["full_text"])

		resp, raw = get("/api/cards?limit=1")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NoError(t, json.Unmarshal(raw, &cards))
		require.Len(t, cards, 1)
		for _, bad := range []string{"0", "-1", "501", "abc", "1.5"} {
			resp, _ = get("/api/cards?limit=" + bad)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, bad)
		}

		resp, raw = get("/api/cards/" + jsonID(first.ID) + "/text")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, long, string(raw))
		resp, raw = get("/api/cards/" + jsonID(first.ID))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, string(raw), "rendered")
		resp, _ = get("/api/cards/99999")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		resp, _ = get("/api/cards/x/text")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	})
}

func jsonID(id int64) string { b, _ := json.Marshal(id); return string(b) }

// TestThroughTheQueue runs the real River client: a posted delivery is
// worked by the queue and becomes a card.
func TestThroughTheQueue(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d)
		q := queue.New(d, queue.Config{FetchPollInterval: 50 * time.Millisecond, FetchCooldown: 10 * time.Millisecond})
		svc, err := webhooks.New(webhooks.Config{GitHub: webhooks.GitHubConfig{WebhookSecret: secret, Slug: "superagent"}}, d, q, nil, nil, nil)
		require.NoError(t, err)
		require.NoError(t, q.Init())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		require.NoError(t, q.Start(ctx))
		t.Cleanup(func() {
			stopCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
			defer stop()
			_ = q.Stop(stopCtx)
		})
		_ = svc
		// e's insert-only queue enqueues; q's workers pick the job up.
		a := e.send(t, e.request(t, "issues", e.guid(), fixture(t, "issues/opened.payload.json")))
		require.Equal(t, http.StatusAccepted, a.Status)
		deadline := time.Now().Add(20 * time.Second)
		for {
			c, err := e.store.CardByDelivery(ctx, d, a.Delivery)
			if err == nil {
				require.Equal(t, "issue_opened", c.Kind)
				require.Equal(t, "unknown", c.Author.Permission) // that service has no GitHub client
				break
			}
			require.ErrorIs(t, err, tickets.ErrNotFound)
			require.True(t, time.Now().Before(deadline), "delivery was not processed in time")
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

// TestPermissionFailures retries the job while GitHub cannot say the
// author's permission, and makes the card with "unknown" on the last try.
func TestPermissionFailures(t *testing.T) {
	t.Parallel()
	e := setup(t, dbtest.SQLite(t))
	path := "/repos/Codertocat/Hello-World/collaborators/Codertocat/permission"
	broken := fakegithub.Fault{Status: http.StatusBadGateway, Body: `{"message":"Server Error"}`}
	e.fake.FailNext(http.MethodGet, path, broken, broken, broken)
	a := e.send(t, e.request(t, "pull_request", e.guid(), fixture(t, "pull_request/opened.payload.json")))
	require.Equal(t, http.StatusAccepted, a.Status)
	ctx := context.Background()
	for attempt := 1; attempt <= 2; attempt++ {
		job := &river.Job[webhooks.ProcessArgs]{JobRow: &rivertype.JobRow{Attempt: attempt}, Args: webhooks.ProcessArgs{DeliveryID: a.Delivery}}
		require.Error(t, e.svc.Worker().Work(ctx, job))
		require.Equal(t, webhooks.DeliveryReceived, e.delivery(t, a.Delivery).State)
	}
	job := &river.Job[webhooks.ProcessArgs]{JobRow: &rivertype.JobRow{Attempt: 3}, Args: webhooks.ProcessArgs{DeliveryID: a.Delivery}}
	require.NoError(t, e.svc.Worker().Work(ctx, job))
	require.Equal(t, "unknown", e.card(t, a.Delivery).Author.Permission)
}

// TestBatchKeepsOneDeliveryFromHoldingBackTheOthers works a job naming two
// deliveries, as a group commit stores them, while GitHub cannot say the
// first one's author permission: the second is carded at once, the first
// waits for the job's retry, and the retry leaves the second alone.
func TestBatchKeepsOneDeliveryFromHoldingBackTheOthers(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d)
		path := "/repos/Codertocat/Hello-World/collaborators/Codertocat/permission"
		e.fake.FailNext(http.MethodGet, path, fakegithub.Fault{Status: http.StatusBadGateway, Body: `{"message":"Server Error"}`})
		first := e.send(t, e.request(t, "pull_request", e.guid(), fixture(t, "pull_request/opened.payload.json")))
		second := e.send(t, e.request(t, "issues", e.guid(), fixture(t, "issues/opened.payload.json")))
		require.Equal(t, http.StatusAccepted, first.Status)
		require.Equal(t, http.StatusAccepted, second.Status)

		ctx := context.Background()
		batch := webhooks.ProcessArgs{DeliveryIDs: []int64{first.Delivery, second.Delivery}}
		job := &river.Job[webhooks.ProcessArgs]{JobRow: &rivertype.JobRow{Attempt: 1}, Args: batch}
		require.Error(t, e.svc.Worker().Work(ctx, job), "the job is retried for the delivery it could not finish")
		require.Equal(t, webhooks.DeliveryReceived, e.delivery(t, first.Delivery).State)
		require.Equal(t, webhooks.DeliveryProcessed, e.delivery(t, second.Delivery).State)
		made := e.card(t, second.Delivery)

		job = &river.Job[webhooks.ProcessArgs]{JobRow: &rivertype.JobRow{Attempt: 2}, Args: batch}
		require.NoError(t, e.svc.Worker().Work(ctx, job))
		require.Equal(t, webhooks.DeliveryProcessed, e.delivery(t, first.Delivery).State)
		require.Equal(t, "pr_opened", e.card(t, first.Delivery).Kind)
		require.Equal(t, made.ID, e.card(t, second.Delivery).ID, "the second delivery's card is not made twice")
		require.Equal(t, 2, count(t, d, "SELECT COUNT(*) FROM cards"))
	})
}
