package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/webhooks"
)

// A real issue_comment delivery (octokit/webhooks, MIT; see testdata).
//
//go:embed testdata/issue_comment.created.json
var issueComment []byte

const benchSecret = "bench-webhook-secret"

// ingest posts signed GitHub deliveries to the real webhook handler over
// loopback HTTP: verify, store the delivery and enqueue its job in one
// transaction, answer 202. Workers are not running, so the figure is the
// acknowledgement path GitHub waits on.
func ingest(ctx context.Context, d *db.DB, n, concurrency int) (result, error) {
	q := queue.New(d, queue.Config{InsertOnly: true, ID: "bench-ingest"})
	svc, err := webhooks.New(webhooks.Config{GitHub: webhooks.GitHubConfig{WebhookSecret: benchSecret, Slug: "superagent-bench"}}, d, q, nil, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return result{}, err
	}
	if err := q.Init(); err != nil {
		return result{}, err
	}
	r := chi.NewRouter()
	svc.Routes(r)
	srv := httptest.NewServer(r)
	defer srv.Close()

	mac := hmac.New(sha256.New, []byte(benchSecret))
	mac.Write(issueComment)
	signature := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	defer client.CloseIdleConnections()

	return measure(n, concurrency, func(i int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/webhooks/github", bytes.NewReader(issueComment))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "GitHub-Hookshot/bench")
		req.Header.Set("X-GitHub-Event", "issue_comment")
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("bench-%08d", i))
		req.Header.Set("X-Hub-Signature-256", signature)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("delivery %d answered %d", i, resp.StatusCode)
		}
		return nil
	})
}
