package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
)

// githubHeaders are the request headers kept with a delivery.
var githubHeaders = []string{
	"X-GitHub-Hook-ID", "X-GitHub-Hook-Installation-Target-Type", "X-GitHub-Hook-Installation-Target-ID", "User-Agent",
}

// handleGitHub receives one GitHub webhook. Order matters: nothing about
// the body is trusted, or even read whole, before its signature checks out.
func (s *Service) handleGitHub(w http.ResponseWriter, r *http.Request) {
	s.handle(s.receiveGitHub)(w, r)
}

func (s *Service) receiveGitHub(w http.ResponseWriter, r *http.Request) error {
	cfg := s.cfg.GitHub
	if cfg.WebhookSecret == "" {
		return httpserver.Errorf(http.StatusNotFound, "GitHub webhooks are not configured")
	}
	event := r.Header.Get("X-GitHub-Event")
	if r.ContentLength > cfg.MaxBody {
		s.metrics.count("github", event, "rejected")
		return httpserver.Errorf(http.StatusRequestEntityTooLarge, "request body too large")
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		s.metrics.count("github", event, "rejected")
		return httpserver.Errorf(http.StatusUnsupportedMediaType, "content type must be application/json (set the webhook's content type to JSON)")
	}
	// Only the SHA-256 header counts: go-github would also take the SHA-1
	// one, and skips the check altogether when secret and header are empty
	// (the secret is checked above).
	sig := r.Header.Get(github.SHA256SignatureHeader)
	if !strings.HasPrefix(sig, "sha256=") {
		s.metrics.count("github", event, "rejected")
		return httpserver.Errorf(http.StatusUnauthorized, "missing X-Hub-Signature-256")
	}
	body, err := readBody(w, r, cfg.MaxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.metrics.count("github", event, "rejected")
			return httpserver.Errorf(http.StatusRequestEntityTooLarge, "request body too large")
		}
		return &httpserver.Error{Status: http.StatusBadRequest, Message: "reading request body failed", Err: err}
	}
	if github.ValidateSignature(sig, body, []byte(cfg.WebhookSecret)) != nil {
		s.metrics.count("github", event, "rejected")
		return httpserver.Errorf(http.StatusUnauthorized, "signature does not match")
	}
	if target := r.Header.Get("X-GitHub-Hook-Installation-Target-ID"); target != "" && cfg.AppID != 0 && target != strconv.FormatInt(cfg.AppID, 10) {
		s.metrics.count("github", event, "rejected")
		return httpserver.Errorf(http.StatusForbidden, "webhook is for another GitHub App")
	}
	guid := r.Header.Get("X-GitHub-Delivery")
	if event == "" || guid == "" || len(guid) > 200 || len(event) > 100 {
		s.metrics.count("github", event, "rejected")
		return httpserver.Errorf(http.StatusBadRequest, "missing or invalid X-GitHub-Event or X-GitHub-Delivery")
	}
	if event == "ping" {
		s.metrics.count("github", event, "accepted")
		httpserver.WriteJSON(w, http.StatusOK, map[string]string{"status": "pong"})
		return nil
	}

	d := Delivery{
		Source: "github", DedupeKey: guid, Event: event, Headers: map[string]string{},
		Body: body, ReceivedAt: s.now(), State: DeliveryReceived,
	}
	for _, h := range githubHeaders {
		if v := r.Header.Get(h); v != "" {
			d.Headers[h] = v
		}
	}
	// The body is not parsed here, not even validated: that is the job's
	// work (a malformed payload is recorded failed there), and this path
	// must stay as short as a plain insert.
	outcome := "accepted"
	if !githubEvents[event] {
		// Kept as a record, without the body nobody will read.
		d.State, d.Error, d.Body, outcome = DeliveryIgnored, "event "+event+" is not processed", nil, "ignored"
	}
	id, dup, err := s.record(r.Context(), d)
	if err != nil {
		return err
	}
	if dup {
		s.metrics.count("github", event, "duplicate")
		httpserver.WriteJSON(w, http.StatusOK, map[string]any{"status": "duplicate"})
		return nil
	}
	s.metrics.count("github", event, outcome)
	httpserver.WriteJSON(w, http.StatusAccepted, map[string]any{"status": d.State, "delivery": id})
	return nil
}

// record writes the delivery and, when it is to be processed, its job,
// in one transaction, which concurrent requests may share (see committer).
func (s *Service) record(ctx context.Context, d Delivery) (id int64, dup bool, err error) {
	id, dup, err = s.commits.submit(ctx, d)
	if err == nil && !dup {
		// One line per delivery the service took on; those it keeps only
		// as a record (unknown events) are not part of the work's story.
		level := slog.LevelInfo
		if d.State != DeliveryReceived {
			level = slog.LevelDebug
		}
		s.logger.Log(ctx, level, "delivery stored", "delivery", id, "source", d.Source, "event", d.Event, "state", d.State)
	}
	return id, dup, err
}

// writeDeliveries stores deliveries inside tx and enqueues, with one
// statement, a processing job for each one that is new and to be processed.
func (s *Service) writeDeliveries(ctx context.Context, tx *db.Tx, ds []Delivery) ([]written, error) {
	out := make([]written, len(ds))
	jobs := make([]river.InsertManyParams, 0, len(ds))
	for i, d := range ds {
		id, dup, err := insertDelivery(ctx, tx, d)
		if err != nil {
			return nil, err
		}
		out[i] = written{id: id, dup: dup}
		if !dup && d.State == DeliveryReceived {
			jobs = append(jobs, river.InsertManyParams{Args: ProcessArgs{DeliveryID: id}})
		}
	}
	if len(jobs) > 0 {
		if _, err := s.q.InsertManyTx(ctx, tx, jobs); err != nil {
			return nil, fmt.Errorf("enqueueing %d deliveries: %w", len(jobs), err)
		}
	}
	return out, nil
}

// readBody reads at most limit bytes, sized by Content-Length when sent.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), limit)+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	return buf.Bytes(), err
}

func (s *Service) handle(fn httpserver.HandlerFunc) http.HandlerFunc {
	return httpserver.HandleWith(s.logger, fn)
}
