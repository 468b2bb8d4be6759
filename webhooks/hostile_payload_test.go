package webhooks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/webhooks"
)

// A signed payload that is valid JSON of the right event but lacks the
// object the event is about fails its delivery once, with a reason, instead
// of panicking the worker (which River would retry ten times while the
// delivery stays "received").
func TestSignedPayloadsWithoutTheirObject(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d)
		cases := []struct {
			name, event, fixture, field, reason string
		}{
			{"issues.opened without issue", "issues", "issues/opened.payload.json", "issue", "issues.opened payload has no issue"},
			{"pull_request.opened without pull_request", "pull_request", "pull_request/opened.payload.json", "pull_request", "pull_request.opened payload has no pull_request"},
			{"issues.opened with a null issue", "issues", "issues/opened.payload.json", "issue", "issues.opened payload has no issue"},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				body := patch(t, fixture(t, c.fixture), func(m map[string]any) {
					if i == 2 {
						m[c.field] = nil
						return
					}
					delete(m, c.field)
				})
				id := e.deliverHostile(t, c.event, body) // works the job: it must return, not panic
				got := e.delivery(t, id)
				require.Equal(t, webhooks.DeliveryFailed, got.State)
				require.Contains(t, got.Error, c.reason)
				e.work(t, id) // a retried job changes nothing
				require.Equal(t, webhooks.DeliveryFailed, e.delivery(t, id).State)
			})
		}
		require.Zero(t, count(t, d, "SELECT COUNT(*) FROM cards"))
	})
}
