package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/httpserver"
)

// FeishuChat is a Feishu chat as GET /api/feishu/chats shows it.
type FeishuChat struct {
	ChatID string `json:"chat_id"`
	Name   string `json:"name,omitempty"`
	// Active is whether the bot is a member (bot added/removed events).
	Active bool `json:"active"`
	// Proactive is whether messages that do not address the bot become
	// candidates for the policy's propose and auto rules. Default false:
	// only messages addressed to the bot, and those in conversations the
	// bot is part of, count.
	Proactive   bool      `json:"proactive"`
	ProactiveBy string    `json:"proactive_by,omitempty"`
	UpdatedAt   time.Time `json:"updated_at"`
	// LastMessageAt is when the service last received a message from the
	// chat, addressed to the bot or not; nil before the first.
	LastMessageAt *time.Time `json:"last_message_at,omitempty"`
}

// SetProactive opts chatID in to proactive admission, or out, recording
// by as who did it. A chat not yet known (the bot-added event not received
// yet) is recorded as not active.
func (s *Service) SetProactive(ctx context.Context, chatID string, on bool, by string) (FeishuChat, error) {
	_, err := s.d.Exec(ctx, `
INSERT INTO feishu_chats (chat_id, active, proactive, proactive_by, updated_at) VALUES ($1, FALSE, $2, $3, $4)
ON CONFLICT (chat_id) DO UPDATE SET proactive = excluded.proactive, proactive_by = excluded.proactive_by,
    updated_at = excluded.updated_at`, chatID, on, by, s.now())
	if err != nil {
		return FeishuChat{}, fmt.Errorf("setting proactive admission of feishu chat %s: %w", chatID, err)
	}
	chats, err := s.feishuChats(ctx, s.d, chatID)
	if err != nil {
		return FeishuChat{}, err
	}
	return chats[0], nil
}

// FeishuChats lists the known Feishu chats by id.
func (s *Service) FeishuChats(ctx context.Context) ([]FeishuChat, error) {
	return s.feishuChats(ctx, s.d, "")
}

func (s *Service) feishuChats(ctx context.Context, q db.Querier, only string) ([]FeishuChat, error) {
	rows, err := q.Query(ctx, `SELECT chat_id, name, active, proactive, proactive_by, updated_at, last_message_at FROM feishu_chats
WHERE $1 = '' OR chat_id = $1 ORDER BY chat_id`, only)
	if err != nil {
		return nil, fmt.Errorf("listing feishu chats: %w", err)
	}
	defer rows.Close()
	out := []FeishuChat{}
	for rows.Next() {
		var c FeishuChat
		var last sql.NullTime
		if err := rows.Scan(&c.ChatID, &c.Name, &c.Active, &c.Proactive, &c.ProactiveBy, &c.UpdatedAt, &last); err != nil {
			return nil, fmt.Errorf("listing feishu chats: %w", err)
		}
		if last.Valid {
			at := last.Time.UTC()
			c.LastMessageAt = &at
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing feishu chats: %w", err)
	}
	return out, nil
}

// sawMessage records that a message from chatID arrived at, on a chat
// already known (from the bot-added event or an opt-in).
func sawMessage(ctx context.Context, q db.Querier, chatID string, at time.Time) error {
	if _, err := q.Exec(ctx, `UPDATE feishu_chats SET last_message_at = $2 WHERE chat_id = $1`, chatID, at); err != nil {
		return fmt.Errorf("recording a message from feishu chat %s: %w", chatID, err)
	}
	return nil
}

// proactive reports whether chatID opted in to proactive admission.
func proactive(ctx context.Context, q db.Querier, chatID string) (bool, error) {
	var on bool
	err := q.QueryRow(ctx, `SELECT proactive FROM feishu_chats WHERE chat_id = $1`, chatID).Scan(&on)
	if errors.Is(err, db.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading whether feishu chat %s is proactive: %w", chatID, err)
	}
	return on, nil
}

func (s *Service) listFeishuChats(w http.ResponseWriter, r *http.Request) error {
	chats, err := s.FeishuChats(r.Context())
	if err != nil {
		return err
	}
	httpserver.WriteJSON(w, http.StatusOK, chats)
	return nil
}

func (s *Service) putFeishuChat(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "chat_id")
	if !strings.HasPrefix(id, "oc_") || len(id) > 100 {
		return httpserver.Errorf(http.StatusBadRequest, "chat_id must be a Feishu chat id (oc_…)")
	}
	var body struct {
		Proactive *bool `json:"proactive"`
	}
	if err := httpserver.DecodeJSON(r, &body); err != nil {
		return err
	}
	if body.Proactive == nil {
		return httpserver.Errorf(http.StatusBadRequest, `"proactive" (true or false) is required`)
	}
	by := httpserver.Actor(r.Context())
	c, err := s.SetProactive(r.Context(), id, *body.Proactive, by)
	if err != nil {
		return err
	}
	s.logger.Info("feishu chat proactive admission set", "chat", id, "proactive", *body.Proactive, "by", by)
	httpserver.WriteJSON(w, http.StatusOK, c)
	return nil
}
