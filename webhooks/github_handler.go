package webhooks

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/tickets"
)

// githubHeaders are the request headers kept with a delivery.
var githubHeaders = []string{
	"X-GitHub-Hook-ID", "X-GitHub-Hook-Installation-Target-Type", "X-GitHub-Hook-Installation-Target-ID", "User-Agent",
}

// handleGitHub receives one GitHub webhook. Order matters: nothing about
// the body is trusted, or even read whole, before its signature checks out;
// and the body is read at all only once the headers could belong to a real
// delivery, into a buffer that grows as bytes arrive (a Content-Length is a
// claim: it reserves at most claimedUpTo).
func (s *Service) handleGitHub(w http.ResponseWriter, r *http.Request) {
	s.handle(s.receiveGitHub)(w, r)
}

func (s *Service) receiveGitHub(w http.ResponseWriter, r *http.Request) error {
	cfg := s.cfg.GitHub
	if cfg.WebhookSecret == "" {
		return httpserver.Errorf(http.StatusNotFound, "GitHub webhooks are not configured")
	}
	event := r.Header.Get("X-GitHub-Event")
	if err := checkGitHubHeaders(r.Header, cfg, r.ContentLength); err != nil {
		s.metrics.count("github", event, "rejected")
		var herr *httpserver.Error
		if errors.As(err, &herr) && herr.Status == http.StatusUnauthorized {
			s.refused(&s.githubRefusals, r, "SUPERAGENT_GITHUB_WEBHOOK_SECRET", herr.Message)
		}
		return err
	}
	body, err := readBody(w, r, cfg.MaxBody)
	if err != nil {
		s.metrics.count("github", event, "rejected")
		return err
	}
	// Only the SHA-256 header counts: go-github would also take the SHA-1
	// one, and skips the check altogether when secret and header are empty
	// (both are checked above).
	if github.ValidateSignature(r.Header.Get(github.SHA256SignatureHeader), body, []byte(cfg.WebhookSecret)) != nil {
		s.metrics.count("github", event, "rejected")
		s.refused(&s.githubRefusals, r, "SUPERAGENT_GITHUB_WEBHOOK_SECRET", "signature does not match: the App's webhook secret differs")
		return httpserver.Errorf(http.StatusUnauthorized, "signature does not match")
	}
	guid := r.Header.Get("X-GitHub-Delivery")
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
	outcome := "accepted"
	var read *ghEvent
	if githubEvents[event] {
		// Read here, in the request's goroutine and outside the
		// transaction every request shares, the payload lets the card be
		// made in the transaction that stores the delivery, with no job:
		// its signature checked out, and it is read as any job reads it.
		read = s.readOnArrival(d)
	} else {
		// Kept as a record, without the body nobody will read.
		d.State, d.Error, d.Body, outcome = DeliveryIgnored, "event "+event+" is not processed", nil, "ignored"
	}
	stored, err := s.record(r.Context(), d, read)
	if err != nil {
		return err
	}
	if stored.dup {
		s.metrics.count("github", event, "duplicate")
		httpserver.WriteJSON(w, http.StatusOK, map[string]any{"status": "duplicate"})
		return nil
	}
	s.metrics.count("github", event, outcome)
	httpserver.WriteJSON(w, http.StatusAccepted, map[string]any{"status": stored.state, "delivery": stored.id})
	return nil
}

// record writes the delivery and, when it is to be processed, its job,
// in one transaction, which concurrent requests may share (see committer).
// read, when not nil, is the payload read on arrival: the card is then
// made in that same transaction when nothing it needs is outside the
// database, and no job is needed.
func (s *Service) record(ctx context.Context, d Delivery, read *ghEvent) (written, error) {
	d.pack()
	return s.commits.submit(ctx, d, read)
}

// writeDeliveries stores deliveries inside tx, processes there those read
// on arrival that it can, and enqueues one job that processes the rest
// that are new and to be processed, together. The batch costs a few
// statements, not a few per delivery: the deliveries are stored by one
// (those read on arrival already processed, corrected by one more when
// some end otherwise), and what their cards share (an
// author, a repository, a Thread, a turn to schedule) is read or written
// once (see db.Tx.Remember).
//
// Batches in flight at once on PostgreSQL must not deadlock: each stores
// its deliveries in the order of their keys (two batches holding the same
// two deliveries, sent twice at once, would otherwise each wait for the
// other's), and all of them before any card, so a batch waiting on
// another's delivery holds no row that a card of the other needs (its
// Thread).
func (s *Service) writeDeliveries(ctx context.Context, tx *db.Tx, ds []Delivery, read []*ghEvent) ([]written, error) {
	order := make([]int, len(ds))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(ds[a].Source, ds[b].Source), strings.Compare(ds[a].DedupeKey, ds[b].DedupeKey))
	})
	// A delivery read on arrival is stored processed: nearly all become
	// cards here, and the few that do not are corrected below, in this
	// transaction, which spares every batch an UPDATE of its rows.
	now := s.now()
	sorted := make([]Delivery, len(ds))
	for k, i := range order {
		sorted[k] = ds[i]
		if onArrival(ds, read, i) {
			sorted[k].State, sorted[k].processedAt = DeliveryProcessed, now
		}
	}
	// What making their cards will read travels with the statement that
	// stores them (on PostgreSQL; see db.Tx.ReadAhead).
	for i := range ds {
		if onArrival(ds, read, i) {
			s.readAhead(tx, *read[i])
		}
	}
	stored, err := insertDeliveries(ctx, tx, sorted)
	if err != nil {
		return nil, err
	}
	out := make([]written, len(ds))
	for k, i := range order {
		out[i] = stored[k]
	}
	for i, d := range ds {
		if out[i].dup {
			continue
		}
		id := out[i].id
		tx.AfterCommit(func() {
			// One line per delivery the service took on; those it keeps
			// only as a record (unknown events) are not part of the
			// work's story.
			level := slog.LevelInfo
			if d.State != DeliveryReceived {
				level = slog.LevelDebug
			}
			s.logger.Log(ctx, level, "delivery stored", "delivery", id, "source", d.Source, "event", d.Event, "state", d.State)
		})
	}
	var work []int64
	var outcomes outcomes
	for i, d := range ds {
		if out[i].dup || d.State != DeliveryReceived {
			continue
		}
		d.ID = out[i].id
		if onArrival(ds, read, i) {
			outcomes.presume(d.ID)
			done, err := s.processOnArrival(ctx, tx, d, *read[i], &outcomes)
			if err != nil {
				return nil, fmt.Errorf("processing delivery %d on arrival: %w", d.ID, err)
			}
			if !done {
				outcomes.set(d.ID, DeliveryReceived, "") // for its job
			}
			out[i].state = outcomes.stateOf(d.ID)
			if done {
				continue
			}
		}
		work = append(work, d.ID)
	}
	if err := outcomes.write(ctx, tx, s.now()); err != nil {
		return nil, err
	}
	if len(work) > 0 {
		if _, err := s.q.InsertTx(ctx, tx, processArgs(work), nil); err != nil {
			return nil, fmt.Errorf("enqueueing %d deliveries: %w", len(work), err)
		}
	}
	return out, nil
}

// onArrival reports whether ds[i] is processed by the transaction that
// stores it: it was read on arrival and is to be processed.
// readAhead has tx read ahead what processOnArrival will read to make
// ev's card: its author's name, its Thread, what the card hooks read and,
// when the card will be made at once, its id.
func (s *Service) readAhead(tx *db.Tx, ev ghEvent) {
	c := ev.Card
	if c == nil {
		return
	}
	user := c.Author.Type == tickets.AuthorUser && c.Author.Login != ""
	if s.people != nil && user {
		s.people.ReadAheadName(tx, people.KindGitHub, c.Author.Login)
	}
	s.store.ReadAheadAdmit(tx, c.Thread.Key, s.cfg.Hooks...)
	// The card gets an id now only when it is sure to be made here: its
	// author's permission is at hand (a card waiting for GitHub is made
	// by its job, under an id of its own).
	if c.Branch == "" && (!user || s.perms.Remembered(c.Owner, c.Name, c.Author.Login)) {
		s.store.ReadAheadCardID(tx)
	}
}

func onArrival(ds []Delivery, read []*ghEvent, i int) bool {
	return i < len(read) && read[i] != nil && ds[i].State == DeliveryReceived
}

// checkGitHubHeaders refuses, from the headers alone, a request that cannot
// be a delivery of this App: it is what anyone may send unauthenticated, so
// it costs nothing but the headers.
func checkGitHubHeaders(h http.Header, cfg GitHubConfig, length int64) error {
	if !token(h.Get("X-GitHub-Event"), 100, isEventByte) || !token(h.Get("X-GitHub-Delivery"), 200, isVisibleByte) {
		return httpserver.Errorf(http.StatusBadRequest, "missing or invalid X-GitHub-Event or X-GitHub-Delivery")
	}
	if length > cfg.MaxBody {
		return httpserver.Errorf(http.StatusRequestEntityTooLarge, "request body too large")
	}
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || mt != "application/json" {
		return httpserver.Errorf(http.StatusUnsupportedMediaType, "content type must be application/json (set the webhook's content type to JSON)")
	}
	sig, ok := strings.CutPrefix(h.Get(github.SHA256SignatureHeader), "sha256=")
	if !ok {
		return httpserver.Errorf(http.StatusUnauthorized, "missing X-Hub-Signature-256")
	}
	if len(sig) != 2*sha256.Size || !token(sig, 2*sha256.Size, isHexByte) {
		return httpserver.Errorf(http.StatusUnauthorized, "signature does not match")
	}
	if target := h.Get("X-GitHub-Hook-Installation-Target-ID"); target != "" && cfg.AppID != 0 && target != strconv.FormatInt(cfg.AppID, 10) {
		return httpserver.Errorf(http.StatusForbidden, "webhook is for another GitHub App")
	}
	return nil
}

// token reports whether v is 1 to max bytes, each passing ok.
func token(v string, max int, ok func(byte) bool) bool {
	if v == "" || len(v) > max {
		return false
	}
	for i := range len(v) {
		if !ok(v[i]) {
			return false
		}
	}
	return true
}

func isEventByte(c byte) bool   { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' }
func isVisibleByte(c byte) bool { return '!' <= c && c <= '~' }
func isHexByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// claimedUpTo bounds what a request's Content-Length reserves before its
// bytes arrive: most payloads fit, and a claim of more buys an unsigned
// sender no more memory than this.
const claimedUpTo = 32 << 10

// readBody reads at most limit bytes into a buffer that grows as they
// arrive, starting at the size the request claims up to claimedUpTo (read
// from 512 bytes up, a 12 KB payload would be copied through nine buffers
// adding up to four times its size). Its errors carry their status: 413
// past the limit, 408 when the body does not arrive within the server's
// deadline.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), min(max(r.ContentLength, 0), claimedUpTo, limit))
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return body, nil
	case errors.As(err, &tooBig):
		return nil, httpserver.Errorf(http.StatusRequestEntityTooLarge, "request body too large")
	case httpserver.IsTimeout(err):
		return nil, &httpserver.Error{Status: http.StatusRequestTimeout, Message: "request body not received in time", Err: err}
	}
	return nil, &httpserver.Error{Status: http.StatusBadRequest, Message: "reading request body failed", Err: err}
}

// readAll is io.ReadAll into a buffer of size bytes to begin with (one
// more, so that a body of exactly that size ends without growing it).
func readAll(rd io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, max(size+1, 512))
	for {
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

func (s *Service) handle(fn httpserver.HandlerFunc) http.HandlerFunc {
	return httpserver.HandleWith(s.logger, fn)
}
