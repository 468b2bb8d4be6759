package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// nameRetry is how soon a failed name lookup is tried again: a person
// outside the app's contact range stays nameless without a call per message.
const nameRetry = 10 * time.Minute

// feishuName returns the display name of the person with openID: the one
// stored, read again from Feishu's contact API once it is older than
// NameTTL. A failed lookup returns what is stored (often nothing) and is
// only logged: a name never holds up ingestion, and the card keeps the
// open_id.
func (s *Service) feishuName(ctx context.Context, openID string) string {
	if s.fs == nil || openID == "" {
		return ""
	}
	now := s.now()
	var name, lastErr string
	var fetched time.Time
	err := s.d.QueryRow(ctx, `SELECT name, fetched_at, error FROM feishu_users WHERE open_id = $1`, openID).Scan(&name, &fetched, &lastErr)
	switch {
	case errors.Is(err, db.ErrNoRows):
	case err != nil:
		s.logger.Warn("reading a feishu name", "open_id", openID, "error", err)
		return ""
	case lastErr == "" && now.Sub(fetched) < s.cfg.Feishu.NameTTL, lastErr != "" && now.Sub(fetched) < nameRetry:
		return name
	}
	lookup, cancel := context.WithTimeout(ctx, s.cfg.Feishu.NameTimeout)
	defer cancel()
	u, err := s.fs.User(lookup, openID)
	if err != nil {
		s.logger.Warn("feishu name unknown", "open_id", openID, "error", err)
		lastErr = err.Error()
	} else {
		name, lastErr = u.Name, ""
		if name == "" {
			name = u.EnName
		}
	}
	if _, err := s.d.Exec(ctx, `
INSERT INTO feishu_users (open_id, name, fetched_at, error) VALUES ($1, $2, $3, $4)
ON CONFLICT (open_id) DO UPDATE SET name = excluded.name, fetched_at = excluded.fetched_at, error = excluded.error`,
		openID, name, now, lastErr); err != nil {
		s.logger.Warn("storing a feishu name", "open_id", openID, "error", fmt.Errorf("storing the name of %s: %w", openID, err))
	}
	return name
}

// feishuPerson returns the name a Feishu sender's card shows: their
// person's, recording them as a person the first time; without people,
// or when that fails, the contact API's name.
func (s *Service) feishuPerson(ctx context.Context, openID string) string {
	name := s.feishuName(ctx, openID)
	if s.people == nil || openID == "" {
		return name
	}
	p, err := s.people.SeenOnFeishu(ctx, openID, name)
	if err != nil {
		s.logger.Warn("recording a feishu person", "open_id", openID, "error", err)
		return name
	}
	return p.Name
}

// personName returns the name of the person who holds the account, or
// fallback when nobody does.
func (s *Service) personName(ctx context.Context, q db.Querier, kind, value, fallback string) string {
	if s.people == nil {
		return fallback
	}
	name, ok, err := s.people.NameOf(ctx, q, kind, value)
	if err != nil {
		s.logger.Warn("resolving a card's author", "kind", kind, "error", err)
		return fallback
	}
	if !ok {
		return fallback
	}
	return name
}
