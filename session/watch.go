package session

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
)

// event kinds of a conversation, as the watch reads them.
const (
	eventStep    = iota // a model request's answer
	eventResult         // a tool call's result
	eventInbound        // a message from outside (a card, a note, a host fact)
	eventNudge          // the runtime's reminder of unfinished work
	eventRepeat         // the runtime's note on a repeated call
	eventStall          // the runtime's note on requests without progress
)

// event is one thing that happened in a conversation.
type event struct {
	kind int
	seq  int64
	// name and key (the tool and its arguments, canonical) are a call's;
	// result is what came back with timings masked; done says the call
	// succeeded.
	name, key, result string
	done              bool
}

// inbound is the kind of event a user message is.
func inbound(content string) int {
	switch {
	case strings.HasPrefix(content, NudgePrefix):
		return eventNudge
	case strings.HasPrefix(content, RepeatPrefix):
		return eventRepeat
	case strings.HasPrefix(content, StallPrefix):
		return eventStall
	}
	return eventInbound
}

// callKey names a call by its tool and its arguments in canonical JSON, so
// that the same call written with other spacing or key order is the same.
func callKey(tc model.ToolCall) string {
	var v any
	if err := json.Unmarshal([]byte(tc.Arguments), &v); err == nil {
		if b, err := json.Marshal(v); err == nil {
			return tc.Name + " " + string(b)
		}
	}
	return tc.Name + " " + strings.TrimSpace(tc.Arguments)
}

// volatile matches what differs between two runs of the same command with
// the same outcome: durations (12ms, 1.5s, 2m3s), clock times, dates and
// memory addresses.
var volatile = regexp.MustCompile(`\b(?:\d+(?:\.\d+)?(?:ns|µs|us|ms|s|m|h)\b)+|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b|\b\d{4}-\d{2}-\d{2}\b|\b0x[0-9a-fA-F]{6,}\b`)

// sameResult is a result as the watch compares it: timings aside.
func sameResult(s string) string {
	return volatile.ReplaceAllString(s, "#")
}

// watchFinding is what the watch asks of the runtime: a note to add, or a
// reason to wrap up.
type watchFinding struct {
	note   string
	wrapUp string
	// kind is ReasonRepeatedCall or ReasonNoProgress.
	kind string
}

// watch looks at the conversation for a call that keeps coming back with
// the same result and for requests without progress. The first time
// either passes its limit the model gets one note; past twice the limit
// the Session wraps up. Both limits off (0) find nothing.
func (r *Runtime) watch(conv *conversation, tools *Registry) watchFinding {
	if n := r.cfg.RepeatLimit; n > 0 {
		if run, first, last := repeatRun(conv.events); run >= 2*n {
			return watchFinding{wrapUp: ReasonRepeatedCall, kind: ReasonRepeatedCall}
		} else if run >= n && !noted(conv.events, eventRepeat, first) {
			return watchFinding{kind: ReasonRepeatedCall, note: fmt.Sprintf(RepeatPrefix+
				"the last %d calls were the same call (%s) and each came back with the same result. Repeating it will not change that: "+
				"change the approach, or report the work blocked with what stops it. If the same call goes on coming back the same, "+
				"the host ends this Session after %d in a row.", run, StepSummary(last.name, strings.TrimPrefix(last.key, last.name+" ")), 2*n)}
		}
	}
	if n := r.cfg.StallSteps; n > 0 {
		if steps, since := stalled(conv.events, tools); steps >= 2*n {
			return watchFinding{wrapUp: ReasonNoProgress, kind: ReasonNoProgress}
		} else if steps >= n && !noted(conv.events, eventStall, since) {
			return watchFinding{kind: ReasonNoProgress, note: fmt.Sprintf(StallPrefix+
				"%d requests in a row changed no file, ran no new command and sent no message. Act on what you have read, "+
				"or report the work blocked or waiting with what is missing. After %d such requests the host ends this Session.", steps, 2*n)}
		}
	}
	return watchFinding{}
}

// repeatRun counts the latest results that are the same call with the
// same result, and returns the sequence number of the first of them and
// the last one.
func repeatRun(events []event) (run int, first int64, last event) {
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.kind != eventResult {
			continue
		}
		if run == 0 {
			last = e
		} else if e.key != last.key || e.result != last.result {
			break
		}
		run++
		first = e.seq
	}
	return run, first, last
}

// stalled counts the model requests since the latest progress (a message
// from outside, or the first successful call of its kind by a tool that
// declares Progress), and returns the sequence number of that progress.
func stalled(events []event, tools *Registry) (steps int, since int64) {
	seen := map[string]bool{}
	for _, e := range events {
		switch e.kind {
		case eventStep:
			steps++
		case eventInbound:
			steps, since = 0, e.seq
		case eventResult:
			t := tools.lookup(e.name)
			if e.done && t != nil && t.Progress && !seen[e.key] {
				steps, since = 0, e.seq
			}
			seen[e.key] = true
		}
	}
	return steps, since
}

// noted reports whether a note of kind came after seq.
func noted(events []event, kind int, seq int64) bool {
	for i := len(events) - 1; i >= 0 && events[i].seq > seq; i-- {
		if events[i].kind == kind {
			return true
		}
	}
	return false
}

// nudged reports whether the current turn (since the latest message from
// outside) already had its reminder.
func nudged(events []event) bool {
	for i := len(events) - 1; i >= 0; i-- {
		switch events[i].kind {
		case eventNudge:
			return true
		case eventInbound:
			return false
		}
	}
	return false
}

// note stores a host note in the Session and adds it to the conversation.
func (r *Runtime) note(ctx context.Context, s *Session, conv *conversation, text string) error {
	var m Message
	err := r.d.InTx(ctx, func(tx *db.Tx) error {
		var err error
		m, err = r.store.insertMessage(ctx, tx, s.ID, Message{Role: model.RoleUser, Content: text})
		return err
	})
	if err != nil {
		return err
	}
	return r.adopt(ctx, s, conv, m)
}

// callStates reads the states of a Session's answered calls, for the
// watch of a conversation loaded from the database.
func (st *Store) callStates(ctx context.Context, q db.Querier, sessionID int64) (map[string]string, error) {
	rows, err := q.Query(ctx, `SELECT call_id, state FROM session_tool_calls WHERE session_id = $1`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("loading tool call states of session %d: %w", sessionID, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, state string
		if err := rows.Scan(&id, &state); err != nil {
			return nil, fmt.Errorf("loading tool call states of session %d: %w", sessionID, err)
		}
		out[id] = state
	}
	return out, rows.Err()
}
