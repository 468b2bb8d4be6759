package tickets

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// Ticket states.
const (
	TicketOpen    = "open"
	TicketWorking = "working"
	TicketWaiting = "waiting"
	TicketPaused  = "paused"
	// TicketInReview: the Executor delivered and the Ticket's pull request
	// is open; the Ticket keeps its Threads, and its reviews, checks and
	// comments reach it, until the pull request is merged or closed.
	TicketInReview  = "in_review"
	TicketDone      = "done"
	TicketCancelled = "cancelled"
)

// Ended reports whether a Ticket in state has ended (done or cancelled):
// it follows no Thread and its Executor works no more. Every other state,
// in_review included, is live.
func Ended(state string) bool { return state == TicketDone || state == TicketCancelled }

// Ticket origins.
const (
	// OriginExplicit: a person who passes the gate asked the bot.
	OriginExplicit = "explicit"
	// OriginInferred: enabled policy rules admitted it.
	OriginInferred = "inferred"
)

// Ticket is a unit of work.
type Ticket struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	State string `json:"state"`
	// Repo is owner/name of the repository the Ticket works in.
	Repo string `json:"repo,omitempty"`
	// Branch is the Ticket's working branch, once it has one.
	Branch string `json:"branch,omitempty"`
	// PullNumber is the Ticket's pull request in Repo, once it has one.
	PullNumber int `json:"pull_request,omitempty"`
	// Origin is OriginExplicit or OriginInferred; Rules names the policy
	// rules that admitted an inferred Ticket.
	Origin string   `json:"origin"`
	Rules  []string `json:"rules,omitempty"`
	// Mandate is the Ticket's recorded authorization.
	Mandate Mandate `json:"mandate"`
	// Proposal is true while an inferred Ticket in propose mode waits for a
	// person to accept it; its state is then TicketWaiting.
	Proposal bool `json:"proposal,omitempty"`
	// SourceCardID is the card the Ticket was made from; one Ticket per card.
	SourceCardID int64 `json:"source_card,omitempty"`
	// Pause is set while a person holds the Ticket.
	Pause *Pause `json:"pause,omitempty"`
	// Stop is set once a person stopped the Ticket (it is then cancelled),
	// until a person continues it.
	Stop *Pause `json:"stop,omitempty"`
	// Continue is set while a person's continue waits for the Executor to
	// start the Ticket's new Session.
	Continue *Pause `json:"continue,omitempty"`
	// Failed is set when the Ticket's latest Executor job ran out of
	// attempts (By is empty, Reason the error), until a person retries it
	// or another job of it starts.
	Failed    *Pause    `json:"failed,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Mandate records what authorizes a Ticket: who asked, or which rules
// admitted it, where it may write and what it may do there.
type Mandate struct {
	// RequestedBy is the person who asked (explicit Tickets).
	RequestedBy *Author `json:"requested_by,omitempty"`
	// Source is where the request came from (github, feishu).
	Source string `json:"source,omitempty"`
	// Rules are the policy rule ids that admitted an inferred Ticket.
	Rules []string `json:"rules,omitempty"`
	// Repos are the repositories (owner/name) the Ticket may write to.
	Repos []string `json:"repos,omitempty"`
	// Actions are what it may do there (reply, branch, pull_request).
	Actions []string `json:"actions,omitempty"`
}

// Pause is a person's hold on a Ticket; the same record (who, when, why)
// marks a person's stop and continue.
type Pause struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
}

const ticketColumns = `id, title, state, repo, branch, pull_number, origin, rules, mandate, proposal,
    COALESCE(source_card_id, 0), paused_by, paused_at, pause_reason, stopped_by, stopped_at, stop_reason,
    continue_by, continue_at, failed_at, failure, created_at, updated_at`

func scanTicket(row scanner) (Ticket, error) {
	var (
		t               Ticket
		rules, mandate  string
		pausedAt        sql.NullTime
		pausedBy, why   string
		stoppedAt       sql.NullTime
		stoppedBy, sWhy string
		contAt          sql.NullTime
		contBy          string
		failedAt        sql.NullTime
		failure         string
	)
	err := row.Scan(&t.ID, &t.Title, &t.State, &t.Repo, &t.Branch, &t.PullNumber, &t.Origin, &rules, &mandate, &t.Proposal,
		&t.SourceCardID, &pausedBy, &pausedAt, &why, &stoppedBy, &stoppedAt, &sWhy, &contBy, &contAt, &failedAt, &failure, &t.CreatedAt, &t.UpdatedAt)
	if err != nil {
		return Ticket{}, err
	}
	if err := json.Unmarshal([]byte(rules), &t.Rules); err != nil {
		return Ticket{}, fmt.Errorf("decoding rules of ticket %d: %w", t.ID, err)
	}
	if err := json.Unmarshal([]byte(mandate), &t.Mandate); err != nil {
		return Ticket{}, fmt.Errorf("decoding mandate of ticket %d: %w", t.ID, err)
	}
	if pausedAt.Valid {
		t.Pause = &Pause{By: pausedBy, At: pausedAt.Time.UTC(), Reason: why}
	}
	if stoppedAt.Valid {
		t.Stop = &Pause{By: stoppedBy, At: stoppedAt.Time.UTC(), Reason: sWhy}
	}
	if contAt.Valid {
		t.Continue = &Pause{By: contBy, At: contAt.Time.UTC()}
	}
	if failedAt.Valid {
		t.Failed = &Pause{At: failedAt.Time.UTC(), Reason: failure}
	}
	t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	return t, nil
}

// CreateTicket stores a new Ticket (state open unless t.State says
// otherwise, origin explicit unless set). A second Ticket from the same
// source card is refused with ErrDuplicate.
func (s *Store) CreateTicket(ctx context.Context, q db.Querier, t Ticket) (Ticket, error) {
	if t.State == "" {
		t.State = TicketOpen
	}
	if t.Origin == "" {
		t.Origin = OriginExplicit
	}
	rules := t.Rules
	if rules == nil {
		rules = []string{}
	}
	rulesJSON, err := json.Marshal(rules)
	if err != nil {
		return Ticket{}, fmt.Errorf("encoding ticket rules: %w", err)
	}
	mandateJSON, err := json.Marshal(t.Mandate)
	if err != nil {
		return Ticket{}, fmt.Errorf("encoding ticket mandate: %w", err)
	}
	var card sql.NullInt64
	if t.SourceCardID != 0 {
		card = sql.NullInt64{Int64: t.SourceCardID, Valid: true}
	}
	now := s.nowUTC()
	out, err := scanTicket(q.QueryRow(ctx, `
INSERT INTO tickets (title, state, repo, branch, origin, rules, mandate, proposal, source_card_id, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)
ON CONFLICT (source_card_id) DO NOTHING
RETURNING `+ticketColumns,
		t.Title, t.State, t.Repo, t.Branch, t.Origin, string(rulesJSON), string(mandateJSON), t.Proposal, card, now))
	if errors.Is(err, db.ErrNoRows) {
		return Ticket{}, fmt.Errorf("creating ticket from card %d: %w", t.SourceCardID, ErrDuplicate)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("creating ticket %q: %w", t.Title, err)
	}
	return out, nil
}

// Ticket reads a Ticket.
func (s *Store) Ticket(ctx context.Context, q db.Querier, id int64) (Ticket, error) {
	t, err := scanTicket(q.QueryRow(ctx, "SELECT "+ticketColumns+" FROM tickets WHERE id = $1", id))
	if errors.Is(err, db.ErrNoRows) {
		return Ticket{}, fmt.Errorf("reading ticket %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("reading ticket %d: %w", id, err)
	}
	return t, nil
}

// TicketBySourceCard reads the Ticket made from a card.
func (s *Store) TicketBySourceCard(ctx context.Context, q db.Querier, cardID int64) (Ticket, error) {
	t, err := scanTicket(q.QueryRow(ctx, "SELECT "+ticketColumns+" FROM tickets WHERE source_card_id = $1", cardID))
	if errors.Is(err, db.ErrNoRows) {
		return Ticket{}, fmt.Errorf("reading ticket of card %d: %w", cardID, ErrNotFound)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("reading ticket of card %d: %w", cardID, err)
	}
	return t, nil
}

// ListTickets returns the most recently updated Tickets first; state ""
// means every state.
func (s *Store) ListTickets(ctx context.Context, q db.Querier, state string, limit int) ([]Ticket, error) {
	return queryAll(ctx, q, "listing tickets", scanTicket, "SELECT "+ticketColumns+` FROM tickets
WHERE ($1 = '' OR state = $1) ORDER BY updated_at DESC, id DESC LIMIT $2`, state, limit)
}

// ErrPaused is returned when automatic work tries to move a paused Ticket:
// only a person's Resume lifts a pause.
var ErrPaused = errors.New("ticket is paused")

// ErrEnded is returned when a done or cancelled Ticket is paused or moved.
var ErrEnded = errors.New("ticket has ended")

// SetTicketState moves a Ticket to state on behalf of automatic work (the
// Executor, the main Session). A paused Ticket refuses with ErrPaused, so no
// follow-up, bot or CI event can resume it; use Resume. A Ticket a person
// stopped stays stopped, and an ended one ended (its pull request was
// merged or closed): the move is ignored (only Continue reopens one).
func (s *Store) SetTicketState(ctx context.Context, q db.Querier, id int64, state string) error {
	t, err := s.Ticket(ctx, q, id)
	if err != nil {
		return err
	}
	if t.Pause != nil {
		return fmt.Errorf("moving ticket %d to %s: %w", id, state, ErrPaused)
	}
	if t.Stop != nil || Ended(t.State) {
		return nil
	}
	if _, err := q.Exec(ctx, "UPDATE tickets SET state = $2, updated_at = $3 WHERE id = $1", id, state, s.nowUTC()); err != nil {
		return fmt.Errorf("moving ticket %d to %s: %w", id, state, err)
	}
	if Ended(state) {
		return s.releaseHeld(ctx, q, id)
	}
	return nil
}

// releaseHeld returns to the main Session the follow-up cards that no
// owner holds any more once this Ticket has ended: every other owner has
// handed them back, or ended without being given them.
func (s *Store) releaseHeld(ctx context.Context, q db.Querier, ticketID int64) error {
	_, err := q.Exec(ctx, `
UPDATE cards SET state = 'candidate', ticket_id = NULL, offered_at = NULL
WHERE state = 'follow_up'
  AND id IN (SELECT card_id FROM follow_up_notices WHERE ticket_id = $1)
  AND NOT EXISTS (`+holdingOwners+`)`, ticketID)
	if err != nil {
		return fmt.Errorf("returning cards held by ticket %d: %w", ticketID, err)
	}
	return nil
}

// holdingOwners selects the Tickets that still hold the card cards.id: it
// reached them, they did not hand it back, and they are either still open
// or were given it before they ended (they took it).
const holdingOwners = `
SELECT 1 FROM follow_up_notices n JOIN tickets t ON t.id = n.ticket_id
WHERE n.card_id = cards.id
  AND NOT EXISTS (SELECT 1 FROM hand_backs h WHERE h.card_id = n.card_id AND h.ticket_id = n.ticket_id)
  AND (t.state NOT IN ('done', 'cancelled')
       OR EXISTS (SELECT 1 FROM ticket_deliveries d WHERE d.card_id = n.card_id AND d.ticket_id = n.ticket_id))`

// Pause holds a Ticket on a person's word; pausing a paused Ticket keeps
// the first pause. The state before the pause is restored by Resume.
func (s *Store) Pause(ctx context.Context, q db.Querier, id int64, actor, reason string) error {
	t, err := s.Ticket(ctx, q, id)
	if err != nil {
		return err
	}
	if t.Pause != nil {
		return nil
	}
	if Ended(t.State) {
		return fmt.Errorf("pausing ticket %d: %w", id, ErrEnded)
	}
	now := s.nowUTC()
	_, err = q.Exec(ctx, `UPDATE tickets SET resume_state = state, state = 'paused', paused_by = $2, paused_at = $3,
    pause_reason = $4, updated_at = $3 WHERE id = $1`, id, actor, now, reason)
	if err != nil {
		return fmt.Errorf("pausing ticket %d: %w", id, err)
	}
	return nil
}

// Resume lifts a person's pause; it must be called only for a person
// (never for a bot, CI or other automatic event). Resuming a Ticket that
// is not paused does nothing.
func (s *Store) Resume(ctx context.Context, q db.Querier, id int64, actor string) error {
	t, err := s.Ticket(ctx, q, id)
	if err != nil {
		return err
	}
	if t.Pause == nil {
		return nil
	}
	_, err = q.Exec(ctx, `UPDATE tickets SET state = CASE WHEN resume_state IN ('', 'paused') THEN 'open' ELSE resume_state END,
    resume_state = '', paused_by = '', paused_at = NULL, pause_reason = '', updated_at = $2 WHERE id = $1`, id, s.nowUTC())
	if err != nil {
		return fmt.Errorf("resuming ticket %d for %s: %w", id, actor, err)
	}
	return nil
}

// AcceptProposal turns a proposal into an open Ticket on a person's word.
// It reports whether the Ticket was a proposal.
func (s *Store) AcceptProposal(ctx context.Context, q db.Querier, id int64) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE tickets SET proposal = FALSE, state = 'open', updated_at = $2
WHERE id = $1 AND proposal AND state = 'waiting'`, id, s.nowUTC())
	if err != nil {
		return false, fmt.Errorf("accepting proposal %d: %w", id, err)
	}
	return n > 0, nil
}

// SubscribeForContext makes a Ticket follow a Thread for context only: its
// cards reach the Executor, but it grants no right to write there. A
// Thread the Ticket already follows for work stays so.
func (s *Store) SubscribeForContext(ctx context.Context, q db.Querier, ticketID, threadID int64) error {
	_, err := q.Exec(ctx, `
INSERT INTO subscriptions (ticket_id, thread_id, created_at, context_only) VALUES ($1, $2, $3, TRUE)
ON CONFLICT (ticket_id, thread_id) DO NOTHING`, ticketID, threadID, s.nowUTC())
	if err != nil {
		return fmt.Errorf("subscribing ticket %d to thread %d for context: %w", ticketID, threadID, err)
	}
	return nil
}

// Subscribe makes a Ticket follow a Thread; subscribing twice is a no-op.
func (s *Store) Subscribe(ctx context.Context, q db.Querier, ticketID, threadID int64) error {
	_, err := q.Exec(ctx, `
INSERT INTO subscriptions (ticket_id, thread_id, created_at) VALUES ($1, $2, $3)
ON CONFLICT (ticket_id, thread_id) DO NOTHING`, ticketID, threadID, s.nowUTC())
	if err != nil {
		return fmt.Errorf("subscribing ticket %d to thread %d: %w", ticketID, threadID, err)
	}
	return nil
}

// Subscribers lists the live Tickets (not done or cancelled) that follow
// a Thread, lowest id first.
func (s *Store) Subscribers(ctx context.Context, q db.Querier, threadID int64) ([]int64, error) {
	return s.followers(ctx, q, threadID, live)
}

// live is the condition on t of a Ticket that is neither done nor
// cancelled.
const live = "t.state NOT IN ('done', 'cancelled')"

// followers lists the Tickets matching which (a condition on t, the
// Ticket) that follow a Thread, lowest id first.
func (s *Store) followers(ctx context.Context, q db.Querier, threadID int64, which string) ([]int64, error) {
	// A review thread belongs to its pull request: the Tickets following
	// the pull request's conversation follow its review threads too.
	var key string
	if err := q.QueryRow(ctx, "SELECT key FROM threads WHERE id = $1", threadID).Scan(&key); err != nil && !errors.Is(err, db.ErrNoRows) {
		return nil, fmt.Errorf("listing followers of thread %d: %w", threadID, err)
	}
	return s.followersOf(ctx, q, threadID, key, which)
}

// followersOf is followers for the Thread threadID whose key the caller
// already holds.
func (s *Store) followersOf(ctx context.Context, q db.Querier, threadID int64, key, which string) ([]int64, error) {
	parent, _, _ := strings.Cut(key, "/review-thread/")
	ids, err := queryAll(ctx, q, fmt.Sprintf("listing followers of thread %d", threadID), func(row scanner) (int64, error) {
		var id int64
		return id, row.Scan(&id)
	}, `
SELECT DISTINCT t.id FROM subscriptions s
JOIN tickets t ON t.id = s.ticket_id
JOIN threads th ON th.id = s.thread_id
WHERE (th.id = $1 OR th.key = $2) AND `+which+`
ORDER BY t.id`, threadID, parent)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return ids, nil
}

// threadWithFollowers reads the Thread with key and, in the same
// statement, the live Tickets following it (lowest id first), as
// followersOf would. A card on a known Thread, the usual case, needs both
// and nothing else. ErrNotFound when no Thread has key: a new review
// thread's followers, through its pull request, are then followersOf's.
// The Threads read ahead in tx for a batch's cards (see ReadAheadThread)
// are read together, with the first of them asked for.
func (s *Store) threadWithFollowers(ctx context.Context, tx *db.Tx, key string) (Thread, []int64, error) {
	found, err := readThread(ctx, tx, key)
	if err != nil {
		return Thread{}, nil, fmt.Errorf("reading thread %q: %w", key, err)
	}
	if !found.ok {
		return Thread{}, nil, fmt.Errorf("reading thread %q: %w", key, ErrNotFound)
	}
	return found.thread, found.followers, nil
}

// ReadAheadThread has tx read, with its next statement on PostgreSQL or
// with the first card's read on SQLite, the Thread with key and its live
// followers, for Admit: the Threads of a batch's cards, however many, in
// one statement. The read stands while no card's hooks may have changed
// a Ticket (see SteadyHook).
func (s *Store) ReadAheadThread(tx *db.Tx, key string) {
	g := threadsAhead{epochOf(tx)}
	v, _ := tx.Recall(g)
	keys, _ := v.([]string)
	if slices.Contains(keys, key) {
		return
	}
	keys = append(slices.Clip(keys), key)
	tx.Remember(g, keys)
	query, args := threadsQuery(keys)
	tx.ReadAhead(g, query, args, scanThreads)
}

// readThread returns the Thread with key as read ahead for it, reading
// every Thread read ahead with it when it is the first asked for, or as
// read now.
func readThread(ctx context.Context, tx *db.Tx, key string) (foundThread, error) {
	epoch := epochOf(tx)
	one := threadRead{key, epoch}
	if v, ok := tx.Recall(one); ok {
		// A read stands for one card: the card may write the Thread.
		tx.Forget(one)
		return v.(foundThread), nil
	}
	g := threadsAhead{epoch}
	if v, ok := tx.Recall(g); ok && slices.Contains(v.([]string), key) {
		keys := v.([]string)
		tx.Forget(g)
		query, args := threadsQuery(keys)
		read, err := tx.Read(ctx, g, query, args, scanThreads)
		if err != nil {
			return foundThread{}, err
		}
		threads := read.(map[string]foundThread)
		for _, k := range keys {
			if k != key {
				tx.Remember(threadRead{k, epoch}, threads[k])
			}
		}
		return threads[key], nil
	}
	query, args := threadsQuery([]string{key})
	v, err := db.ReadNow(ctx, tx, query, args, scanThreads)
	if err != nil {
		return foundThread{}, err
	}
	return v.(map[string]foundThread)[key], nil
}

// threadsAhead is the key under which a transaction keeps, for an epoch,
// the keys of the Threads read ahead and not read yet, and their read.
type threadsAhead struct{ epoch int }

// threadRead is the key of a Thread read with others, until its card
// takes it.
type threadRead struct {
	key   string
	epoch int
}

type foundThread struct {
	thread    Thread
	followers []int64
	ok        bool
}

// reviewParent is the key of the pull request a review thread's key
// belongs to (the key itself for any other Thread).
func reviewParent(key string) string {
	parent, _, _ := strings.Cut(key, "/review-thread/")
	return parent
}

// threadsQuery reads the Threads with keys and their live followers, in
// one statement: the Tickets following a Thread or, for a review thread,
// its pull request. A Ticket following both comes twice (see scanThreads).
func threadsQuery(keys []string) (string, []any) {
	var b strings.Builder
	b.WriteString("\nWITH k (key, parent) AS (VALUES ")
	args := make([]any, 0, 2*len(keys))
	for i, key := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(CAST($%d AS TEXT), CAST($%d AS TEXT))", 2*i+1, 2*i+2)
		args = append(args, key, reviewParent(key))
	}
	b.WriteString(`)
SELECT th.id, th.source, th.key, th.repo, th.number, th.title, th.head_ref, th.bot_spoke, th.created_at, th.updated_at,
    COALESCE(t.id, 0)
FROM k
JOIN threads th ON th.key = k.key
LEFT JOIN threads x ON x.key IN (k.key, k.parent)
LEFT JOIN subscriptions s ON s.thread_id = x.id
LEFT JOIN tickets t ON t.id = s.ticket_id AND ` + live)
	return b.String(), args
}

// scanThreads reads threadsQuery's rows into each Thread found by key,
// its followers lowest id first and once each; a key with no Thread is
// absent.
func scanThreads(rows db.Rows) (any, error) {
	threads := map[string]foundThread{}
	for rows.Next() {
		var t Thread
		var follower int64
		if err := rows.Scan(&t.ID, &t.Source, &t.Key, &t.Repo, &t.Number, &t.Title, &t.HeadRef, &t.BotSpoke, &t.CreatedAt, &t.UpdatedAt, &follower); err != nil {
			return nil, err
		}
		found := threads[t.Key]
		found.thread, found.ok = t, true
		if follower != 0 {
			found.followers = append(found.followers, follower)
		}
		threads[t.Key] = found
	}
	for key, found := range threads {
		slices.Sort(found.followers)
		found.followers = slices.Compact(found.followers)
		threads[key] = found
	}
	return threads, nil
}

// FollowUpNotice tells the main Session that a card reached a Ticket's
// Executor; it may act on it only to stop work.
type FollowUpNotice struct {
	ID        int64     `json:"id"`
	CardID    int64     `json:"card"`
	TicketID  int64     `json:"ticket"`
	CreatedAt time.Time `json:"created_at"`
}

// PendingNotices lists follow-up notices not yet delivered, oldest first.
func (s *Store) PendingNotices(ctx context.Context, q db.Querier, limit int) ([]FollowUpNotice, error) {
	rows, err := q.Query(ctx, `
SELECT id, card_id, ticket_id, created_at FROM follow_up_notices
WHERE delivered_at IS NULL ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("listing pending follow-up notices: %w", err)
	}
	defer rows.Close()
	var out []FollowUpNotice
	for rows.Next() {
		var n FollowUpNotice
		if err := rows.Scan(&n.ID, &n.CardID, &n.TicketID, &n.CreatedAt); err != nil {
			return nil, fmt.Errorf("listing pending follow-up notices: %w", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing pending follow-up notices: %w", err)
	}
	return out, nil
}

// MarkNoticesDelivered records that the main Session has seen the notices.
func (s *Store) MarkNoticesDelivered(ctx context.Context, q db.Querier, ids []int64) error {
	for _, id := range ids {
		if _, err := q.Exec(ctx, "UPDATE follow_up_notices SET delivered_at = $2 WHERE id = $1 AND delivered_at IS NULL", id, s.nowUTC()); err != nil {
			return fmt.Errorf("marking follow-up notice %d delivered: %w", id, err)
		}
	}
	return nil
}

// Cancel ends a Ticket on a person's request or the main Session's stop.
// Ending is not resuming: a paused Ticket may be cancelled, and its pause
// ends with it. Cancelling an ended Ticket does nothing.
func (s *Store) Cancel(ctx context.Context, q db.Querier, id int64) error {
	n, err := q.Exec(ctx, `UPDATE tickets SET state = 'cancelled', proposal = FALSE, paused_at = NULL, paused_by = '',
    pause_reason = '', resume_state = '', updated_at = $2 WHERE id = $1 AND state NOT IN ('done', 'cancelled')`, id, s.nowUTC())
	if err != nil {
		return fmt.Errorf("cancelling ticket %d: %w", id, err)
	}
	if n == 0 {
		if _, err := s.Ticket(ctx, q, id); err != nil {
			return err
		}
		return nil
	}
	return s.releaseHeld(ctx, q, id)
}

// SetRoutingNote keeps the main Session's routing note with a card; it
// travels with the card to the Ticket's Executor.
func (s *Store) SetRoutingNote(ctx context.Context, q db.Querier, cardID int64, note string) error {
	if _, err := q.Exec(ctx, "UPDATE cards SET routing_note = $2 WHERE id = $1", cardID, note); err != nil {
		return fmt.Errorf("storing routing note of card %d: %w", cardID, err)
	}
	return nil
}

// OfferCandidates returns up to limit candidates not yet offered to the
// main Session, oldest first, and marks them offered inside q (the
// transaction that appends them to the Session).
func (s *Store) OfferCandidates(ctx context.Context, q db.Querier, limit int) ([]Card, error) {
	cards, err := s.listCards(ctx, q, cardSelect+" WHERE c.state = 'candidate' AND c.offered_at IS NULL ORDER BY c.id LIMIT $1", limit)
	if err != nil {
		return nil, err
	}
	for _, c := range cards {
		if _, err := q.Exec(ctx, "UPDATE cards SET offered_at = $2 WHERE id = $1", c.ID, s.nowUTC()); err != nil {
			return nil, fmt.Errorf("marking card %d offered: %w", c.ID, err)
		}
	}
	return cards, nil
}

// Waiting counts what waits for the main Session: candidates not yet
// offered, undelivered Reports and follow-up notices.
func (s *Store) Waiting(ctx context.Context, q db.Querier) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT
    (SELECT COUNT(*) FROM cards WHERE state = 'candidate' AND offered_at IS NULL) +
    (SELECT COUNT(*) FROM ticket_reports WHERE delivered_at IS NULL) +
    (SELECT COUNT(*) FROM follow_up_notices WHERE delivered_at IS NULL)`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting what waits for the main Session: %w", err)
	}
	return n, nil
}

// StopCheck returns the check an Executor Session consults at every step
// (session.RunOptions.StopCheck): a paused, stopped or ended Ticket stops
// it. The reason begins with "paused" for a pause, so the Executor can
// tell a hold from a limit.
func (s *Store) StopCheck(q db.Querier, ticketID int64) func(ctx context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		t, err := s.Ticket(ctx, q, ticketID)
		switch {
		case err != nil:
			return false, ""
		case t.Pause != nil:
			return true, "paused by " + t.Pause.By
		case t.Stop != nil:
			return true, "stopped by " + t.Stop.By
		case Ended(t.State):
			return true, "ticket " + t.State
		}
		return false, ""
	}
}

// ErrHasRepository is returned by SetRepository for a Ticket whose
// repository is already set: it is set once and never changed.
var ErrHasRepository = errors.New("ticket already has a repository")

// SetRepository gives a Ticket without a repository its repository
// (owner/name), which becomes the only one its Mandate names. The caller
// has checked that the requester may have work done there. A Ticket that
// has one refuses with ErrHasRepository, even when it is the same, and an
// ended one with ErrEnded; nothing changes then.
func (s *Store) SetRepository(ctx context.Context, q db.Querier, id int64, repo string) (Ticket, error) {
	t, err := s.Ticket(ctx, q, id)
	if err != nil {
		return Ticket{}, err
	}
	switch {
	case t.Repo != "":
		return Ticket{}, fmt.Errorf("setting the repository of ticket %d to %s: it works in %s: %w", id, repo, t.Repo, ErrHasRepository)
	case Ended(t.State):
		return Ticket{}, fmt.Errorf("setting the repository of ticket %d: %w", id, ErrEnded)
	}
	t.Mandate.Repos = []string{repo}
	mandateJSON, err := json.Marshal(t.Mandate)
	if err != nil {
		return Ticket{}, fmt.Errorf("encoding the mandate of ticket %d: %w", id, err)
	}
	// repo = '' in the statement: of two callers at once, one sets it.
	n, err := q.Exec(ctx, `UPDATE tickets SET repo = $2, mandate = $3, updated_at = $4 WHERE id = $1 AND repo = ''`,
		id, repo, string(mandateJSON), s.nowUTC())
	if err != nil {
		return Ticket{}, fmt.Errorf("setting the repository of ticket %d: %w", id, err)
	}
	if n == 0 {
		return Ticket{}, fmt.Errorf("setting the repository of ticket %d to %s: %w", id, repo, ErrHasRepository)
	}
	return s.Ticket(ctx, q, id)
}
