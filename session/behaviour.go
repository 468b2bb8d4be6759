package session

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
)

// Behaviour is how one model behaved in a Ticket's Sessions, read from
// what the Sessions stored: the same events the superagent_model_*
// behaviour metrics count, for one Ticket.
type Behaviour struct {
	// Model is the configured model the Sessions' requests named.
	Model    string
	Sessions int
	Requests int
	// Refusals counts the host's refusals of the model's calls, by kind
	// (RefusalKind).
	Refusals map[string]int
	// Nudges counts the reminders of a turn ended with work undone;
	// Unfinished the Sessions stopped because a turn ended so again.
	Nudges, Unfinished int
	// RepeatNotes and StallNotes count the host's notes on a call
	// repeated with the same result and on requests without progress;
	// RepeatsStopped and StallsStopped the Sessions wrapped up for them.
	RepeatNotes, StallNotes, RepeatsStopped, StallsStopped int
	// Faults counts the unusable answers asked for again, by kind
	// (model.Fault kinds and empty_handoff).
	Faults map[string]int
}

// Total is the number of refusals, or of faults.
func Total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TicketBehaviour sums, per model, how the models of a Ticket's Sessions
// behaved. A Session counts for the model that made most of its requests.
func (st *Store) TicketBehaviour(ctx context.Context, q db.Querier, ticketID int64) ([]Behaviour, error) {
	sessions, err := st.ForTicket(ctx, q, ticketID)
	if err != nil {
		return nil, err
	}
	type perSession struct {
		models map[string]int
		faults map[string]int
		b      Behaviour
	}
	by := map[int64]*perSession{}
	for _, s := range sessions {
		p := &perSession{models: map[string]int{}, faults: map[string]int{}, b: Behaviour{Refusals: map[string]int{}}}
		reason := strings.TrimPrefix(s.StateReason, "reported: ")
		switch reason {
		case ReasonUnfinished:
			p.b.Unfinished++
		case ReasonRepeatedCall:
			p.b.RepeatsStopped++
		case ReasonNoProgress:
			p.b.StallsStopped++
		}
		by[s.ID] = p
	}
	scan := func(what, query string, each func(p *perSession, a, b string)) error {
		rows, err := q.Query(ctx, query, ticketID)
		if err != nil {
			return fmt.Errorf("reading the %s of ticket %d: %w", what, ticketID, err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id   int64
				a, b string
			)
			if err := rows.Scan(&id, &a, &b); err != nil {
				return fmt.Errorf("reading the %s of ticket %d: %w", what, ticketID, err)
			}
			if p := by[id]; p != nil {
				each(p, a, b)
			}
		}
		return rows.Err()
	}
	err = scan("model requests", `SELECT r.session_id, r.model, r.finish_reason FROM session_requests r
JOIN sessions s ON s.id = r.session_id WHERE s.ticket_id = $1`, func(p *perSession, modelName, finish string) {
		p.models[modelName]++
		p.b.Requests++
		if k := FaultKind(finish); k != "" {
			p.faults[k]++
		}
	})
	if err != nil {
		return nil, err
	}
	err = scan("refused calls", `SELECT c.session_id, c.name, SUBSTR(m.content, 1, 80) FROM session_tool_calls c
JOIN sessions s ON s.id = c.session_id
JOIN session_messages m ON m.session_id = c.session_id AND m.tool_call_id = c.call_id AND m.role = 'tool'
WHERE s.ticket_id = $1 AND c.state = 'refused'`, func(p *perSession, _, result string) {
		p.b.Refusals[RefusalKind(result)]++
	})
	if err != nil {
		return nil, err
	}
	err = scan("host notes", `SELECT m.session_id, m.role, SUBSTR(m.content, 1, 40) FROM session_messages m
JOIN sessions s ON s.id = m.session_id WHERE s.ticket_id = $1 AND m.role = 'user' AND m.content LIKE 'host: %'`,
		func(p *perSession, _, head string) {
			switch inbound(head) {
			case eventNudge:
				p.b.Nudges++
			case eventRepeat:
				p.b.RepeatNotes++
			case eventStall:
				p.b.StallNotes++
			}
		})
	if err != nil {
		return nil, err
	}
	out := map[string]*Behaviour{}
	for _, p := range by {
		name, most := "", 0
		for m, n := range p.models {
			if n > most || (n == most && m < name) {
				name, most = m, n
			}
		}
		b := out[name]
		if b == nil {
			b = &Behaviour{Model: name, Refusals: map[string]int{}, Faults: map[string]int{}}
			out[name] = b
		}
		b.Sessions++
		b.Requests += p.b.Requests
		b.Nudges += p.b.Nudges
		b.Unfinished += p.b.Unfinished
		b.RepeatNotes += p.b.RepeatNotes
		b.StallNotes += p.b.StallNotes
		b.RepeatsStopped += p.b.RepeatsStopped
		b.StallsStopped += p.b.StallsStopped
		for k, v := range p.b.Refusals {
			b.Refusals[k] += v
		}
		for k, v := range p.faults {
			b.Faults[k] += v
		}
	}
	list := make([]Behaviour, 0, len(out))
	for _, b := range out {
		list = append(list, *b)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Model < list[j].Model })
	return list, nil
}
