package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/jobs"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/tickets"
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
func ingest(ctx context.Context, d *db.DB, n, concurrency int, prefix string, inline bool) (result, error) {
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

	statements := d.Statements()
	res, _, err := load(ctx, inline, srv.URL, prefix, n, concurrency, 1)
	res.statements = d.Statements() - statements
	return res, err
}

// carded is the whole service's figure: the same signed deliveries posted
// while the process's own workers turn them into cards, as deployed. The
// service is wired as cmd/superagent wires it for this work: a GitHub App
// client (whose cached answer for the author's permission is fresh, as it
// is after the author's first comment, so the fake GitHub behind it is
// never called), people to name authors, and the card hook scheduling the
// main Session's turn (the turn itself is a no-op here, and the Waker takes
// the main Session to be busy, as it is under load: a turn waits its
// debounce, and the batches behind it find it waiting). The rate counts a
// delivery once it is acknowledged and processed; the latencies are the
// acknowledgements'.
func carded(ctx context.Context, d *db.DB, n, concurrency, issues int, inline bool) (result, error) {
	// Whatever the earlier measurements left is not this one's work.
	for _, stmt := range []string{"DELETE FROM river_job", "DELETE FROM follow_up_notices", "DELETE FROM cards", "DELETE FROM deliveries", "DELETE FROM github_permissions"} {
		if _, err := d.Exec(ctx, stmt); err != nil {
			return result{}, err
		}
	}
	if _, err := d.Exec(ctx, "INSERT INTO github_permissions (repo, login, permission, fetched_at) VALUES ('codertocat/hello-world', 'codertocat', 'admin', $1)", time.Now().UTC()); err != nil {
		return result{}, err
	}
	github, calls := unreachableGitHub()
	defer github.Close()
	gh, err := githubClient(github.URL)
	if err != nil {
		return result{}, err
	}
	q := queue.New(d, queue.Config{ID: "bench-service"})
	// A turn stands here for the real one's debounce: it holds the
	// routing queue's one slot for 2 s, so what arrives meanwhile waits
	// in the one job queued behind it, as with the main Session.
	queue.AddWorker(q, river.WorkFunc(func(ctx context.Context, _ *river.Job[jobs.RouteArgs]) error {
		t := time.NewTimer(2 * time.Second)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		return nil
	}))
	svc, err := webhooks.New(webhooks.Config{GitHub: webhooks.GitHubConfig{WebhookSecret: benchSecret, Slug: "superagent-bench"}}, d, q, gh, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return result{}, err
	}
	svc.UsePeople(people.New(d, nil))
	waker := &jobs.Waker{Queue: q}
	svc.AddHook(turnHook{waker})
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

	statements := d.Statements()
	acks, begin, err := load(ctx, inline, srv.URL, fmt.Sprint("carded-", issues), n, concurrency, issues)
	if err != nil {
		return result{}, err
	}
	for {
		// The jobs, not the deliveries, are counted: a delivery row is
		// mostly its body, and scanning them would be a load of its own.
		var left int
		if err := d.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'ingest_delivery' AND state NOT IN ('completed', 'cancelled', 'discarded')").Scan(&left); err != nil {
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
	acks.statements = d.Statements() - statements
	var ingestJobs, cards int
	_ = d.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'ingest_delivery'").Scan(&ingestJobs)
	_ = d.QueryRow(ctx, "SELECT count(*) FROM cards").Scan(&cards)
	if cards != n {
		return result{}, fmt.Errorf("%d deliveries made %d cards", n, cards)
	}
	if c := calls.Load(); c > 0 {
		return result{}, fmt.Errorf("the service called GitHub %d times; the permission was cached", c)
	}
	if ingestJobs > 0 {
		// A card that needed GitHub, or failed on arrival: the figure is
		// then not the path it names.
		fmt.Printf("    (%d of %d deliveries went to an ingestion job)\n", ingestJobs, n)
	}
	return acks, nil
}

// turnHook is the part of the orchestrator's card hook a comment that is
// no command takes: it schedules the main Session's turn, and has that
// read ahead.
type turnHook struct{ w *jobs.Waker }

func (h turnHook) CardAdmitted(ctx context.Context, tx *db.Tx, _ tickets.Card) error {
	return h.w.ScheduleTurn(ctx, tx)
}

func (h turnHook) ReadAhead(tx *db.Tx) { h.w.ReadAheadTurn(tx) }

// MayChangeTickets is false: scheduling a turn changes no Ticket.
func (turnHook) MayChangeTickets(tickets.Card) bool { return false }

// unreachableGitHub is a GitHub that answers every call with 503 and
// counts them: the measured path is not to call it.
func unreachableGitHub() (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, "the benchmark's GitHub is not to be called", http.StatusServiceUnavailable)
	})), &calls
}

// githubClient is a GitHub App client of a key made for the run.
func githubClient(url string) (*githubapp.Client, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return githubapp.New(githubapp.Config{AppID: 1, PrivateKey: pemKey, BaseURL: url})
}

// post sends n signed issue_comment deliveries from concurrency clients to
// the service at url, each with its own delivery id, spread over the
// given number of issues (1: all on the same one, whose Thread every card
// then updates).
func post(ctx context.Context, url, prefix string, n, concurrency, issues int) (result, error) {
	bodies, signatures := make([][]byte, issues), make([]string, issues)
	for k := range issues {
		// As GitHub sends it to an App: through its installation.
		var payload map[string]any
		if err := json.Unmarshal(issueComment, &payload); err != nil {
			return result{}, err
		}
		payload["installation"] = map[string]any{"id": 1, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
		payload["issue"].(map[string]any)["number"] = k + 1
		body, err := json.MarshalIndent(payload, "", "  ")
		if err != nil {
			return result{}, err
		}
		mac := hmac.New(sha256.New, []byte(benchSecret))
		mac.Write(body)
		bodies[k], signatures[k] = body, "sha256="+hex.EncodeToString(mac.Sum(nil))
	}
	// One keep-alive connection per client, each request written and its
	// response read in the client's own goroutine, so a client is one
	// goroutine and not http.Client's three (measured against it on
	// 2026-12-04, the figures did not move beyond their noise).
	host := strings.TrimPrefix(url, "http://")
	conns := make(chan *clientConn, concurrency)
	defer func() {
		close(conns)
		for c := range conns {
			_ = c.conn.Close()
		}
	}()
	for range concurrency {
		var dialer net.Dialer
		conn, err := dialer.DialContext(ctx, "tcp", host)
		if err != nil {
			return result{}, err
		}
		conns <- &clientConn{conn: conn, r: bufio.NewReader(conn), w: bufio.NewWriter(conn)}
	}
	return measure(n, concurrency, func(i int) error {
		c := <-conns
		defer func() { conns <- c }()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/webhooks/github", bytes.NewReader(bodies[i%issues]))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "GitHub-Hookshot/bench")
		req.Header.Set("X-GitHub-Event", "issue_comment")
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("%s-%08d", prefix, i))
		req.Header.Set("X-Hub-Signature-256", signatures[i%issues])
		if err := req.Write(c.w); err != nil {
			return err
		}
		if err := c.w.Flush(); err != nil {
			return err
		}
		resp, err := http.ReadResponse(c.r, req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("delivery %d answered %d", i, resp.StatusCode)
		}
		if resp.Close {
			return fmt.Errorf("delivery %d: the service closed the connection", i)
		}
		return nil
	})
}

// clientConn is one load-generating client's connection.
type clientConn struct {
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
}
