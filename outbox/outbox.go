// Package outbox makes every outgoing write of both roles at most once,
// over one table (outgoing_messages, through tickets.Store): the intent is
// recorded before the call, claimed in its own statement just before it,
// and finished with what the call produced; after a crash, a write left
// sending is either found on the other side or sent again only where the
// other side deduplicates.
//
// Two ways in share that protocol. Write makes one write now and answers
// with its result: the Executor's tools. Deliver sends the intents a
// transaction recorded earlier through a Sender: the main Session's
// acknowledgements, questions and proposals, sent by Messenger.
//
// The package also holds what every outgoing text shares: the agent line
// that begins a GitHub message (AgentLine), the hidden marker a retry finds
// a GitHub write by (Marker), and the word count the length limits use
// (Words).
package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// Box records, claims, sends and finishes outgoing writes.
type Box struct {
	// DB and Tickets hold the intents. Required.
	DB      *db.DB
	Tickets *tickets.Store
	// Logger receives errors of the bookkeeping after a send. Default:
	// discarded.
	Logger *slog.Logger
}

func (b *Box) logger() *slog.Logger {
	if b.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Logger
}

// Write makes one outgoing write at most once. The intent (o.Key names
// it) is recorded before the call and claimed just before it; what the
// write produced is kept with it. A retried call whose earlier attempt
// finished answers the same without writing; one whose earlier attempt
// died mid-call first asks find whether the write landed (nil find: the
// other side deduplicates, so it is sent again).
func (b *Box) Write(ctx context.Context, o tickets.Outgoing, send func(context.Context) (string, error),
	find func(context.Context) (string, bool, error)) (string, error) {
	st, d := b.Tickets, b.DB
	rec, won, err := st.RecordClaimed(ctx, d, o)
	if err != nil {
		return "", err
	}
	switch {
	case won:
	case rec.State == tickets.OutgoingSent:
		return rec.Result, nil
	case rec.State == tickets.OutgoingSending:
		if find != nil {
			ref, ok, err := find(ctx)
			if err != nil {
				return "", fmt.Errorf("checking whether %s was sent: %w", o.Kind, err)
			}
			if ok {
				return ref, st.SentIntent(ctx, d, rec.ID, ref)
			}
		}
		won, err = st.Reclaim(ctx, d, rec.ID, tickets.OutgoingSending)
	case rec.State == tickets.OutgoingFailed:
		won, err = st.Reclaim(ctx, d, rec.ID, tickets.OutgoingFailed)
	default:
		won, err = st.ClaimIntent(ctx, d, rec.ID)
	}
	if err != nil {
		return "", err
	}
	if !won {
		return "", fmt.Errorf("another attempt is sending this %s", o.Kind)
	}
	ref, sendErr := send(ctx)
	if sendErr != nil && ctx.Err() != nil {
		// Cut off mid-call: whether it landed is unknown. It stays
		// sending, and the retry asks find.
		return "", sendErr
	}
	if sendErr != nil {
		if err := st.FinishIntent(context.WithoutCancel(ctx), d, rec.ID, sendErr); err != nil {
			b.logger().Error("recording a failed write", "key", o.Key, "error", err)
		}
		return "", sendErr
	}
	return ref, st.SentIntent(context.WithoutCancel(ctx), d, rec.ID, ref)
}

// Sender sends one recorded intent; card is the card it answers (zero
// when it answers none). Deliver claims the intent before calling, so Send
// is called at most once per intent, except for the kinds the other side
// deduplicates (RetrySafe).
type Sender interface {
	Send(ctx context.Context, o tickets.Outgoing, card tickets.Card) error
}

// StaleSend is how long an intent may stay sending before its sender is
// presumed dead; every send's own HTTP timeout is far shorter.
const StaleSend = 2 * time.Minute

// RetrySafe are the source/kind pairs the other side deduplicates: GitHub
// keeps one reaction per content and App, Feishu one reply per uuid. A
// Deliver that died mid-call sends those again; any other stays at most
// once.
var RetrySafe = []string{tickets.SourceGitHub + "/" + KindReaction, tickets.SourceFeishu + "/" + KindComment}

// Deliver sends the pending intents through s, up to 100 at a time: each
// is claimed in its own statement before the call, so a retry after a
// crash never sends one twice. Intents left sending since before now minus
// StaleSend are first sent again where RetrySafe allows. sent, when set,
// is called after each successful send.
func (b *Box) Deliver(ctx context.Context, s Sender, now time.Time, sent func(o tickets.Outgoing, card tickets.Card)) {
	st, d, log := b.Tickets, b.DB, b.logger()
	if _, err := st.RetryStale(ctx, d, now.Add(-StaleSend), RetrySafe); err != nil {
		log.Error("retrying outgoing messages", "error", err)
	}
	pending, err := st.PendingIntents(ctx, d, 100)
	if err != nil {
		log.Error("listing outgoing messages", "error", err)
		return
	}
	for _, p := range pending {
		won, err := st.ClaimIntent(ctx, d, p.ID)
		if err != nil || !won {
			continue
		}
		var card tickets.Card
		if p.CardID != 0 {
			if card, err = st.Card(ctx, d, p.CardID); err != nil {
				log.Error("reading the card of an outgoing message", "error", err)
			}
		}
		sendErr := s.Send(ctx, p, card)
		if sendErr != nil && ctx.Err() != nil {
			// Cut off mid-call: whether it arrived is unknown. Leave it
			// sending for the stale sweep.
			return
		}
		if sendErr != nil {
			log.Error("sending an outgoing message", "key", p.Key, "error", sendErr)
		}
		if err := st.FinishIntent(context.WithoutCancel(ctx), d, p.ID, sendErr); err != nil {
			log.Error("recording an outgoing message", "key", p.Key, "error", err)
		}
		if sendErr == nil && sent != nil {
			sent(p, card)
		}
	}
}

// AgentLine is the line that begins every GitHub message: the team's
// current Communication setting, read for every message so a change applies
// at once, else promptparts.DefaultAgentLine. p may be nil (the default).
func AgentLine(ctx context.Context, p *promptparts.Service) (string, error) {
	if p == nil {
		return promptparts.DefaultAgentLine, nil
	}
	st, _, err := p.Current(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the agent line: %w", err)
	}
	if line := strings.TrimSpace(st.Sections.Communication.AgentLine); line != "" {
		return line, nil
	}
	return promptparts.DefaultAgentLine, nil
}

// Marker is hidden in every GitHub body written under an intent key, so a
// retry can find a write whose answer it never saw.
func Marker(key string) string { return "<!-- superagent:" + key + " -->" }

// Words counts the words of a text as every length limit on written text
// counts them.
func Words(s string) int { return len(strings.Fields(s)) }
