package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

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
// loopback HTTP: verify, read the payload, store the delivery with its card
// (or, when the card needs GitHub, its job) in one transaction, answer 202.
// Workers are not running, so the figure is the acknowledgement path
// GitHub waits on.
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

	return post(ctx, srv.URL, "bench", n, concurrency, 1)
}

// carded is the whole service's figure: the same signed deliveries posted
// while the process's own workers turn them into cards, as deployed. The
// rate counts a delivery once it is acknowledged and processed; the
// latencies are the acknowledgements'.
func carded(ctx context.Context, d *db.DB, n, concurrency, issues int) (result, error) {
	// Whatever the earlier measurements left is not this one's work.
	for _, stmt := range []string{"DELETE FROM river_job", "DELETE FROM follow_up_notices", "DELETE FROM cards", "DELETE FROM deliveries"} {
		if _, err := d.Exec(ctx, stmt); err != nil {
			return result{}, err
		}
	}
	q := queue.New(d, queue.Config{ID: "bench-service"})
	svc, err := webhooks.New(webhooks.Config{GitHub: webhooks.GitHubConfig{WebhookSecret: benchSecret, Slug: "superagent-bench"}}, d, q, nil, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return result{}, err
	}
	if err := q.Init(); err != nil {
		return result{}, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if err := q.Start(runCtx); err != nil {
		return result{}, err
	}
	defer func() { _ = q.Stop(context.WithoutCancel(ctx)) }()
	r := chi.NewRouter()
	svc.Routes(r)
	srv := httptest.NewServer(r)
	defer srv.Close()

	begin := time.Now()
	acks, err := post(ctx, srv.URL, fmt.Sprint("carded-", issues), n, concurrency, issues)
	if err != nil {
		return result{}, err
	}
	for {
		// The jobs, not the deliveries, are counted: a delivery row is
		// mostly its body, and scanning them would be a load of its own.
		var left int
		if err := d.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'cancelled', 'discarded')").Scan(&left); err != nil {
			return result{}, err
		}
		if left == 0 {
			break
		}
		if time.Since(begin) > 10*time.Minute {
			return result{}, fmt.Errorf("%d deliveries still not processed after 10 minutes", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	acks.elapsed = time.Since(begin)
	var jobs int
	_ = d.QueryRow(ctx, "SELECT count(*) FROM river_job").Scan(&jobs)
	fmt.Printf("    (%d deliveries in %d jobs)\n", n, jobs)
	return acks, nil
}

// post sends n signed issue_comment deliveries from concurrency clients to
// the service at url, each with its own delivery id, spread over the
// given number of issues (1: all on the same one, whose Thread every card
// then updates).
func post(ctx context.Context, url, prefix string, n, concurrency, issues int) (result, error) {
	bodies, signatures := make([][]byte, issues), make([]string, issues)
	for k := range issues {
		body := issueComment
		if k > 0 {
			var payload map[string]any
			if err := json.Unmarshal(issueComment, &payload); err != nil {
				return result{}, err
			}
			payload["issue"].(map[string]any)["number"] = k + 1
			var err error
			if body, err = json.Marshal(payload); err != nil {
				return result{}, err
			}
		}
		mac := hmac.New(sha256.New, []byte(benchSecret))
		mac.Write(body)
		bodies[k], signatures[k] = body, "sha256="+hex.EncodeToString(mac.Sum(nil))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	defer client.CloseIdleConnections()

	return measure(n, concurrency, func(i int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/webhooks/github", bytes.NewReader(bodies[i%issues]))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "GitHub-Hookshot/bench")
		req.Header.Set("X-GitHub-Event", "issue_comment")
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("%s-%08d", prefix, i))
		req.Header.Set("X-Hub-Signature-256", signatures[i%issues])
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
