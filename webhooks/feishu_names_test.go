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
	fakefeishu "github.com/superagent-dev/superagent/internal/testkit/feishu"
	"github.com/superagent-dev/superagent/tickets"
	"github.com/superagent-dev/superagent/webhooks"
)

// A Feishu sender's display name comes from the contact API, is kept for a
// day, and a failed lookup leaves the card with the open_id alone.
func TestFeishuSenderNames(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setupFeishu(t, d)
		// age makes the stored lookup as old as ago.
		age := func(ago time.Duration) {
			t.Helper()
			_, err := d.Exec(context.Background(), `UPDATE feishu_users SET fetched_at = $1`, time.Now().UTC().Add(-ago))
			require.NoError(t, err)
		}
		const sender = "ou_0f1e2d3c4b5a69788796a5b4c3d2e1f0"
		lookups := func() int { return len(e.fake.RequestsTo(http.MethodGet, "/open-apis/contact/v3/users/")) }
		var seq int
		message := func() tickets.Card {
			t.Helper()
			seq++
			id := fmt.Sprintf("om_name%027d", seq)
			plain := patch(t, larkFixture(t, "im.message.receive_v1.p2p.json"), func(m map[string]any) {
				obj(m, "header")["event_id"] = fmt.Sprintf("ev_name_%d", seq)
				obj(m, "event", "message")["message_id"] = id
			})
			got := e.deliverLark(t, plain, "message:"+id)
			require.Equal(t, webhooks.DeliveryProcessed, got.State, got.Error)
			return e.card(t, got.ID)
		}

		// Unknown to the contact API (outside the app's range): the card
		// is stored with the open_id only, and the model sees no name.
		c := message()
		require.Equal(t, sender, c.Author.ID)
		require.Empty(t, c.Author.Name)
		require.Contains(t, tickets.Render(c), "author: (no name) (user, id "+sender)
		require.Equal(t, 1, lookups())
		e.fake.AddUser(fakefeishu.User{OpenID: sender, Name: "Zhang San", EnName: "San Zhang"})
		message()
		require.Equal(t, 1, lookups(), "a failure is retried after a while, not on every message")

		age(11 * time.Minute)
		c = message()
		require.Equal(t, "Zhang San", c.Author.Name)
		require.Contains(t, tickets.Render(c), `author: "Zhang San" (user, id `+sender)
		q := e.fake.RequestsTo(http.MethodGet, "/open-apis/contact/v3/users/")
		require.Equal(t, "/open-apis/contact/v3/users/"+sender, q[len(q)-1].Path)
		require.Equal(t, "open_id", q[len(q)-1].Query.Get("user_id_type"))

		// Cached for a day, then read again; a failed refresh keeps the name.
		e.fake.AddUser(fakefeishu.User{OpenID: sender, Name: "Zhang San (new)"})
		age(23 * time.Hour)
		require.Equal(t, "Zhang San", message().Author.Name)
		require.Equal(t, 2, lookups())
		age(25 * time.Hour)
		require.Equal(t, "Zhang San (new)", message().Author.Name)
		require.Equal(t, 3, lookups())
		age(25 * time.Hour)
		e.fake.Fail(http.MethodGet, "/open-apis/contact/v3/users/", 1, fakefeishu.Failure{HTTPStatus: 500, Code: 1, Msg: "boom"})
		require.Equal(t, "Zhang San (new)", message().Author.Name)
	})
}
