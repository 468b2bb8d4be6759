package webhooks_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/tickets"
	"github.com/superagent-dev/superagent/webhooks"
)

// TestCardOnArrivalOnceThePermissionIsCached: the first comment of an
// author through an installation needs GitHub for the author's permission,
// so its job makes the card; the second is carded in the transaction that
// stores it, with the cached permission and no job and no call.
func TestCardOnArrivalOnceThePermissionIsCached(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d)
		const permPath = "/repos/Codertocat/Hello-World/collaborators/Codertocat/permission"
		body := throughInstallation(t, fixture(t, "issue_comment/created.payload.json"))

		first := e.send(t, e.request(t, "issue_comment", e.guid(), body))
		require.Equal(t, http.StatusAccepted, first.Status)
		require.Equal(t, webhooks.DeliveryReceived, first.State, "the answer says what the delivery is")
		require.Equal(t, webhooks.DeliveryReceived, e.delivery(t, first.Delivery).State, "left to its job")
		require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM river_job WHERE kind = 'ingest_delivery'"))
		e.work(t, first.Delivery)
		require.Equal(t, "admin", e.card(t, first.Delivery).Author.Permission)
		require.Equal(t, 1, e.fake.Count(http.MethodGet, permPath))

		second := e.send(t, e.request(t, "issue_comment", e.guid(), body))
		require.Equal(t, http.StatusAccepted, second.Status)
		require.Equal(t, webhooks.DeliveryProcessed, second.State, "the answer says the card was made")
		require.Equal(t, webhooks.DeliveryProcessed, e.delivery(t, second.Delivery).State, "processed before the acknowledgement")
		c := e.card(t, second.Delivery)
		require.Equal(t, "admin", c.Author.Permission)
		require.Equal(t, e.card(t, first.Delivery).Thread.ID, c.Thread.ID)
		require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM river_job WHERE kind = 'ingest_delivery'"), "no job for the second")
		require.Equal(t, 1, e.fake.Count(http.MethodGet, permPath), "no second call")
		require.Len(t, e.hooked, 2)
	})
}

// TestCardOnArrivalThatFailsLeavesItToTheJob: a card that cannot be made
// in the storing transaction (here a hook fails once) never costs the
// acknowledgement: the delivery is stored again on its own, with its job,
// and the job makes the card.
func TestCardOnArrivalThatFailsLeavesItToTheJob(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		var failures atomic.Int32
		failures.Store(1)
		e := setup(t, d, func(c *webhooks.Config) {
			c.Hooks = append(c.Hooks, tickets.HookFunc(func(context.Context, *db.Tx, tickets.Card) error {
				if failures.Add(-1) >= 0 {
					return errors.New("the hook is down")
				}
				return nil
			}))
		})
		a := e.send(t, e.request(t, "issues", e.guid(), fixture(t, "issues/opened.payload.json")))
		require.Equal(t, http.StatusAccepted, a.Status)
		require.Equal(t, webhooks.DeliveryReceived, e.delivery(t, a.Delivery).State)
		require.Zero(t, count(t, d, "SELECT COUNT(*) FROM cards"), "the failed card was rolled back")
		require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM river_job WHERE kind = 'ingest_delivery'"))
		require.Equal(t, 1, count(t, d, "SELECT COUNT(*) FROM deliveries"))

		e.work(t, a.Delivery)
		require.Equal(t, webhooks.DeliveryProcessed, e.delivery(t, a.Delivery).State)
		require.Equal(t, "issue_opened", e.card(t, a.Delivery).Kind)
	})
}

// TestMalformedPayloadIsLeftToTheJob: a signed payload that does not read
// is stored as received and failed by its job, as before cards were made
// on arrival.
func TestMalformedPayloadIsLeftToTheJob(t *testing.T) {
	t.Parallel()
	e := setup(t, dbtest.SQLite(t))
	a := e.send(t, e.rawRequest(t, "issues", e.guid(), []byte(`{"action": "opened", "issue": "not an object"}`)))
	require.Equal(t, http.StatusAccepted, a.Status)
	require.Equal(t, webhooks.DeliveryReceived, e.delivery(t, a.Delivery).State)
	e.work(t, a.Delivery)
	require.Equal(t, webhooks.DeliveryFailed, e.delivery(t, a.Delivery).State)
}
