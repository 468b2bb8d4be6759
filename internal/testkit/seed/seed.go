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
