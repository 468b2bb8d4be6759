package orchestrator

import (
	"context"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/tickets"
)

// reactionTarget says where a card's acknowledgement goes: the comment
// itself, else its issue or pull request, else its Feishu message; "" when
// the card has nowhere to react (a push, a check failure).
func (o *Orchestrator) reactionTarget(ctx context.Context, q db.Querier, c tickets.Card) (string, error) {
	switch c.Source {
	case tickets.SourceGitHub:
		return outbox.ReactionTarget(c), nil
	case tickets.SourceFeishu:
		id, err := tickets.FeishuMessageID(ctx, q, c)
		if err != nil || id == "" {
			return "", err
		}
		return "feishu:message/" + id, nil
	}
	return "", nil
}

// messageTarget says where a message about a card goes, under the message
// that prompted it: in its review thread (a review comment), else on its
// issue or pull request conversation, or as a reply in its Feishu thread.
func (o *Orchestrator) messageTarget(ctx context.Context, q db.Querier, c tickets.Card) (string, error) {
	if c.Source == tickets.SourceGitHub {
		return outbox.MessageTarget(c), nil
	}
	return o.reactionTarget(ctx, q, c)
}

// record stores an outgoing intent for a card in tx; a card without a
// target records nothing.
func (o *Orchestrator) record(ctx context.Context, tx *db.Tx, key, kind string, c tickets.Card, ticketID int64, target, body string) error {
	if target == "" {
		return nil
	}
	_, err := o.deps.Tickets.RecordIntent(ctx, tx, tickets.Outgoing{Key: key, TicketID: ticketID, CardID: c.ID,
		Source: c.Source, Kind: kind, Target: target, Body: body})
	return err
}

// recordAck records the pickup reaction for a card routed to a Ticket.
func (o *Orchestrator) recordAck(ctx context.Context, tx *db.Tx, c tickets.Card, ticketID int64) error {
	target, err := o.reactionTarget(ctx, tx, c)
	if err != nil {
		return err
	}
	emoji := "eyes"
	if c.Source == tickets.SourceFeishu {
		emoji = feishu.EmojiOnIt
	}
	return o.record(ctx, tx, "ack:card:"+itoa(c.ID), outbox.KindReaction, c, ticketID, target, emoji)
}

// deliver sends the pending intents through the outbox (see
// outbox.Box.Deliver); a message in a Thread (not a reaction, not a
// private message) marks it as one the bot spoke in, so replies to it
// address the bot.
func (o *Orchestrator) deliver(ctx context.Context) {
	if o.deps.Acks == nil {
		return
	}
	box := &outbox.Box{DB: o.deps.DB, Tickets: o.deps.Tickets, Logger: o.cfg.Logger}
	box.Deliver(ctx, o.deps.Acks, o.cfg.Now(), func(p tickets.Outgoing, card tickets.Card) {
		if p.Kind == outbox.KindReaction || card.Thread.Key == "" || outbox.Private(p.Target) {
			return
		}
		if err := o.deps.Tickets.MarkBotSpoke(ctx, o.deps.DB, card.Thread.Key); err != nil {
			o.cfg.Logger.Error("recording that the bot spoke", "thread", card.Thread.Key, "error", err)
		}
	})
}
