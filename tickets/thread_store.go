package tickets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// Thread is a place where a conversation happens: a GitHub issue or pull
// request conversation, a pull request review thread, a branch (for pushes
// and check failures outside a pull request) or a Feishu chat thread.
type Thread struct {
	ID int64 `json:"id"`
	// Source is SourceGitHub or SourceFeishu.
	Source string `json:"source"`
	// Key is stable and unique: github:owner/repo#12,
	// github:owner/repo#12/review-thread/<root comment id>,
	// github:owner/repo@<branch>, feishu:<chat_id>/<root message id>.
	Key string `json:"key"`
	// Repo is owner/name on GitHub, the chat id on Feishu.
	Repo string `json:"repo,omitempty"`
	// Number is the issue or pull request number on GitHub.
	Number int `json:"number,omitempty"`
	// Title is the issue or pull request title (outside text).
	Title string `json:"title,omitempty"`
	// HeadRef is the head branch of a pull request Thread.
	HeadRef string `json:"head_ref,omitempty"`
	// BotSpoke records that the bot has written in this Thread, so that
	// replies there address it.
	BotSpoke  bool      `json:"bot_spoke"`
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when the title, head ref or BotSpoke last changed (a
	// card that changes none of them leaves it).
	UpdatedAt time.Time `json:"updated_at"`
}

// ErrNotFound is returned when a card, Thread or Ticket does not exist.
var ErrNotFound = errors.New("not found")

const threadColumns = "id, source, key, repo, number, title, head_ref, bot_spoke, created_at, updated_at"

func scanThread(row scanner) (Thread, error) {
	var t Thread
	err := row.Scan(&t.ID, &t.Source, &t.Key, &t.Repo, &t.Number, &t.Title, &t.HeadRef, &t.BotSpoke, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

// UpsertThread creates the Thread with t.Key or refreshes it: a non-empty
// title or head ref replaces the stored one, BotSpoke is only ever set.
//
// Most cards bring their Thread nothing new, and then it is only read:
// a read takes no lock, so concurrent transactions about one busy issue do
// not queue behind each other on its row, as they would behind a write
// that changes nothing.
func (s *Store) UpsertThread(ctx context.Context, q db.Querier, t Thread) (Thread, error) {
	cur, err := s.ThreadByKey(ctx, q, t.Key)
	switch {
	case err == nil && !cur.refreshedBy(t):
		return cur, nil
	case err != nil && !errors.Is(err, ErrNotFound):
		return Thread{}, err
	}
	return s.writeThread(ctx, q, t)
}

// writeThread inserts t or refreshes the stored Thread with its key.
func (s *Store) writeThread(ctx context.Context, q db.Querier, t Thread) (Thread, error) {
	now := s.nowUTC()
	row := q.QueryRow(ctx, `
INSERT INTO threads (source, key, repo, number, title, head_ref, bot_spoke, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
ON CONFLICT (key) DO UPDATE SET
    title = CASE WHEN excluded.title <> '' THEN excluded.title ELSE threads.title END,
    head_ref = CASE WHEN excluded.head_ref <> '' THEN excluded.head_ref ELSE threads.head_ref END,
    bot_spoke = threads.bot_spoke OR excluded.bot_spoke,
    updated_at = excluded.updated_at
RETURNING `+threadColumns,
		t.Source, t.Key, t.Repo, t.Number, t.Title, t.HeadRef, t.BotSpoke, now)
	out, err := scanThread(row)
	if err != nil {
		return Thread{}, fmt.Errorf("upserting thread %q: %w", t.Key, err)
	}
	return out, nil
}

// refreshedBy reports whether upserting in would change t.
func (t Thread) refreshedBy(in Thread) bool {
	return in.Title != "" && in.Title != t.Title || in.HeadRef != "" && in.HeadRef != t.HeadRef || in.BotSpoke && !t.BotSpoke
}

// ThreadByKey reads a Thread by its key.
func (s *Store) ThreadByKey(ctx context.Context, q db.Querier, key string) (Thread, error) {
	t, err := scanThread(q.QueryRow(ctx, "SELECT "+threadColumns+" FROM threads WHERE key = $1", key))
	if errors.Is(err, db.ErrNoRows) {
		return Thread{}, fmt.Errorf("reading thread %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return Thread{}, fmt.Errorf("reading thread %q: %w", key, err)
	}
	return t, nil
}

// MarkBotSpoke records that the bot wrote in the Thread with key.
func (s *Store) MarkBotSpoke(ctx context.Context, q db.Querier, key string) error {
	if tx, ok := q.(*db.Tx); ok {
		tx.Forget(threadMemo{key})
		newEpoch(tx)
	}
	n, err := q.Exec(ctx, "UPDATE threads SET bot_spoke = TRUE, updated_at = $2 WHERE key = $1", key, s.nowUTC())
	if err != nil {
		return fmt.Errorf("marking bot spoke in thread %q: %w", key, err)
	}
	if n == 0 {
		return fmt.Errorf("marking bot spoke in thread %q: %w", key, ErrNotFound)
	}
	return nil
}

// TrackedBranch reports whether branch of repo matters: a pull request
// Thread with that head branch is followed by an open Ticket, or an open
// Ticket works on that branch.
func (s *Store) TrackedBranch(ctx context.Context, q db.Querier, repo, branch string) (bool, error) {
	var n int
	err := q.QueryRow(ctx, `
SELECT COUNT(*) FROM tickets t
WHERE t.state NOT IN ('done', 'cancelled') AND (
    (t.repo = $1 AND t.branch = $2)
    OR EXISTS (SELECT 1 FROM subscriptions s JOIN threads th ON th.id = s.thread_id
               WHERE s.ticket_id = t.id AND th.repo = $1 AND th.head_ref = $2))`,
		repo, branch).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("checking whether %s@%s is tracked: %w", repo, branch, err)
	}
	return n > 0, nil
}

// PullThreadForBranch returns the Thread of the pull request of repo whose
// head is branch, if one is known.
func (s *Store) PullThreadForBranch(ctx context.Context, q db.Querier, repo, branch string) (Thread, bool, error) {
	t, err := scanThread(q.QueryRow(ctx, "SELECT "+threadColumns+
		" FROM threads WHERE repo = $1 AND head_ref = $2 ORDER BY updated_at DESC, id DESC LIMIT 1", repo, branch))
	if errors.Is(err, db.ErrNoRows) {
		return Thread{}, false, nil
	}
	if err != nil {
		return Thread{}, false, fmt.Errorf("finding pull request thread of %s@%s: %w", repo, branch, err)
	}
	return t, true, nil
}

// TicketThreads lists the Threads a Ticket follows, oldest subscription
// first.
func (s *Store) TicketThreads(ctx context.Context, q db.Querier, ticketID int64) ([]Thread, error) {
	rows, err := q.Query(ctx, `SELECT `+threadColumnsOf("th")+` FROM subscriptions s JOIN threads th ON th.id = s.thread_id
WHERE s.ticket_id = $1 ORDER BY s.created_at, th.id`, ticketID)
	if err != nil {
		return nil, fmt.Errorf("listing threads of ticket %d: %w", ticketID, err)
	}
	defer rows.Close()
	out := []Thread{}
	for rows.Next() {
		var t Thread
		if err := rows.Scan(&t.ID, &t.Source, &t.Key, &t.Repo, &t.Number, &t.Title, &t.HeadRef, &t.BotSpoke, &t.CreatedAt, &t.UpdatedAt); err != nil {
			return nil, fmt.Errorf("listing threads of ticket %d: %w", ticketID, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing threads of ticket %d: %w", ticketID, err)
	}
	return out, nil
}

func threadColumnsOf(alias string) string {
	p := alias + "."
	return p + "id, " + p + "source, " + p + "key, " + p + "repo, " + p + "number, " + p + "title, " + p + "head_ref, " + p + "bot_spoke, " + p + "created_at, " + p + "updated_at"
}
