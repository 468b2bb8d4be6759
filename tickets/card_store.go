package tickets

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/superagent-dev/superagent/internal/db"
)

// Card states.
const (
	// CardCandidate waits for the main Session to route it.
	CardCandidate = "candidate"
	// CardFollowUp reached the Executors of the Tickets following its Thread.
	CardFollowUp = "follow_up"
	// CardRouted was attached to a Ticket or became one.
	CardRouted = "routed"
	// CardIgnored was judged irrelevant.
	CardIgnored = "ignored"
)

// Card kinds the host acts on itself, beyond routing: a pull request's end
// ends the Tickets whose pull request it is.
const (
	KindPullMerged = "pr_merged"
	KindPullClosed = "pr_closed"
)

// Author types.
const (
	AuthorUser = "user"
	AuthorBot  = "bot"
)

// DefaultTextLimit is the number of characters of text a card carries
// before it is truncated (the full text stays readable through the pointer).
const DefaultTextLimit = 4000

// Author identifies who produced the event behind a card.
type Author struct {
	// ID is the source's stable id (GitHub user id, Feishu open_id).
	ID string `json:"id"`
	// Login is the GitHub login; Name the display name where there is one.
	Login string `json:"login,omitempty"`
	Name  string `json:"name,omitempty"`
	// Type is AuthorUser or AuthorBot.
	Type string `json:"type"`
	// Permission is the author's level on the repository (admin, maintain,
	// write, triage, read, none) or "unknown" when it could not be read.
	Permission string `json:"permission,omitempty"`
}

// Reference is an explicit reference found in a card: an issue or pull
// request (Repo and Number), or a URL or message id elsewhere (Ref).
type Reference struct {
	Repo   string `json:"repo,omitempty"`
	Number int    `json:"number,omitempty"`
	Ref    string `json:"ref,omitempty"`
}

// String renders the reference compactly: owner/repo#12 or the ref.
func (r Reference) String() string {
	if r.Number > 0 {
		return r.Repo + "#" + strconv.Itoa(r.Number)
	}
	return r.Ref
}

// Card is a Trigger card: the compact, source-neutral, model-readable form
// of one delivery.
type Card struct {
	ID         int64  `json:"id"`
	DeliveryID int64  `json:"delivery,omitempty"`
	Source     string `json:"source"`
	// Kind says what happened: issue_opened, comment, review,
	// review_comment, check_failure, pr_state, push, message, …
	Kind   string `json:"kind"`
	Thread Thread `json:"thread"`
	Author Author `json:"author"`
	// Addressed is true when the bot is explicitly addressed; AddressedWhy
	// says how (mention, assignment, review_request, reply, direct_message).
	Addressed    bool        `json:"addressed"`
	AddressedWhy string      `json:"addressed_why,omitempty"`
	References   []Reference `json:"references,omitempty"`
	// URL links to the event on its source.
	URL string `json:"url,omitempty"`
	// Text is the outside text, truncated beyond the store's limit; when
	// Truncated, the full text is read through TextPointer.
	Text      string    `json:"text"`
	Truncated bool      `json:"truncated,omitempty"`
	TextChars int       `json:"text_chars"`
	State     string    `json:"state"`
	TicketID  int64     `json:"ticket,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// TextPointer names the resource from which the card's full text is read.
func (c Card) TextPointer() string { return "card:" + strconv.FormatInt(c.ID, 10) + "/text" }

// NewCard is what ingestion hands to Admit.
type NewCard struct {
	// DeliveryID links the card to its delivery; a second card for one
	// delivery is refused (ErrDuplicate).
	DeliveryID int64
	Source     string
	Kind       string
	// Thread is upserted by key.
	Thread       Thread
	Author       Author
	Addressed    bool
	AddressedWhy string
	References   []Reference
	URL          string
	// Text is the full outside text; Admit truncates it.
	Text string
	// FreshDelivery says the delivery was stored by the transaction that
	// admits the card, so it has no card yet: on PostgreSQL the card's row
	// may then wait to travel with the transaction's next statement or
	// its COMMIT, under an id read ahead (see ReadAheadAdmit).
	FreshDelivery bool
	// Related are keys of other Threads whose Tickets the card concerns
	// (a pull request that says it fixes an issue): their followers
	// receive it as a follow-up too. A key of no known Thread is skipped.
	Related []string
}

// relatedFollowers adds to ids, lowest first, the live Tickets that follow
// the Threads named by keys.
func (s *Store) relatedFollowers(ctx context.Context, q db.Querier, ids []int64, keys []string) ([]int64, error) {
	for _, key := range keys {
		th, err := s.ThreadByKey(ctx, q, key)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		more, err := s.Subscribers(ctx, q, th.ID)
		if err != nil {
			return nil, err
		}
		ids = append(ids, more...)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// Hook is told about every admitted card inside the transaction that
// admitted it, so it can enqueue work (the debounced route job) atomically.
type Hook interface {
	CardAdmitted(ctx context.Context, tx *db.Tx, card Card) error
}

// ReadAheadHook is a Hook that can have a transaction read ahead what it
// will read when a card is admitted (see db.Tx.ReadAhead), so that those
// reads travel with the statements before them.
type ReadAheadHook interface {
	Hook
	ReadAhead(tx *db.Tx)
}

// ReadAheadAdmit has tx read ahead, with its next statement, what Admit
// reads for a card on the Thread with key: the Thread and its followers
// (see ReadAheadThread), and what the hooks that can say read. Nothing
// changes on SQLite.
func (s *Store) ReadAheadAdmit(tx *db.Tx, key string, hooks ...Hook) {
	s.ReadAheadThread(tx, key)
	for _, h := range hooks {
		if h, ok := h.(ReadAheadHook); ok {
			h.ReadAhead(tx)
		}
	}
}

// SteadyHook is a Hook that can tell, before it runs for a card, whether
// it may end, stop or pause a Ticket or change what one follows. A Hook
// that cannot tell is taken to: what the transaction read of Threads'
// followers is then read again for its next card.
type SteadyHook interface {
	Hook
	MayChangeTickets(c Card) bool
}

func mayChangeTickets(hooks []Hook, c Card) bool {
	for _, h := range hooks {
		if s, ok := h.(SteadyHook); !ok || s.MayChangeTickets(c) {
			return true
		}
	}
	return false
}

// followersEpoch counts the moments in a transaction after which what it
// read of Threads and their followers may no longer stand: the hooks of a
// card that may change a Ticket ran, the bot spoke in a Thread. What was
// read in an earlier epoch is read again.
type followersEpoch struct{}

func epochOf(tx *db.Tx) int {
	v, _ := tx.Recall(followersEpoch{})
	n, _ := v.(int)
	return n
}

func newEpoch(tx *db.Tx) { tx.Remember(followersEpoch{}, epochOf(tx)+1) }

// HookFunc adapts a function to Hook.
type HookFunc func(ctx context.Context, tx *db.Tx, card Card) error

// CardAdmitted calls f.
func (f HookFunc) CardAdmitted(ctx context.Context, tx *db.Tx, card Card) error {
	return f(ctx, tx, card)
}

// ErrDuplicate is returned by Admit when the delivery already has a card.
var ErrDuplicate = errors.New("delivery already has a card")

// Admit stores a card inside tx: it upserts the card's Thread, stores the
// card (truncated to limit characters, the full text kept), decides whether
// it is a follow-up for the Tickets following the Thread (writing a notice
// for each) or a candidate, and calls the hooks. limit <= 0 means
// DefaultTextLimit.
func (s *Store) Admit(ctx context.Context, tx *db.Tx, in NewCard, limit int, hooks ...Hook) (Card, error) {
	if limit <= 0 {
		limit = DefaultTextLimit
	}
	thread, subscribers, err := s.admitThread(ctx, tx, in.Thread)
	if err != nil {
		return Card{}, err
	}
	if in.Author.Type == "" {
		in.Author.Type = AuthorUser
	}
	// A reply in a Thread where the bot spoke addresses it.
	if !in.Addressed && thread.BotSpoke && in.Author.Type == AuthorUser {
		in.Addressed, in.AddressedWhy = true, "reply"
	}
	if subscribers, err = s.relatedFollowers(ctx, tx, subscribers, in.Related); err != nil {
		return Card{}, err
	}
	text, truncated := Truncate(in.Text, limit)
	var full sql.NullString
	if truncated {
		full = sql.NullString{String: in.Text, Valid: true}
	}
	refs := in.References
	if refs == nil {
		refs = []Reference{}
	}
	refsJSON, err := json.Marshal(refs)
	if err != nil {
		return Card{}, fmt.Errorf("encoding card references: %w", err)
	}
	c := Card{
		DeliveryID: in.DeliveryID, Source: in.Source, Kind: in.Kind, Thread: thread,
		Author: in.Author, Addressed: in.Addressed, AddressedWhy: in.AddressedWhy,
		References: in.References, URL: in.URL, Text: text, Truncated: truncated,
		TextChars: utf8.RuneCountInString(in.Text), State: CardCandidate, CreatedAt: s.nowUTC(),
	}
	var ticket sql.NullInt64
	if len(subscribers) > 0 {
		c.State, c.TicketID = CardFollowUp, subscribers[0]
		ticket = sql.NullInt64{Int64: subscribers[0], Valid: true}
	}
	var delivery sql.NullInt64
	if in.DeliveryID != 0 {
		delivery = sql.NullInt64{Int64: in.DeliveryID, Valid: true}
	}
	values := []any{delivery, c.Source, c.Kind, thread.ID, c.Author.ID, c.Author.Login, c.Author.Name, c.Author.Type,
		c.Author.Permission, c.Addressed, c.AddressedWhy, string(refsJSON), c.URL, c.Text, c.Truncated, full,
		c.State, ticket, c.CreatedAt}
	later := false
	if in.FreshDelivery && in.DeliveryID != 0 {
		if c.ID, later, err = s.cardID(ctx, tx); err != nil {
			return Card{}, fmt.Errorf("storing card for delivery %d: %w", in.DeliveryID, err)
		}
	}
	if later {
		// The delivery is this transaction's own, so no card of it can
		// exist: nobody needs to wait for the row to be written.
		err = tx.ExecLater(ctx, `
INSERT INTO cards (id, `+cardColumns+`) OVERRIDING SYSTEM VALUE
VALUES ($20, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`, append(values, c.ID)...)
	} else {
		err = tx.QueryRow(ctx, `
INSERT INTO cards (`+cardColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
ON CONFLICT (delivery_id) DO NOTHING
RETURNING id`, values...).Scan(&c.ID)
	}
	if errors.Is(err, db.ErrNoRows) {
		return Card{}, fmt.Errorf("storing card for delivery %d: %w", in.DeliveryID, ErrDuplicate)
	}
	if err != nil {
		return Card{}, fmt.Errorf("storing card for delivery %d: %w", in.DeliveryID, err)
	}
	for _, t := range subscribers {
		const notice = `
INSERT INTO follow_up_notices (card_id, ticket_id, created_at) VALUES ($1, $2, $3)
ON CONFLICT (card_id, ticket_id) DO NOTHING`
		if later {
			err = tx.ExecLater(ctx, notice, c.ID, t, c.CreatedAt)
		} else {
			_, err = tx.Exec(ctx, notice, c.ID, t, c.CreatedAt)
		}
		if err != nil {
			return Card{}, fmt.Errorf("writing follow-up notice of card %d for ticket %d: %w", c.ID, t, err)
		}
	}
	if mayChangeTickets(hooks, c) {
		newEpoch(tx)
	}
	for _, h := range hooks {
		if err := h.CardAdmitted(ctx, tx, c); err != nil {
			return Card{}, fmt.Errorf("card %d hook: %w", c.ID, err)
		}
	}
	return c, nil
}

const cardColumns = `delivery_id, source, kind, thread_id, author_id, author_login, author_name, author_type,
    author_permission, addressed, addressed_why, refs, url, text, text_truncated, full_text, state, ticket_id, created_at`

// cardIDs counts the card ids a transaction had read ahead and has used;
// cardIDAhead is the key of the nth.
type (
	cardIDs     struct{ queued, used int }
	cardIDsKey  struct{}
	cardIDAhead struct{ n int }
)

const nextCardID = `SELECT nextval(pg_get_serial_sequence('cards', 'id'))`

func scanID(rows db.Rows) (any, error) {
	var id int64
	if !rows.Next() {
		return nil, errors.New("the sequence gave no card id")
	}
	if err := rows.Scan(&id); err != nil {
		return nil, err
	}
	return id, nil
}

// ReadAheadCardID has tx read ahead an id for a card of a fresh delivery
// it is about to store (see NewCard.FreshDelivery). An id read ahead and
// not used is a gap in the cards' ids, as after a rollback: read one only
// for a card that will be made. Nothing changes on SQLite.
func (s *Store) ReadAheadCardID(tx *db.Tx) {
	v, _ := tx.Recall(cardIDsKey{})
	ids, _ := v.(cardIDs)
	tx.ReadAhead(cardIDAhead{ids.queued}, nextCardID, nil, scanID)
	ids.queued++
	tx.Remember(cardIDsKey{}, ids)
}

// cardID returns the next card id tx read ahead; ok is false when none is
// left (always on SQLite).
func (s *Store) cardID(ctx context.Context, tx *db.Tx) (id int64, ok bool, err error) {
	v, _ := tx.Recall(cardIDsKey{})
	ids, _ := v.(cardIDs)
	if ids.used == ids.queued {
		return 0, false, nil
	}
	got, ok, err := tx.Ahead(ctx, cardIDAhead{ids.used})
	ids.used++
	tx.Remember(cardIDsKey{}, ids)
	if !ok || err != nil {
		return 0, false, err
	}
	return got.(int64), true, nil
}

// threadMemo is the key under which a transaction remembers the Thread it
// upserted for a card, with what it was upserted from and its followers
// as read in epoch.
type threadMemo struct{ key string }

type upserted struct {
	in, out   Thread
	followers []int64
	epoch     int
}

// admitThread returns a card's Thread, upserted when the card brings it
// something new, and the live Tickets following it. The Thread is written
// once per transaction for cards that bring it the same facts: a batch of
// comments on one issue writes its row once, and does not hold that row's
// lock longer than it must, and reads its followers once unless a card
// between may have changed them. A card on a Thread it leaves as it is
// costs one read for both.
func (s *Store) admitThread(ctx context.Context, tx *db.Tx, in Thread) (Thread, []int64, error) {
	epoch := epochOf(tx)
	if v, ok := tx.Recall(threadMemo{in.Key}); ok && v.(upserted).in == in {
		m := v.(upserted)
		if m.epoch != epoch {
			var err error
			if m.followers, err = s.followersOf(ctx, tx, m.out.ID, m.out.Key, live); err != nil {
				return Thread{}, nil, err
			}
			m.epoch = epoch
			tx.Remember(threadMemo{in.Key}, m)
		}
		return m.out, slices.Clone(m.followers), nil
	}
	cur, followers, err := s.threadWithFollowers(ctx, tx, in.Key)
	found := err == nil
	switch {
	case found && !cur.refreshedBy(in):
	case found || errors.Is(err, ErrNotFound):
		if cur, err = s.writeThread(ctx, tx, in); err != nil {
			return Thread{}, nil, err
		}
	default:
		return Thread{}, nil, err
	}
	if !found {
		// A new review thread is followed through its pull request.
		if followers, err = s.followersOf(ctx, tx, cur.ID, cur.Key, live); err != nil {
			return Thread{}, nil, err
		}
	}
	tx.Remember(threadMemo{in.Key}, upserted{in: in, out: cur, followers: slices.Clone(followers), epoch: epoch})
	return cur, followers, nil
}

// FollowUpTickets lists the Tickets a follow-up card went to.
func (s *Store) FollowUpTickets(ctx context.Context, q db.Querier, cardID int64) ([]int64, error) {
	rows, err := q.Query(ctx, "SELECT ticket_id FROM follow_up_notices WHERE card_id = $1 ORDER BY ticket_id", cardID)
	if err != nil {
		return nil, fmt.Errorf("listing follow-up tickets of card %d: %w", cardID, err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("listing follow-up tickets of card %d: %w", cardID, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing follow-up tickets of card %d: %w", cardID, err)
	}
	return ids, nil
}

// Truncate cuts text to at most limit characters (runes, never splitting
// one) and reports whether it cut anything.
func Truncate(text string, limit int) (string, bool) {
	if limit <= 0 || utf8.RuneCountInString(text) <= limit {
		return text, false
	}
	n := 0
	for i := range text {
		if n == limit {
			return text[:i], true
		}
		n++
	}
	return text, false
}

const cardSelect = `
SELECT c.id, COALESCE(c.delivery_id, 0), c.source, c.kind,
    th.id, th.source, th.key, th.repo, th.number, th.title, th.head_ref, th.bot_spoke, th.created_at, th.updated_at,
    c.author_id, c.author_login, c.author_name, c.author_type, c.author_permission,
    c.addressed, c.addressed_why, c.refs, c.url, c.text, c.text_truncated,
    COALESCE(LENGTH(c.full_text), LENGTH(c.text)), c.state, COALESCE(c.ticket_id, 0), c.created_at
FROM cards c JOIN threads th ON th.id = c.thread_id`

func scanCard(row scanner) (Card, error) {
	var c Card
	var refs string
	t := &c.Thread
	err := row.Scan(&c.ID, &c.DeliveryID, &c.Source, &c.Kind,
		&t.ID, &t.Source, &t.Key, &t.Repo, &t.Number, &t.Title, &t.HeadRef, &t.BotSpoke, &t.CreatedAt, &t.UpdatedAt,
		&c.Author.ID, &c.Author.Login, &c.Author.Name, &c.Author.Type, &c.Author.Permission,
		&c.Addressed, &c.AddressedWhy, &refs, &c.URL, &c.Text, &c.Truncated,
		&c.TextChars, &c.State, &c.TicketID, &c.CreatedAt)
	if err != nil {
		return Card{}, err
	}
	if refs != "" && refs != "[]" {
		if err := json.Unmarshal([]byte(refs), &c.References); err != nil {
			return Card{}, fmt.Errorf("decoding references of card %d: %w", c.ID, err)
		}
	}
	return c, nil
}

// Card reads one card.
func (s *Store) Card(ctx context.Context, q db.Querier, id int64) (Card, error) {
	c, err := scanCard(q.QueryRow(ctx, cardSelect+" WHERE c.id = $1", id))
	if errors.Is(err, db.ErrNoRows) {
		return Card{}, fmt.Errorf("reading card %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Card{}, fmt.Errorf("reading card %d: %w", id, err)
	}
	return c, nil
}

// CardByDelivery reads the card made from a delivery.
func (s *Store) CardByDelivery(ctx context.Context, q db.Querier, deliveryID int64) (Card, error) {
	c, err := scanCard(q.QueryRow(ctx, cardSelect+" WHERE c.delivery_id = $1", deliveryID))
	if errors.Is(err, db.ErrNoRows) {
		return Card{}, fmt.Errorf("reading card of delivery %d: %w", deliveryID, ErrNotFound)
	}
	if err != nil {
		return Card{}, fmt.Errorf("reading card of delivery %d: %w", deliveryID, err)
	}
	return c, nil
}

// ListCards returns the newest cards first, at most limit of them.
func (s *Store) ListCards(ctx context.Context, q db.Querier, limit int) ([]Card, error) {
	return s.listCards(ctx, q, cardSelect+" ORDER BY c.id DESC LIMIT $1", limit)
}

// Candidates returns the cards waiting to be routed, oldest first.
func (s *Store) Candidates(ctx context.Context, q db.Querier, limit int) ([]Card, error) {
	return s.listCards(ctx, q, cardSelect+" WHERE c.state = 'candidate' ORDER BY c.id LIMIT $1", limit)
}

func (s *Store) listCards(ctx context.Context, q db.Querier, query string, args ...any) ([]Card, error) {
	return queryAll(ctx, q, "listing cards", scanCard, query, args...)
}

// FullText returns a card's whole text, the target of its TextPointer.
func (s *Store) FullText(ctx context.Context, q db.Querier, id int64) (string, error) {
	var text string
	err := q.QueryRow(ctx, "SELECT COALESCE(full_text, text) FROM cards WHERE id = $1", id).Scan(&text)
	if errors.Is(err, db.ErrNoRows) {
		return "", fmt.Errorf("reading text of card %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("reading text of card %d: %w", id, err)
	}
	return text, nil
}

// SetCardState moves a card to a new state, linking it to a Ticket when
// ticketID is not zero.
func (s *Store) SetCardState(ctx context.Context, q db.Querier, id int64, state string, ticketID int64) error {
	var ticket sql.NullInt64
	if ticketID != 0 {
		ticket = sql.NullInt64{Int64: ticketID, Valid: true}
	}
	n, err := q.Exec(ctx, "UPDATE cards SET state = $2, ticket_id = COALESCE($3, ticket_id) WHERE id = $1", id, state, ticket)
	if err != nil {
		return fmt.Errorf("setting card %d to %s: %w", id, state, err)
	}
	if n == 0 {
		return fmt.Errorf("setting card %d to %s: %w", id, state, ErrNotFound)
	}
	return nil
}
