package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
)

// FaultError ends a Run whose model kept answering unusably (a
// model.Fault) after the runtime asked again in place Config.FaultRetries
// times. The Session stays active: the next Run asks again.
type FaultError struct {
	SessionID int64
	Model     string
	// Kind is the last answer's model.Fault kind.
	Kind string
	// Attempts counts the requests made for the step.
	Attempts int
	// Detail is the model's refusal text, cut short, for a refusal.
	Detail string
}

// Error says what the model kept doing, in words for a person.
func (e *FaultError) Error() string {
	what := map[string]string{
		model.FaultNoChoices: "answered without any choice (no message at all)",
		model.FaultRefusal:   "refused to answer",
		model.FaultTruncated: "answered past the output limit, so every answer was cut (finish_reason length)",
		model.FaultEmpty:     "answered with neither text nor a tool call",
	}[e.Kind]
	if what == "" {
		what = "answered unusably (" + e.Kind + ")"
	}
	msg := fmt.Sprintf("model %s %s %d times in a row in session %d", e.Model, what, e.Attempts, e.SessionID)
	if e.Detail != "" {
		msg += fmt.Sprintf(": %q", e.Detail)
	}
	return msg
}

// faultFinish begins the finish reason recorded for a request whose answer
// was unusable and asked for again; the fault's kind follows the colon.
const faultFinish = "retried:"

// FaultKind is the fault of a recorded request whose answer was asked
// for again (its FinishReason is "retried:<kind>"), or "".
func FaultKind(finishReason string) string {
	k, ok := strings.CutPrefix(finishReason, faultFinish)
	if !ok {
		return ""
	}
	return k
}

// maxFaultBackoff caps the wait between two requests for the same step.
const maxFaultBackoff = 30 * time.Second

// answerOf asks the model for the next step, asking again in place while
// its answer is unusable: each unusable answer is recorded as a request
// (its tokens count; its finish reason "retried:<kind>") without a message, and the next waits Config.
// FaultBackoff, doubling up to 30 s. An empty answer is taken as the end
// of the turn when acceptEmpty says nothing is left undone, or once the
// retries are used up; any other fault that persists ends with a
// *FaultError.
func (r *Runtime) answerOf(ctx context.Context, s *Session, conv *conversation, tools *Registry, purpose string,
	acceptEmpty func() (bool, error)) (*model.Response, *Request, error) {
	wait := r.cfg.FaultBackoff
	for attempt := 1; ; attempt++ {
		resp, rec, err := r.ask(ctx, s, conv.messages(), tools, false)
		if err != nil {
			return nil, nil, err
		}
		rec.Purpose = purpose
		fault := resp.Fault()
		if fault == model.FaultEmpty {
			ok := attempt > r.cfg.FaultRetries
			if !ok {
				if ok, err = acceptEmpty(); err != nil {
					return nil, nil, err
				}
			}
			if ok {
				if attempt > r.cfg.FaultRetries {
					r.count(faultsOf, s, fault, "accepted")
				}
				return resp, rec, nil
			}
		}
		if fault == "" {
			return resp, rec, nil
		}
		rec.FinishReason = faultFinish + fault
		if err := r.d.InTx(ctx, func(tx *db.Tx) error {
			if err := r.store.relaxCommit(ctx, tx); err != nil {
				return err
			}
			return r.store.recordRequest(ctx, tx, rec, nil)
		}); err != nil {
			return nil, nil, err
		}
		s.Requests++
		s.Usage = s.Usage.Add(resp.Usage)
		if attempt > r.cfg.FaultRetries {
			r.count(faultsOf, s, fault, "failed")
			return nil, nil, &FaultError{SessionID: s.ID, Model: r.model.Model(), Kind: fault, Attempts: attempt,
				Detail: clip(strings.Join(strings.Fields(resp.Refusal), " "), 200)}
		}
		r.count(faultsOf, s, fault, "retried")
		if err := r.cfg.Sleep(ctx, wait); err != nil {
			return nil, nil, err
		}
		wait = min(2*wait, maxFaultBackoff)
	}
}
