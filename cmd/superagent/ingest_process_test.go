package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
)

// TestKilledDuringBurstEveryAcknowledgedDeliveryHasOneCard sends a burst of
// signed deliveries, kills the server partway with SIGKILL, restarts it and
// resends what was not acknowledged: every delivery that got a 2xx ends with
// exactly one card, and nothing else is lost or doubled.
func TestKilledDuringBurstEveryAcknowledgedDeliveryHasOneCard(t *testing.T) {
	t.Parallel()
	payload, err := os.ReadFile(filepath.Join("testdata", "issue_comment.created.json"))
	require.NoError(t, err)
	fakegithub.CheckWebhook(t, "issue_comment", payload)
	const secret = "burst-test-webhook-secret"
	signature := fakegithub.SignWebhook(secret, payload)

	databases(t, func(t *testing.T, url string) {
		env := map[string]string{
			"SUPERAGENT_DATABASE_URL":          url,
			"SUPERAGENT_DATA_DIR":              t.TempDir(),
			"SUPERAGENT_GITHUB_WEBHOOK_SECRET": secret,
			"SUPERAGENT_GITHUB_APP_SLUG":       "superagent-test",
			"SUPERAGENT_JOB_RESCUE_AFTER":      "5s",
		}
		env["SUPERAGENT_ADDR"] = freeAddr(t)
		first := start(t, "serve", env, "serve")
		first.waitHTTP("/readyz", 30*time.Second)

		const total = 400
		var mu sync.Mutex
		acked := map[string]bool{}
		post := func(addr, guid string) int {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+addr+"/webhooks/github", bytes.NewReader(payload))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "issue_comment")
			req.Header.Set("X-GitHub-Delivery", guid)
			req.Header.Set("X-Hub-Signature-256", signature)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return 0
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return resp.StatusCode
		}
		send := func(addr string, guids []string) {
			var wg sync.WaitGroup
			work := make(chan string)
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for guid := range work {
						if code := post(addr, guid); code >= 200 && code < 300 {
							mu.Lock()
							acked[guid] = true
							mu.Unlock()
						}
					}
				}()
			}
			for _, g := range guids {
				work <- g
			}
			close(work)
			wg.Wait()
		}
		guids := make([]string, total)
		for i := range guids {
			guids[i] = fmt.Sprintf("burst-%04d", i)
		}

		// Kill the server once about a third of the burst is acknowledged,
		// while the rest is still being sent.
		killed := make(chan struct{})
		go func() {
			defer close(killed)
			waitFor(t, time.Minute, "a third of the burst to be acknowledged", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(acked) >= total/3
			})
			_ = first.cmd.Process.Signal(syscall.SIGKILL)
		}()
		send(first.addr, guids)
		<-killed
		<-first.done
		mu.Lock()
		ackedBefore := len(acked)
		mu.Unlock()
		require.Less(t, ackedBefore, total, "the kill must land inside the burst")

		env["SUPERAGENT_ADDR"] = freeAddr(t)
		second := start(t, "serve-again", env, "serve")
		second.waitHTTP("/readyz", 30*time.Second)
		// GitHub redelivers what was not acknowledged; redeliver everything,
		// acknowledged or not, to show that duplicates add nothing.
		send(second.addr, guids)
		require.Len(t, acked, total)

		d, err := db.Open(context.Background(), url, db.Options{MaxConns: 2})
		require.NoError(t, err)
		defer d.Close()
		ctx := context.Background()
		waitFor(t, 4*time.Minute, "every delivery to be processed", func() bool {
			var pending int
			require.NoError(t, d.QueryRow(ctx, "SELECT count(*) FROM deliveries WHERE state = 'received'").Scan(&pending))
			return pending == 0
		})
		var deliveries, cards, distinct int
		require.NoError(t, d.QueryRow(ctx, "SELECT count(*) FROM deliveries WHERE source = 'github'").Scan(&deliveries))
		require.NoError(t, d.QueryRow(ctx, `SELECT count(*), count(DISTINCT d.dedupe_key) FROM cards c JOIN deliveries d ON d.id = c.delivery_id`).Scan(&cards, &distinct))
		require.Equal(t, total, deliveries, "one delivery row per GUID")
		require.Equal(t, total, cards, "one card per acknowledged delivery")
		require.Equal(t, total, distinct)
		t.Logf("%d of %d deliveries acknowledged before the kill; all %d have exactly one card", ackedBefore, total, total)

		code, _ := second.stop(shutdownWithin)
		require.Equal(t, 0, code)
	})
}
