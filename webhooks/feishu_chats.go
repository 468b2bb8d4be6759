package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
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
	Proactive   bool   `json:"proactive"`
	ProactiveBy string `json:"proactive_by,omitempty"`
	// Repos are the repositories (owner/name) any member of the chat may
	// open work in without a linked GitHub login. Default none: a
	// requester's own GitHub permission decides.
	Repos     []string  `json:"repos"`
	UpdatedAt time.Time `json:"updated_at"`
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

// repoSyntax is owner/name as GitHub allows them.
var repoSyntax = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$`)

// CheckRepos normalizes a list of repositories (owner/name), refusing one
// that is not.
func CheckRepos(repos []string) ([]string, error) {
	out := []string{}
	for _, r := range repos {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !repoSyntax.MatchString(r) {
			return nil, fmt.Errorf("%q is not a repository (owner/name)", r)
		}
		if !slices.ContainsFunc(out, func(x string) bool { return strings.EqualFold(x, r) }) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out, nil
}

// SetChatRepos sets the repositories any member of chatID may open work
// in, recording by as who did it.
func (s *Service) SetChatRepos(ctx context.Context, chatID string, repos []string, by string) (FeishuChat, error) {
	repos, err := CheckRepos(repos)
	if err != nil {
		return FeishuChat{}, err
	}
	_, err = s.d.Exec(ctx, `
INSERT INTO feishu_chats (chat_id, active, repos, updated_at) VALUES ($1, FALSE, $2, $3)
ON CONFLICT (chat_id) DO UPDATE SET repos = excluded.repos, updated_at = excluded.updated_at`, chatID, strings.Join(repos, " "), s.now())
	if err != nil {
		return FeishuChat{}, fmt.Errorf("setting the repositories of feishu chat %s: %w", chatID, err)
	}
	s.logger.Info("feishu chat repositories set", "chat", chatID, "repos", strings.Join(repos, " "), "by", by)
	chats, err := s.feishuChats(ctx, s.d, chatID)
	if err != nil {
		return FeishuChat{}, err
	}
	return chats[0], nil
}

// ChatRepos returns the repositories chatID opens to its members
// (orchestrator.ChatRepos).
func ChatRepos(ctx context.Context, q db.Querier, chatID string) ([]string, error) {
	var repos string
	err := q.QueryRow(ctx, `SELECT repos FROM feishu_chats WHERE chat_id = $1`, chatID).Scan(&repos)
	if errors.Is(err, db.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the repositories of feishu chat %s: %w", chatID, err)
	}
	return strings.Fields(repos), nil
}

// FeishuChats lists the known Feishu chats by id.
func (s *Service) FeishuChats(ctx context.Context) ([]FeishuChat, error) {
	return s.feishuChats(ctx, s.d, "")
}

func (s *Service) feishuChats(ctx context.Context, q db.Querier, only string) ([]FeishuChat, error) {
	rows, err := q.Query(ctx, `SELECT chat_id, name, active, proactive, proactive_by, updated_at, last_message_at, repos FROM feishu_chats
WHERE $1 = '' OR chat_id = $1 ORDER BY chat_id`, only)
	if err != nil {
		return nil, fmt.Errorf("listing feishu chats: %w", err)
	}
	defer rows.Close()
	out := []FeishuChat{}
	for rows.Next() {
		var c FeishuChat
		var last sql.NullTime
		var repos string
		if err := rows.Scan(&c.ChatID, &c.Name, &c.Active, &c.Proactive, &c.ProactiveBy, &c.UpdatedAt, &last, &repos); err != nil {
			return nil, fmt.Errorf("listing feishu chats: %w", err)
		}
		c.Repos = strings.Fields(repos)
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
		Proactive *bool     `json:"proactive"`
		Repos     *[]string `json:"repos"`
	}
	if err := httpserver.DecodeJSON(r, &body); err != nil {
		return err
	}
	if body.Proactive == nil && body.Repos == nil {
		return httpserver.Errorf(http.StatusBadRequest, `"proactive" (true or false) or "repos" (a list of owner/name) is required`)
	}
	if body.Repos != nil {
		if _, err := CheckRepos(*body.Repos); err != nil {
			return httpserver.Errorf(http.StatusBadRequest, "%s; nothing was changed", err)
		}
	}
	by := httpserver.Actor(r.Context())
	var c FeishuChat
	var err error
	if body.Proactive != nil {
		if c, err = s.SetProactive(r.Context(), id, *body.Proactive, by); err != nil {
			return err
		}
		s.logger.Info("feishu chat proactive admission set", "chat", id, "proactive", *body.Proactive, "by", by)
	}
	if body.Repos != nil {
		if c, err = s.SetChatRepos(r.Context(), id, *body.Repos, by); err != nil {
			return err
		}
	}
	httpserver.WriteJSON(w, http.StatusOK, c)
	return nil
}
