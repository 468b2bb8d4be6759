package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/superagent-dev/superagent/internal/httpserver"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// Defaults of the live Ticket page's stream.
const (
	// DefaultMaxStreams is how many live streams the panel serves at once
	// when Config sets no MaxStreams.
	DefaultMaxStreams = 32
	// DefaultMaxStreamsPerSession is how many of them one session may hold
	// when Config sets no MaxStreamsPerSession: a few tabs.
	DefaultMaxStreamsPerSession = 4
	// DefaultStreamPoll is how often a stream reads the database when
	// Config sets no StreamPoll.
	DefaultStreamPoll = time.Second
	// liveMessages is how many transcript entries the page shows and a
	// stream sends at once.
	liveMessages = 50
	// keepAlive is how often an idle stream sends a comment, so proxies do
	// not close it.
	keepAlive = 15 * time.Second
)

// liveState is what the live Ticket page shows at the top: the Ticket's
// state, the step its Executor is at and what its Sessions used. The
// stream sends it whenever it changes; every text in it comes from the
// database, where the Sessions' store scrubbed it.
type liveState struct {
	State string `json:"state"`
	// Hold says who paused or stopped the Ticket, when someone did.
	Hold     string    `json:"hold,omitempty"`
	Step     string    `json:"step,omitempty"`
	StepNote string    `json:"step_note,omitempty"`
	Session  string    `json:"session,omitempty"`
	Usage    string    `json:"usage"`
	Updated  time.Time `json:"updated"`
}

// liveEntry is one transcript message as the live page lists it.
type liveEntry struct {
	ID      int64    `json:"id"`
	Role    string   `json:"role"`
	When    string   `json:"when"`
	Content string   `json:"content,omitempty"`
	Calls   []string `json:"calls,omitempty"`
}

// maxEntryChars caps an entry's text on the live page; the full text is in
// the Sessions section.
const maxEntryChars = 2000

func toEntry(m session.Message) liveEntry {
	e := liveEntry{ID: m.ID, Role: m.Role, When: when(m.CreatedAt), Content: m.Content}
	if r := []rune(e.Content); len(r) > maxEntryChars {
		e.Content = string(r[:maxEntryChars]) + "…"
	}
	for _, c := range m.ToolCalls {
		e.Calls = append(e.Calls, session.StepSummary(c.Name, c.Arguments))
	}
	return e
}

// liveView reads the live state of a Ticket.
func (a *Admin) liveView(ctx context.Context, t tickets.Ticket) (liveState, error) {
	v := liveState{State: t.State, Updated: t.UpdatedAt}
	switch {
	case t.Stop != nil:
		v.Hold = "Stopped by " + a.actorName(ctx, t.ID, t.Stop.By)
	case t.Pause != nil:
		v.Hold = "Paused by " + a.actorName(ctx, t.ID, t.Pause.By)
	}
	st := a.deps.Sessions
	if st == nil {
		return v, nil
	}
	steps, err := st.TicketSteps(ctx, a.db, t.ID, 0, 1)
	if err != nil {
		return v, err
	}
	if len(steps) > 0 {
		v.Step = steps[0].Summary
		v.StepNote = "finished " + when(steps[0].StartedAt)
		if steps[0].Running() {
			v.StepNote = "running since " + when(steps[0].StartedAt)
		} else if steps[0].State != "done" {
			v.StepNote = steps[0].State
		}
	}
	sessions, err := st.ForTicket(ctx, a.db, t.ID)
	if err != nil {
		return v, err
	}
	if n := len(sessions); n > 0 {
		s := sessions[n-1]
		v.Session = fmt.Sprintf("Session %d: %s", s.ID, s.State)
		if s.StateReason != "" {
			v.Session += " (" + s.StateReason + ")"
		}
	}
	tot, err := st.TicketTotals(ctx, a.db, t.ID)
	if err != nil {
		return v, err
	}
	u := tot.Usage
	v.Usage = fmt.Sprintf("%d model requests: %d input, %d cached, %d output tokens", tot.Requests, u.Input, u.CacheRead, u.Output)
	if u.Cost > 0 {
		v.Usage += fmt.Sprintf("; cost %.4f", u.Cost)
	}
	return v, nil
}

// liveEntries lists the transcript entries after cursor, newest first.
func (a *Admin) liveEntries(ctx context.Context, ticketID, cursor int64) ([]liveEntry, error) {
	if a.deps.Sessions == nil {
		return nil, nil
	}
	msgs, err := a.deps.Sessions.TicketMessages(ctx, a.db, ticketID, cursor, liveMessages)
	if err != nil {
		return nil, err
	}
	out := make([]liveEntry, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, toEntry(m))
	}
	return out, nil
}

// streams bounds the live streams, overall and per session, and ends
// them when the process shuts down.
type streams struct {
	slots chan struct{}
	done  chan struct{}
	once  sync.Once

	perSession int
	mu         sync.Mutex
	held       map[string]int // session (IDSHA256) → its open streams
}

func newStreams(n, perSession int) *streams {
	return &streams{slots: make(chan struct{}, n), done: make(chan struct{}), perSession: perSession, held: map[string]int{}}
}

// take holds a stream for session, or says which bound refused it.
func (s *streams) take(session string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[session] >= s.perSession {
		return nil, &httpserver.Error{Status: http.StatusTooManyRequests,
			Message: fmt.Sprintf("You have %d live pages open already; close one, or this one updates on reload.", s.perSession)}
	}
	select {
	case s.slots <- struct{}{}:
	default:
		return nil, httpserver.Errorf(http.StatusServiceUnavailable, "Too many live pages are open; this one updates on reload.")
	}
	s.held[session]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.held[session]--; s.held[session] <= 0 {
			delete(s.held, session)
		}
		<-s.slots
	}, nil
}

// CloseStreams ends every live stream and refuses new ones; main calls it
// when the HTTP server starts shutting down (http.Server.RegisterOnShutdown),
// since a stream would otherwise hold the shutdown until its deadline.
func (a *Admin) CloseStreams() {
	a.streams.once.Do(func() { close(a.streams.done) })
}

// getTicketEvents streams a Ticket's live state as server-sent events: an
// "update" event with the state (liveState) and the transcript entries
// after the cursor (the query's after, or the Last-Event-ID a reconnecting
// browser sends), then one whenever either changes. It ends with a "bye"
// whose reason is "session" when the session that opened it ends, or
// "shutdown". The source of truth is
// the database, read every StreamPoll, so a Session that runs in another
// process (a worker) streams the same.
func (a *Admin) getTicketEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := a.ticketID(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	_, err = a.deps.Tickets.Ticket(ctx, a.db, id)
	if errors.Is(err, tickets.ErrNotFound) {
		return &httpserver.Error{Status: http.StatusNotFound, Message: "There is no such Ticket.", Err: err}
	}
	if err != nil {
		return err
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		return httpserver.Errorf(http.StatusNotImplemented, "Streaming is not available here.")
	}
	select {
	case <-a.streams.done:
		return httpserver.Errorf(http.StatusServiceUnavailable, "The server is shutting down.")
	default:
	}
	release, err := a.streams.take(currentSession(ctx).IDSHA256)
	if err != nil {
		w.Header().Set("Retry-After", "10")
		return err
	}
	defer release()
	cookie := cookieID(r)
	cursor := parseCursor(r.Header.Get("Last-Event-ID"))
	if cursor == 0 {
		cursor = parseCursor(r.URL.Query().Get("after"))
	}
	// The page's stream lasts as long as the page: it is exempt from the
	// server's write deadline, which each of its writes gets instead.
	httpserver.StreamWrites(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()

	var last []byte
	tick := time.NewTicker(a.cfg.StreamPoll)
	defer tick.Stop()
	idle := time.Now()
	bye := func(reason string) {
		_, _ = fmt.Fprintf(w, "event: bye\ndata: {\"reason\":%q}\n\n", reason)
		flusher.Flush()
	}
	for {
		// The session is read again on every poll: a page stops when its
		// session ends (signed out, expired, or its grant gone).
		if _, err := a.liveSession(ctx, cookie, false); isNoSession(err) {
			bye("session")
			return nil
		} else if err != nil {
			return a.streamEnd(ctx, err)
		}
		t, err := a.deps.Tickets.Ticket(ctx, a.db, id)
		if err != nil {
			return a.streamEnd(ctx, err)
		}
		v, err := a.liveView(ctx, t)
		if err != nil {
			return a.streamEnd(ctx, err)
		}
		entries, err := a.liveEntries(ctx, id, cursor)
		if err != nil {
			return a.streamEnd(ctx, err)
		}
		state, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if len(entries) > 0 || !slices.Equal(state, last) {
			if len(entries) > 0 {
				cursor = entries[0].ID
			}
			body, err := json.Marshal(map[string]any{"state": v, "entries": entries})
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "id: %d\nevent: update\ndata: %s\n\n", cursor, body); err != nil {
				return nil //nolint:nilerr // the browser went away
			}
			flusher.Flush()
			last, idle = state, time.Now()
		} else if time.Since(idle) >= keepAlive {
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return nil //nolint:nilerr // the browser went away
			}
			flusher.Flush()
			idle = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.streams.done:
			bye("shutdown")
			return nil
		case <-tick.C:
		}
	}
}

// streamEnd ends a stream after a failed read: a closed browser is not an
// error, anything else is logged (the headers are gone, so no error page).
func (a *Admin) streamEnd(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		a.cfg.Logger.Error("live ticket stream", "error", err)
	}
	return nil
}

func parseCursor(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
