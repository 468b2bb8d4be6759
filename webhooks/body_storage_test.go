package webhooks_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/internal/testkit/seed"
	"github.com/superagent-dev/superagent/webhooks"
)

// A payload is stored compressed, a fraction of its size, and the job that
// reads it back gets the bytes GitHub signed; a body stored as received
// (an earlier release's row) reads as before.
func TestBodiesStoredCompressed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := setup(t, d)
		body := throughInstallation(t, fixture(t, "issue_comment/created.payload.json"))
		a := e.send(t, e.request(t, "issue_comment", e.guid(), body))
		require.Equal(t, http.StatusAccepted, a.Status)

		var encoding string
		var size int
		require.NoError(t, d.QueryRow(ctx, "SELECT body_encoding, length(body) FROM deliveries WHERE id = $1", a.Delivery).Scan(&encoding, &size))
		require.Equal(t, "s2", encoding)
		require.Less(t, size, len(body)/3, "a %d-byte payload stored in %d", len(body), size)
		require.Equal(t, body, e.delivery(t, a.Delivery).Body)
		if d.Dialect() == db.Postgres {
			// Kept in its row, not moved to the TOAST table.
			var toasted int64
			require.NoError(t, d.QueryRow(ctx, "SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'deliveries'::regclass").Scan(&toasted))
			require.Zero(t, toasted)
		}
		e.work(t, a.Delivery)
		require.Equal(t, webhooks.DeliveryProcessed, e.delivery(t, a.Delivery).State)
		require.Contains(t, e.card(t, a.Delivery).Text, "You are totally right!")

		// As an earlier release stored it.
		plain := throughInstallation(t, patch(t, fixture(t, "issue_comment/created.payload.json"), func(m map[string]any) {
			obj(m, "comment")["body"] = "stored before bodies were compressed"
		}))
		old := seed.ReceivedDelivery(t, d, "stored-plain", "issue_comment", plain)
		require.Equal(t, plain, e.delivery(t, old).Body)
		e.work(t, old)
		require.Contains(t, e.card(t, old).Text, "stored before bodies were compressed")
	})
}

// A compressed body that no longer decompresses fails its job with an
// error that names the delivery, and is never read as a payload.
func TestDamagedBodyNamed(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	ctx := context.Background()
	e := setup(t, d)
	a := e.send(t, e.request(t, "issue_comment", e.guid(), throughInstallation(t, fixture(t, "issue_comment/created.payload.json"))))
	require.Equal(t, http.StatusAccepted, a.Status)
	var stored []byte
	require.NoError(t, d.QueryRow(ctx, "SELECT body FROM deliveries WHERE id = $1", a.Delivery).Scan(&stored))
	damaged := bytes.Clone(stored)
	damaged[len(damaged)/2] ^= 0xff
	_, err := d.Exec(ctx, "UPDATE deliveries SET body = $1 WHERE id = $2", damaged, a.Delivery)
	require.NoError(t, err)

	job := &river.Job[webhooks.ProcessArgs]{JobRow: &rivertype.JobRow{Attempt: 1}, Args: webhooks.ProcessArgs{DeliveryID: a.Delivery}}
	err = e.svc.Worker().Work(ctx, job)
	require.ErrorContains(t, err, "delivery")
	require.ErrorContains(t, err, "decompressing")
	require.Zero(t, count(t, d, "SELECT COUNT(*) FROM cards"))
}
