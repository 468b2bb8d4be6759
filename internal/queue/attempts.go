package queue

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/superagent-dev/superagent/internal/retry"
)

// attempts is the middleware around every job this process works. It
// says each failure where an operator looks, whatever River's own log
// level: a failed attempt is one WARN line with the job's ids, a job
// given up one ERROR line. River itself reports them at INFO, which the
// service keeps at DEBUG. It also ends the job's waits between attempts
// when the process stops, and puts a job so interrupted back to run again
// rather than count the interruption as a failure.
type attempts struct {
	river.MiddlewareDefaults
	q *Queue
}

var _ rivertype.WorkerMiddleware = (*attempts)(nil)

// errorLimit bounds the error text of a failure line: a provider's error
// may carry a whole response body.
const errorLimit = 1000

func (m *attempts) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	n := &notes{attrs: jobAttrs(job)}
	ctx = context.WithValue(retry.WithStop(ctx, m.q.stopping), notesKey{}, n)
	err := doInner(ctx)
	if err == nil {
		return nil
	}
	var snooze *rivertype.JobSnoozeError
	if errors.As(err, &snooze) {
		return err
	}
	attrs := append(n.list(), "error", truncate(err.Error(), errorLimit))
	var cancel *rivertype.JobCancelError
	switch {
	case errors.Is(err, retry.ErrStopping) && m.q.isStopping():
		m.q.log.Info("job interrupted by the shutdown while waiting to try again; it runs again", attrs...)
		return river.JobSnooze(0)
	case errors.As(err, &cancel):
		m.q.log.Error("job given up", attrs...)
	case job.Attempt >= job.MaxAttempts:
		m.q.log.Error("job given up: its last attempt failed", attrs...)
	default:
		m.q.log.Warn("job attempt failed; it is tried again later", attrs...)
	}
	return err
}

// jobAttrs are the log attributes that name a job: its id, kind, queue
// and attempt, and the Ticket or deliveries its arguments name.
func jobAttrs(job *rivertype.JobRow) []any {
	attrs := []any{"job", job.ID, "kind", job.Kind, "queue", job.Queue, "attempt", job.Attempt, "max_attempts", job.MaxAttempts}
	var ids struct {
		TicketID    int64   `json:"ticket_id"`
		DeliveryID  int64   `json:"delivery_id"`
		DeliveryIDs []int64 `json:"delivery_ids"`
	}
	if json.Unmarshal(job.EncodedArgs, &ids) != nil {
		return attrs
	}
	if ids.TicketID != 0 {
		attrs = append(attrs, "ticket", ids.TicketID)
	}
	if ids.DeliveryID != 0 {
		attrs = append(attrs, "delivery", ids.DeliveryID)
	}
	if len(ids.DeliveryIDs) > 0 {
		attrs = append(attrs, "deliveries", ids.DeliveryIDs)
	}
	return attrs
}

func (q *Queue) isStopping() bool {
	select {
	case <-q.stopping:
		return true
	default:
		return false
	}
}

// notes are what a running job has said about itself for its log lines.
type notes struct {
	mu    sync.Mutex
	attrs []any
}

type notesKey struct{}

func (n *notes) list() []any {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]any(nil), n.attrs...)
}

// Note adds key and value to what the log lines about the running job
// name (a failed attempt's WARN, Attrs): ids learned while it works, such
// as the cards a turn was given. A later note of the same key replaces
// the earlier. Outside a job it does nothing.
func Note(ctx context.Context, key string, value any) {
	n, _ := ctx.Value(notesKey{}).(*notes)
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := 0; i+1 < len(n.attrs); i += 2 {
		if n.attrs[i] == key {
			n.attrs[i+1] = value
			return
		}
	}
	n.attrs = append(n.attrs, key, value)
}

// Attrs are the log attributes of the job ctx belongs to (job, kind,
// queue, attempt, the ids its arguments name, and its notes), for a line
// written on its behalf further down; none outside a job.
func Attrs(ctx context.Context) []any {
	n, _ := ctx.Value(notesKey{}).(*notes)
	if n == nil {
		return nil
	}
	return n.list()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
