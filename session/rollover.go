package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/model"
)

// rollover asks the model for a handoff and, in one transaction, records
// the request and answer in the old Session, marks it rolled over and
// starts its successor with the handoff as the first message. Nothing is
// stored before the answer, so a crash midway just asks again.
func (r *Runtime) rollover(ctx context.Context, s *Session, conv *conversation, tools *Registry, opts RunOptions) (int64, error) {
	ask := r.cfg.HandoffMessage
	if opts.Handoff != nil {
		var err error
		if ask, err = opts.Handoff(ctx, s); err != nil {
			return 0, fmt.Errorf("getting handoff instructions for session %d: %w", s.ID, err)
		}
	}
	msgs := append(append([]model.Message(nil), conv.messages()...), model.Message{Role: model.RoleUser, Content: ask})
	resp, rec, err := r.ask(ctx, s, msgs, tools, true)
	if err != nil {
		return 0, err
	}
	handoff := strings.TrimSpace(resp.Content)
	if handoff == "" {
		return 0, errors.New("rolling over session: the model wrote an empty handoff")
	}
	rec.Purpose = "handoff"
	var next *Session
	err = r.d.InTx(ctx, func(tx *db.Tx) error {
		if _, err := r.store.insertMessage(ctx, tx, s.ID, Message{Role: model.RoleUser, Content: ask}); err != nil {
			return err
		}
		if err := r.store.recordRequest(ctx, tx, rec, &Message{Role: model.RoleAssistant, Content: handoff,
			Reasoning: resp.Reasoning}); err != nil {
			return err
		}
		if err := r.store.setState(ctx, tx, s.ID, StateRolledOver, ReasonRollover); err != nil {
			return err
		}
		var err error
		if next, err = r.store.create(ctx, tx, s.Role, s.TicketID, s.ID); err != nil {
			return err
		}
		_, err = r.store.insertMessage(ctx, tx, next.ID, Message{Role: model.RoleUser, Content: handoffPrefix + handoff})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rolling over session %d: %w", s.ID, err)
	}
	return next.ID, nil
}
