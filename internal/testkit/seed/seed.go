// Package seed writes the rows tests need as background: an installation of
// the GitHub App, a delivery for a card to point at. Their owners store them
// from webhooks and offer no API to write them directly, so the SQL lives
// here, once, and a change to those tables changes this file and no test.
package seed

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// Installation records id as an active installation of the GitHub App
// covering repos (owner/name), as the installation webhooks leave it: the
// account is the first repository's owner, and each repository gets an id
// of its own.
func Installation(t testing.TB, q db.Querier, id int64, repos ...string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	account := "octo"
	if len(repos) > 0 {
		account, _, _ = strings.Cut(repos[0], "/")
	}
	if _, err := q.Exec(ctx, `INSERT INTO github_installations (id, account_login, account_id, account_type, state, updated_at)
VALUES ($1, $2, $1, 'Organization', 'active', $3)`, id, account, now); err != nil {
		t.Fatalf("seeding installation %d: %v", id, err)
	}
	for i, repo := range repos {
		if _, err := q.Exec(ctx, `INSERT INTO github_repositories (id, installation_id, full_name, private, active, updated_at)
VALUES ($1, $2, $3, FALSE, TRUE, $4)`, id*1000+int64(i)+1, id, repo, now); err != nil {
			t.Fatalf("seeding repository %s: %v", repo, err)
		}
	}
}

// Delivery stores a processed GitHub issue_comment delivery with key as its
// dedupe key and returns its id: what a card admitted from GitHub points at.
func Delivery(t testing.TB, q db.Querier, key string) int64 {
	t.Helper()
	return delivery(t, q, "github", key, "issue_comment", []byte("{}"))
}

// FeishuDelivery stores a processed Feishu message event carrying body and
// returns its id.
func FeishuDelivery(t testing.TB, q db.Querier, key string, body []byte) int64 {
	t.Helper()
	return delivery(t, q, "feishu", key, "im.message.receive_v1", body)
}

func delivery(t testing.TB, q db.Querier, source, key, event string, body []byte) int64 {
	t.Helper()
	var id int64
	err := q.QueryRow(context.Background(), `INSERT INTO deliveries (source, dedupe_key, event, body, received_at, state)
VALUES ($1, $2, $3, $4, $5, 'processed') RETURNING id`, source, key, event, body, time.Now().UTC()).Scan(&id)
	if err != nil {
		t.Fatalf("seeding %s delivery %q: %v", source, key, err)
	}
	return id
}

// ReceivedDelivery stores a GitHub delivery of event carrying body as
// received and not yet processed, with the body uncompressed, as releases
// before compressed bodies stored every payload; it returns its id.
func ReceivedDelivery(t testing.TB, q db.Querier, key, event string, body []byte) int64 {
	t.Helper()
	var id int64
	err := q.QueryRow(context.Background(), `INSERT INTO deliveries (source, dedupe_key, event, headers, body, received_at, state)
VALUES ('github', $1, $2, '{}', $3, $4, 'received') RETURNING id`, key, event, body, time.Now().UTC()).Scan(&id)
	if err != nil {
		t.Fatalf("seeding received delivery %q: %v", key, err)
	}
	return id
}

// RoutingLease has holder hold the main Session's routing lease until
// until, its turn due at turnDue when that is not zero: what a routing
// turn running in some process leaves in routing_state.
func RoutingLease(t testing.TB, q db.Querier, holder string, until, turnDue time.Time) {
	t.Helper()
	var due any
	if !turnDue.IsZero() {
		due = turnDue.UTC()
	}
	if _, err := q.Exec(context.Background(), `INSERT INTO routing_state (name, holder, lease_until, turn_due) VALUES ('main', $1, $2, $3)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until, turn_due = excluded.turn_due`,
		holder, until.UTC(), due); err != nil {
		t.Fatalf("seeding the routing lease of %s: %v", holder, err)
	}
}

// ModelFailing records that role's model has failed since since, last
// with errText at lastFailure, after its last success at lastOK: what the
// model health tracker writes when a model's calls keep failing.
func ModelFailing(t testing.TB, q db.Querier, role, model string, lastOK, lastFailure, since time.Time, errText string) {
	t.Helper()
	if _, err := q.Exec(context.Background(), `INSERT INTO model_health (role, model, last_ok_at, last_failure_at, failing_since, error)
VALUES ($1, $2, $3, $4, $5, $6)`, role, model, lastOK.UTC(), lastFailure.UTC(), since.UTC(), errText); err != nil {
		t.Fatalf("seeding the health of %s's model: %v", role, err)
	}
}

// AdminSession stores a signed-in admin panel session whose cookie hashes
// to id, of person (nil for a session opened with the admin token), valid
// for an hour.
func AdminSession(t testing.TB, q db.Querier, id string, person *int64) {
	t.Helper()
	now := time.Now().UTC()
	if _, err := q.Exec(context.Background(), `INSERT INTO admin_sessions (id_sha256, actor, csrf_token, created_at, expires_at, person_id, role)
VALUES ($1, $1, 'csrf', $2, $3, $4, 'admin')`, id, now, now.Add(time.Hour), person); err != nil {
		t.Fatalf("seeding admin session %s: %v", id, err)
	}
}

// WaitingJob enqueues a River job of kind on queue, available now, with
// empty arguments: work a process would pick up if it had a worker for it.
func WaitingJob(t testing.TB, q db.Querier, kind, queue string) {
	t.Helper()
	if _, err := q.Exec(context.Background(), `INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at, priority)
VALUES ('{}', $1, 25, $2, 'available', CURRENT_TIMESTAMP, 1)`, kind, queue); err != nil {
		t.Fatalf("seeding a %s job: %v", kind, err)
	}
}
