package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
)

// minHandoffWords is the fewest words a handoff must have to be used: an
// empty or near-empty one ("Continue the work.") is asked for again.
const minHandoffWords = 6

// handoffRetries is how many times a useless handoff is asked for again
// before the successor starts from the host's facts alone.
const handoffRetries = 2

// handoffFit is the share of the context window a handoff request may
// fill; the rest is left for the answer.
const handoffFit = 0.9

// clippedKeep is how much of a tool result a handoff request keeps when
// the conversation must be cut to fit.
const clippedKeep = 1 << 10

// rollover asks the model for a handoff and, in one transaction, records
// the request and answer in the old Session, marks it rolled over and
// starts its successor with the handoff as the first message, beside what
// the caller knows for certain (RunOptions.HandoffFacts). An empty or
// useless handoff is asked for again (twice), and then left out: the
// rollover never fails for a sloppy answer. The handoff request is cut to
// fit the context window. Nothing is stored before the answer, so a crash
// midway just asks again.
func (r *Runtime) rollover(ctx context.Context, s *Session, conv *conversation, tools *Registry, opts RunOptions) (int64, error) {
	ask := r.cfg.HandoffMessage
	if opts.Handoff != nil {
		var err error
		if ask, err = opts.Handoff(ctx, s); err != nil {
			return 0, fmt.Errorf("getting handoff instructions for session %d: %w", s.ID, err)
		}
	}
	base := r.fitted(conv, ask)
	msgs := base
	var (
		handoff string
		resp    *model.Response
		rec     *Request
	)
	for attempt := 0; ; attempt++ {
		var err error
		if resp, rec, err = r.ask(ctx, s, msgs, tools, true); err != nil {
			return 0, err
		}
		handoff = strings.TrimSpace(resp.Content)
		words := len(strings.Fields(handoff))
		if words >= minHandoffWords {
			break
		}
		if attempt == handoffRetries {
			r.count(faultsOf, s, "empty_handoff", "failed")
			handoff = ""
			break
		}
		rec.Purpose, rec.FinishReason = "handoff", faultFinish+"empty_handoff"
		if err := r.d.InTx(ctx, func(tx *db.Tx) error { return r.store.recordRequest(ctx, tx, rec, nil) }); err != nil {
			return 0, err
		}
		s.Requests++
		s.Usage = s.Usage.Add(resp.Usage)
		r.count(faultsOf, s, "empty_handoff", "retried")
		if resp.NoChoices {
			if err := r.cfg.Sleep(ctx, r.cfg.FaultBackoff); err != nil {
				return 0, err
			}
		}
		msgs = append(append([]model.Message(nil), base...), model.Message{Role: model.RoleUser, Content: fmt.Sprintf(
			"host: that handoff has %d words: the next Session could not continue from it. Write the handoff now, "+
				"as the instructions above describe, in text only.", words)})
	}
	facts := ""
	if opts.HandoffFacts != nil {
		var err error
		if facts, err = opts.HandoffFacts(ctx, s); err != nil {
			return 0, fmt.Errorf("reading the facts for the handoff of session %d: %w", s.ID, err)
		}
	}
	first := handoffPrefix + handoff
	if handoff == "" {
		first = handoffPrefix + "(The previous Session wrote no usable handoff. Rely on the host's facts below, " +
			"and check the workspace and the Threads before acting.)"
	}
	if facts = strings.TrimSpace(facts); facts != "" {
		first += "\n\n" + facts
	}
	rec.Purpose = "handoff"
	var answer *Message
	if handoff != "" {
		answer = &Message{Role: model.RoleAssistant, Content: handoff, Reasoning: resp.Reasoning}
	} else {
		rec.FinishReason = faultFinish + "empty_handoff"
	}
	var next *Session
	err := r.d.InTx(ctx, func(tx *db.Tx) error {
		if _, err := r.store.insertMessage(ctx, tx, s.ID, Message{Role: model.RoleUser, Content: ask}); err != nil {
			return err
		}
		if err := r.store.recordRequest(ctx, tx, rec, answer); err != nil {
			return err
		}
		if err := r.store.setState(ctx, tx, s.ID, StateRolledOver, ReasonRollover); err != nil {
			return err
		}
		var err error
		if next, err = r.store.create(ctx, tx, s.Role, s.TicketID, s.ID); err != nil {
			return err
		}
		_, err = r.store.insertMessage(ctx, tx, next.ID, Message{Role: model.RoleUser, Content: first})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rolling over session %d: %w", s.ID, err)
	}
	return next.ID, nil
}

// fitted is the conversation and the handoff request as they are sent for
// the handoff: when they would fill more than handoffFit of the context
// window, the largest tool results are cut (in the request only; the
// transcript keeps them) until they fit.
func (r *Runtime) fitted(conv *conversation, ask string) []model.Message {
	msgs := append(append([]model.Message(nil), conv.messages()...), model.Message{Role: model.RoleUser, Content: ask})
	over := conv.estimate() + int64(len(ask)/4) - int64(handoffFit*float64(r.cfg.ContextWindow))
	for over > 0 {
		largest := -1
		for i, m := range msgs {
			if m.Role == model.RoleTool && len(m.Content) > clippedKeep+200 && (largest < 0 || len(m.Content) > len(msgs[largest].Content)) {
				largest = i
			}
		}
		if largest < 0 {
			return msgs
		}
		m := msgs[largest]
		cut := clip(m.Content, clippedKeep)
		m.Content = cut + fmt.Sprintf("\n[%d bytes of this result left out of this request, to fit the context window]", len(m.Content)-len(cut))
		over -= int64((len(msgs[largest].Content) - len(m.Content)) / 4)
		msgs[largest] = m
	}
	return msgs
}
