// Package modelhealth records what each role's model (the main Session's,
// the Executors') last answered and last failed with, so that a model that
// refuses is seen where people look: the overview's Model connection and
// the cards it holds up, in the panel and in GET /api/cards. Each role has
// one row in model_health; a failure's text is scrubbed of every secret
// the process knows before it is stored or logged.
package modelhealth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/queue"
	"github.com/superagent-dev/superagent/internal/secret"
)

// The roles whose models are watched.
const (
	Main     = "main"
	Executor = "executor"
)

// Status is a role's model as last seen by any process.
type Status struct {
	Role  string `json:"role"`
	Model string `json:"model"`
	// LastOK and LastFailure are the latest answer and failure; zero
	// when none was seen. FailingSince is the first failure after the
	// last answer, zero while the model answers.
	LastOK       time.Time `json:"last_ok,omitzero"`
	LastFailure  time.Time `json:"last_failure,omitzero"`
	FailingSince time.Time `json:"failing_since,omitzero"`
	// Error is the latest failure's text, scrubbed.
	Error string `json:"error,omitempty"`
}

// Failing reports whether the latest news of the model is a failure.
func (s Status) Failing() bool {
	return !s.LastFailure.IsZero() && s.LastFailure.After(s.LastOK)
}

// Read returns the role's status; a zero Status (with its Role) when
// nothing was recorded.
func Read(ctx context.Context, q db.Querier, role string) (Status, error) {
	st := Status{Role: role}
	var ok, failed, since sql.NullTime
	err := q.QueryRow(ctx, `SELECT model, last_ok_at, last_failure_at, failing_since, error FROM model_health WHERE role = $1`, role).
		Scan(&st.Model, &ok, &failed, &since, &st.Error)
	if errors.Is(err, db.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading the health of the %s model: %w", role, err)
	}
	st.LastOK, st.LastFailure, st.FailingSince = utc(ok), utc(failed), utc(since)
	if !st.Failing() {
		st.FailingSince = time.Time{}
	}
	return st, nil
}

func utc(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// errorLimit bounds a stored failure: a provider's error may carry a
// whole response body.
const errorLimit = 500

// Watch records one role's model requests. Its Observe is the model
// client's hook (model.Config.Observe), told of every attempt.
type Watch struct {
	d      *db.DB
	role   string
	model  string
	scrub  *secret.Scrubber
	logger *slog.Logger
	now    func() time.Time

	mu sync.Mutex
	// failing is what this process last saw: a failure since its last
	// answer. okWritten is when it last recorded an answer.
	failing   bool
	okWritten time.Time
}

// okEvery is how often a healthy model's answers are recorded: each
// process writes at most one row a while, not one per request.
const okEvery = 30 * time.Second

// NewWatch watches role's model (named model) for the process: failures
// are stored scrubbed by scrub and logged to logger. now is the clock
// (nil: time.Now).
func NewWatch(d *db.DB, role, model string, scrub *secret.Scrubber, logger *slog.Logger, now func() time.Time) *Watch {
	if now == nil {
		now = time.Now
	}
	if scrub == nil {
		scrub = secret.New()
	}
	return &Watch{d: d, role: role, model: model, scrub: scrub, logger: logger, now: now}
}

// Observe records an attempt's outcome: err nil for an answer. The first
// failure after an answer (or since the process started) is a WARN line
// at once, with the ids of the job the request was made for, rather than
// after the client's retries; an answer after failures an INFO line. It
// never fails the request: a failure to record is logged.
func (w *Watch) Observe(ctx context.Context, err error) {
	now := w.now().UTC()
	w.mu.Lock()
	wasFailing := w.failing
	w.failing = err != nil
	writeOK := err == nil && (wasFailing || now.Sub(w.okWritten) >= okEvery)
	if writeOK {
		w.okWritten = now
	}
	w.mu.Unlock()
	// The write is the attempt's, whatever becomes of its context.
	ctx = context.WithoutCancel(ctx)
	if err == nil {
		if wasFailing {
			w.logger.Info("model answering again", append(queue.Attrs(ctx), "role", w.role, "model", w.model)...)
		}
		if writeOK {
			w.write(ctx, `INSERT INTO model_health (role, model, last_ok_at) VALUES ($1, $2, $3)
ON CONFLICT (role) DO UPDATE SET model = $2, last_ok_at = $3, failing_since = NULL`, now, "")
		}
		return
	}
	reason := w.scrub.Scrub(err.Error())
	if len(reason) > errorLimit {
		reason = reason[:errorLimit] + "…"
	}
	if !wasFailing {
		w.logger.Warn("model request failed", append(queue.Attrs(ctx), "role", w.role, "model", w.model, "error", reason)...)
	}
	w.write(ctx, `INSERT INTO model_health (role, model, last_failure_at, failing_since, error) VALUES ($1, $2, $3, $3, $4)
ON CONFLICT (role) DO UPDATE SET model = $2, last_failure_at = $3, error = $4,
    failing_since = CASE WHEN model_health.failing_since IS NULL OR model_health.failing_since < model_health.last_ok_at
        THEN $3 ELSE model_health.failing_since END`, now, reason)
}

func (w *Watch) write(ctx context.Context, query string, now time.Time, reason string) {
	args := []any{w.role, w.model, now}
	if reason != "" {
		args = append(args, reason)
	}
	if _, err := w.d.Exec(ctx, query, args...); err != nil {
		w.logger.Error("recording the health of a model", "role", w.role, "model", w.model, "error", err)
	}
}
