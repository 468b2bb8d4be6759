// Package tickets owns the conversation side of superagent's data: Threads
// (the places where conversations happen), Trigger cards (the compact,
// source-neutral form of every incoming event), Tickets (units of work) with
// their origin, Mandate, pauses and subscriptions to Threads, the Reports
// and hand-backs their Executors send, the follow-up notices that tell the
// main Session a card reached a Ticket, and the log of every message the
// service sent (recorded as an intent before it is sent).
//
// Store methods take a db.Querier so that callers compose them inside their
// own transaction: ingestion writes a delivery's card, its Thread and the
// candidate-or-follow-up decision atomically through Admit.
package tickets

import "time"

// Store reads and writes cards, Threads, Tickets and subscriptions.
type Store struct {
	now func() time.Time
}

// Config tunes a Store. The zero value is the documented default.
type Config struct {
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// New returns a Store.
func New(cfg Config) *Store {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{now: cfg.Now}
}

func (s *Store) nowUTC() time.Time { return s.now().UTC() }

// Sources of cards and Threads.
const (
	SourceGitHub = "github"
	SourceFeishu = "feishu"
)

// scanner is what Row and Rows share.
type scanner interface {
	Scan(dest ...any) error
}
