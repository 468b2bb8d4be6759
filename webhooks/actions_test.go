package webhooks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	"github.com/superagent-dev/superagent/webhooks"
)

// The actions webhooks acts on that no fixture shows, built from
// neighbouring fixtures as GitHub's schema describes them, are processed.
func TestActionsWithoutAFixture(t *testing.T) {
	t.Parallel()
	e := setup(t, dbtest.SQLite(t))
	for _, tc := range []struct {
		name, event, fixture string
		patch                func(m map[string]any)
	}{
		{"issues.closed", "issues", "issues/reopened.payload.json", func(m map[string]any) {
			m["action"] = "closed"
			obj(m, "issue")["state"] = "closed"
			obj(m, "issue")["closed_at"] = "2019-05-15T15:21:03Z"
		}},
		{"pull_request.edited", "pull_request", "pull_request/opened.payload.json", func(m map[string]any) {
			m["action"] = "edited"
			m["changes"] = map[string]any{"title": map[string]any{"from": "Update the README"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := e.deliver(t, tc.event, patch(t, fixture(t, tc.fixture), tc.patch))
			require.Equal(t, webhooks.DeliveryProcessed, e.delivery(t, id).State)
		})
	}
}
