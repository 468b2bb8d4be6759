package webhooks_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	"github.com/superagent-dev/superagent/webhooks"
)

// BenchmarkGitHubDelivery measures the acknowledged path: verify, store the
// delivery and enqueue its job in one transaction (in-process, no network).
func BenchmarkGitHubDelivery(b *testing.B) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		b.Run(dialect, func(b *testing.B) {
			var d *db.DB
			if dialect == "sqlite" {
				d = dbtest.SQLite(b)
			} else {
				d = dbtest.Postgres(b)
			}
			q := queue.New(d, queue.Config{InsertOnly: true})
			svc, err := webhooks.New(webhooks.Config{GitHub: webhooks.GitHubConfig{WebhookSecret: secret, Slug: "superagent"}}, d, q, nil, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := q.Init(); err != nil {
				b.Fatal(err)
			}
			r := chi.NewRouter()
			svc.Routes(r)
			b.Run("river-insert-baseline", func(b *testing.B) {
				ctx := context.Background()
				b.SetParallelism(4)
				var seq atomic.Int64
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := q.Insert(ctx, webhooks.ProcessArgs{DeliveryID: seq.Add(1)}, nil); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			body := fixture(b, "issue_comment/created.payload.json")
			sig := fakegithub.SignWebhook(secret, body)
			var seq atomic.Int64
			b.Run("delivery", func(b *testing.B) {
				b.SetParallelism(4)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						req := httptest.NewRequest(http.MethodPost, "/webhooks/github", bytes.NewReader(body))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("X-GitHub-Event", "issue_comment")
						req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("bench-%d", seq.Add(1)))
						req.Header.Set("X-Hub-Signature-256", sig)
						rec := httptest.NewRecorder()
						r.ServeHTTP(rec, req)
						if rec.Code != http.StatusAccepted {
							b.Fatalf("status %d: %s", rec.Code, rec.Body)
						}
					}
				})
			})
		})
	}
}
