package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/tickets"
)

// FeishuThreadKey returns the key of a Feishu conversation: the chat and
// the thread, root message or message that starts it.
func FeishuThreadKey(chatID, root string) string {
	return "feishu:" + chatID + "/" + root
}

func (s *Service) processFeishu(ctx context.Context, d Delivery) error {
	bot, err := s.botOpenID(ctx)
	if err != nil {
		return err
	}
	ev, err := readPayload(s, d, func() (*feishu.Event, error) { return feishu.Parse(d.Body, feishu.ParseOptions{BotOpenID: bot}) })
	if err != nil {
		return s.finish(ctx, d, DeliveryFailed, err.Error())
	}
	switch {
	case ev.Chat != nil:
		err := s.d.InTx(ctx, func(tx *db.Tx) error {
			if _, err := tx.Exec(ctx, `
INSERT INTO feishu_chats (chat_id, name, external, active, updated_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (chat_id) DO UPDATE SET name = CASE WHEN excluded.name <> '' THEN excluded.name ELSE feishu_chats.name END,
    external = excluded.external, active = excluded.active, updated_at = excluded.updated_at`,
				ev.Chat.ChatID, ev.Chat.Name, ev.Chat.External, ev.Chat.Added, s.now()); err != nil {
				return fmt.Errorf("recording feishu chat %s: %w", ev.Chat.ChatID, err)
			}
			return finishDelivery(ctx, tx, d.ID, DeliveryProcessed, "", s.now())
		})
		if err == nil {
			s.metrics.count(d.Source, d.Event, "processed")
		}
		return err
	case ev.Message != nil:
		if ev.Message.ChatID != "" {
			if err := sawMessage(ctx, s.d, ev.Message.ChatID, s.now()); err != nil {
				return err
			}
		}
		nc, drop := feishuMessageCard(ev.Message, bot)
		if drop != "" {
			return s.finish(ctx, d, DeliveryIgnored, drop)
		}
		nc.DeliveryID = d.ID
		if nc.Author.Type == tickets.AuthorUser {
			nc.Author.Name = s.feishuPerson(ctx, nc.Author.ID)
		}
		return s.admit(ctx, d, nc, func(ctx context.Context, tx *db.Tx, nc *tickets.NewCard) (string, error) {
			if nc.Addressed {
				return "", nil
			}
			// A group message that does not mention the bot counts only in
			// a conversation the bot is part of or a Ticket follows, or in
			// a chat that opted in to proactive admission: there it is a
			// candidate that only the policy's propose and auto rules can
			// turn into work.
			if on, err := proactive(ctx, tx, ev.Message.ChatID); err != nil || on {
				return "", err
			}
			th, err := s.store.ThreadByKey(ctx, tx, nc.Thread.Key)
			if errors.Is(err, tickets.ErrNotFound) {
				return "group message not addressed to the bot", nil
			}
			if err != nil {
				return "", err
			}
			if th.BotSpoke {
				return "", nil
			}
			subs, err := s.store.Subscribers(ctx, tx, th.ID)
			if err != nil || len(subs) > 0 {
				return "", err
			}
			return "group message not addressed to the bot", nil
		})
	case ev.CardAction != nil:
		nc, drop := feishuCardActionCard(ev.CardAction)
		if drop != "" {
			return s.finish(ctx, d, DeliveryIgnored, drop)
		}
		nc.DeliveryID = d.ID
		nc.Author.Name = s.feishuPerson(ctx, nc.Author.ID)
		return s.admit(ctx, d, nc, nil)
	}
	return s.finish(ctx, d, DeliveryIgnored, "event "+ev.Type+" is not processed")
}

// feishuMessageCard turns a received message into a card, or says why not.
func feishuMessageCard(m *feishu.Message, bot string) (tickets.NewCard, string) {
	if m.ChatID == "" {
		return tickets.NewCard{}, "message without a chat"
	}
	if bot != "" && m.Sender.OpenID == bot {
		return tickets.NewCard{}, "sent by this app's bot"
	}
	nc := tickets.NewCard{
		Source: tickets.SourceFeishu,
		Kind:   "message",
		Thread: tickets.Thread{Source: tickets.SourceFeishu, Key: FeishuThreadKey(m.ChatID, m.ThreadKey()), Repo: m.ChatID},
		Author: tickets.Author{ID: m.Sender.OpenID, Type: tickets.AuthorUser},
		Text:   m.Text,
	}
	if m.Sender.Type == "app" {
		nc.Author.Type = tickets.AuthorBot
		if nc.Author.ID == "" {
			nc.Author.ID = m.Sender.AppID
		}
	}
	switch {
	case m.ChatType == feishu.ChatP2P:
		nc.Addressed, nc.AddressedWhy = true, "direct_message"
	case m.MentionsBot:
		nc.Addressed, nc.AddressedWhy = true, "mention"
	}
	if m.ParentID != "" {
		nc.References = append(nc.References, tickets.Reference{Ref: "feishu:message/" + m.ParentID})
	}
	for _, a := range m.Attachments {
		nc.References = append(nc.References, tickets.Reference{Ref: "feishu:resource/" + a.MessageID + "/" + a.FileKey + "?type=" + a.ResourceType})
	}
	nc.References = append(nc.References, references(m.Text, "")...)
	nc.References = dedupeRefs(nc.References, "", 0)
	return nc, ""
}

// feishuCardActionCard turns a click on one of the bot's cards into a card.
func feishuCardActionCard(a *feishu.CardAction) (tickets.NewCard, string) {
	if a.ChatID == "" || a.MessageID == "" {
		return tickets.NewCard{}, "card action without its chat or message"
	}
	text := strings.TrimSpace(string(a.Value))
	if a.Option != "" {
		text += "\noption: " + a.Option
	}
	if len(a.FormValue) > 0 && string(a.FormValue) != "null" {
		text += "\nform: " + string(a.FormValue)
	}
	return tickets.NewCard{
		Source:       tickets.SourceFeishu,
		Kind:         "card_action",
		Thread:       tickets.Thread{Source: tickets.SourceFeishu, Key: FeishuThreadKey(a.ChatID, a.MessageID), Repo: a.ChatID},
		Author:       tickets.Author{ID: a.OperatorOpenID, Type: tickets.AuthorUser},
		Addressed:    true,
		AddressedWhy: "card_action",
		References:   []tickets.Reference{{Ref: "feishu:message/" + a.MessageID}},
		Text:         text,
	}, ""
}

// botOpenID returns the configured bot open_id, or the client's.
func (s *Service) botOpenID(ctx context.Context) (string, error) {
	if s.cfg.Feishu.BotOpenID != "" || s.fs == nil {
		return s.cfg.Feishu.BotOpenID, nil
	}
	id, err := s.fs.BotOpenID(ctx)
	if err != nil {
		return "", fmt.Errorf("learning the Feishu bot's open_id: %w", err)
	}
	return id, nil
}
