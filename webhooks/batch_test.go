package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/tickets"
	"github.com/superagent-dev/superagent/webhooks"
)

// steadyHook changes no Ticket, and says so, as the orchestrator does for
// a comment that is no command.
type steadyHook struct{}

func (steadyHook) CardAdmitted(context.Context, *db.Tx, tickets.Card) error { return nil }

func (steadyHook) MayChangeTickets(tickets.Card) bool { return false }

// TestBatchCostsFewStatements: a batch of comments by one person on one
// issue, stored together, reads the author's permission and name, records
// the repository and upserts the Thread once, and stores the deliveries
// and their new states with one statement each, so each card beyond the
// first costs two statements (its followers and its row), not eight; one
// when the card hooks say they change no Ticket, so the followers read
// with the first card stand. On PostgreSQL what making the cards reads
// travels with the statement that stores the deliveries, and their rows
// with the COMMIT.
func TestBatchCostsFewStatements(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d)
		body := throughInstallation(t, fixture(t, "issue_comment/created.payload.json"))
		// The first comment caches the author's permission through its job.
		first := e.send(t, e.request(t, "issue_comment", e.guid(), body))
		require.Equal(t, http.StatusAccepted, first.Status)
		e.work(t, first.Delivery)

		steady := setup(t, d, func(c *webhooks.Config) { c.Hooks = []tickets.Hook{steadyHook{}} })
		keys := 0
		batchOn := func(on *env, n int) (ids []int64, statements int64) {
			ds := make([]webhooks.Delivery, n)
			for i := range ds {
				keys++
				ds[i] = webhooks.Delivery{Source: "github", DedupeKey: fmt.Sprintf("batch-%d", keys), Event: "issue_comment", Headers: map[string]string{},
					Body: body, ReceivedAt: time.Now().UTC(), State: webhooks.DeliveryReceived}
			}
			before := d.Statements()
			ids, err := on.svc.StoreTogether(ctx, ds)
			require.NoError(t, err)
			return ids, d.Statements() - before
		}
		batch := func(n int) ([]int64, int64) { return batchOn(e, n) }
		one, alone := batch(1)
		const n = 20
		many, together := batch(n)
		t.Logf("one delivery: %d statements; %d together: %d", alone, n, together)
		require.LessOrEqual(t, together, alone+2*(n-1))
		if d.Dialect() == db.Postgres {
			require.Equal(t, int64(2), alone)
		}

		batchOn(steady, 1) // reads the cached permission into its memory
		steadyOne, steadyAlone := batchOn(steady, 1)
		steadyMany, steadyTogether := batchOn(steady, n)
		t.Logf("with steady hooks, one delivery: %d statements; %d together: %d", steadyAlone, n, steadyTogether)
		if d.Dialect() == db.Postgres {
			// What the cards read goes with the deliveries' row, their
			// rows with the COMMIT: two round trips, however many cards.
			require.Equal(t, int64(2), steadyAlone)
			require.Equal(t, steadyAlone, steadyTogether, "the cards' rows travel with the COMMIT")
		} else {
			require.Equal(t, steadyAlone+n-1, steadyTogether, "each card beyond the first costs its row alone")
		}
		one, many = append(one, steadyOne...), append(many, steadyMany...)

		for _, id := range append(one, many...) {
			require.Equal(t, webhooks.DeliveryProcessed, e.delivery(t, id).State)
			c := e.card(t, id)
			require.Equal(t, "admin", c.Author.Permission)
			require.Equal(t, e.card(t, first.Delivery).Thread.ID, c.Thread.ID)
		}
		require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM river_job WHERE kind = 'ingest_delivery'"), "only the first needed a job")
		// The first, made by its job, took no id it did not use: the ids
		// have no gap.
		require.Equal(t, count(t, d, "SELECT COUNT(*) FROM cards"), count(t, d, "SELECT MAX(id) - MIN(id) + 1 FROM cards"))
		require.Equal(t, 1, count(t, d, "SELECT MIN(id) FROM cards"))
	})
}

// TestBatchWithARedelivery: a batch that holds a delivery twice, and one
// stored before, stores each key once and makes one card for each.
func TestBatchWithARedelivery(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d)
		body := fixture(t, "issues/opened.payload.json")
		mk := func(key string) webhooks.Delivery {
			return webhooks.Delivery{Source: "github", DedupeKey: key, Event: "issues", Headers: map[string]string{"User-Agent": "GitHub-Hookshot/test"},
				Body: body, ReceivedAt: time.Now().UTC(), State: webhooks.DeliveryReceived}
		}
		before, err := e.svc.StoreTogether(ctx, []webhooks.Delivery{mk("seen")})
		require.NoError(t, err)
		ids, err := e.svc.StoreTogether(ctx, []webhooks.Delivery{mk("b"), mk("seen"), mk("a"), mk("b")})
		require.NoError(t, err)
		require.NotZero(t, ids[0])
		require.Zero(t, ids[1], "stored before")
		require.NotZero(t, ids[2])
		require.Zero(t, ids[3], "the second of two in one batch")
		require.NotEqual(t, ids[0], ids[2])
		require.Equal(t, 3, count(t, d, "SELECT COUNT(*) FROM deliveries"))
		require.Equal(t, 3, count(t, d, "SELECT COUNT(*) FROM cards"))
		for _, id := range []int64{before[0], ids[0], ids[2]} {
			got := e.delivery(t, id)
			require.Equal(t, webhooks.DeliveryProcessed, got.State)
			require.Equal(t, body, got.Body)
			require.Equal(t, "GitHub-Hookshot/test", got.Headers["User-Agent"])
		}
	})
}

// A batch stores what it reads on arrival as processed, and corrects, in
// the same transaction, each delivery that ends otherwise: ignored with
// its reason, or received again for the job that asks GitHub.
func TestBatchCorrectsPresumedOutcomes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d)
		mk := func(event, path string, body []byte) webhooks.Delivery {
			if body == nil {
				body = fixture(t, path)
			}
			return webhooks.Delivery{Source: "github", DedupeKey: e.guid(), Event: event, Headers: map[string]string{},
				Body: body, ReceivedAt: time.Now().UTC(), State: webhooks.DeliveryReceived}
		}
		ids, err := e.svc.StoreTogether(ctx, []webhooks.Delivery{
			mk("issues", "issues/opened.payload.json", nil),
			mk("issue_comment", "issue_comment/deleted.payload.json", nil),
			mk("issue_comment", "", throughInstallation(t, fixture(t, "issue_comment/created.payload.json"))),
			mk("installation_repositories", "installation_repositories/added.payload.json", nil),
		})
		require.NoError(t, err)
		type row struct {
			state, reason string
			processed     bool
		}
		read := func(id int64) row {
			var r row
			require.NoError(t, d.QueryRow(ctx, "SELECT state, error, processed_at IS NOT NULL FROM deliveries WHERE id = $1", id).Scan(&r.state, &r.reason, &r.processed))
			return r
		}
		require.Equal(t, row{webhooks.DeliveryProcessed, "", true}, read(ids[0]), "a card made")
		ignored := read(ids[1])
		require.Equal(t, webhooks.DeliveryIgnored, ignored.state)
		require.NotEmpty(t, ignored.reason)
		require.True(t, ignored.processed)
		require.Equal(t, row{webhooks.DeliveryReceived, "", false}, read(ids[2]), "the author's permission is to be asked: back to received")
		require.Equal(t, row{webhooks.DeliveryProcessed, "", true}, read(ids[3]), "an installation change applied")
		require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM cards"))
		require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM river_job WHERE kind = 'ingest_delivery'"))

		// The job takes the one left received, as it would have before.
		e.work(t, ids[2])
		require.Equal(t, webhooks.DeliveryProcessed, read(ids[2]).state)
		require.Equal(t, 2, count(t, d, "SELECT COUNT(*) FROM cards"))
	})
}
