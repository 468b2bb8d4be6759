package tickets

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/internal/db"
)

// Budget is what a Ticket's Executor Sessions may spend together: tokens
// (input, cache reads and writes, output) and cost, in the model prices'
// currency. Zero in a field is no cap.
type Budget struct {
	Tokens int64   `json:"tokens,omitempty"`
	Cost   float64 `json:"cost,omitempty"`
}

// IsZero reports whether b caps nothing.
func (b Budget) IsZero() bool { return b.Tokens <= 0 && b.Cost <= 0 }

// String says b in words: "20,000,000 tokens", "cost 5.00", both joined
// by "and", or "no cap".
func (b Budget) String() string {
	var parts []string
	if b.Tokens > 0 {
		parts = append(parts, Thousands(b.Tokens)+" tokens")
	}
	if b.Cost > 0 {
		parts = append(parts, fmt.Sprintf("cost %.2f", b.Cost))
	}
	if len(parts) == 0 {
		return "no cap"
	}
	return strings.Join(parts, " and ")
}

// Thousands writes n with a comma between each group of three digits.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// TicketBudget is the budget a Ticket was given, and a raise a person
// asked for that waits for the Ticket's next Session.
type TicketBudget struct {
	TicketID int64
	Budget
	// Raise is how much more a person allowed on a continue: the
	// Executor adds it to what is spent when it starts the new Session.
	Raise     Budget
	SetBy     string
	UpdatedAt time.Time
}

// TicketBudget reads the budget a Ticket was given; ok is false for a
// Ticket that has the deployment's default.
func (s *Store) TicketBudget(ctx context.Context, q db.Querier, ticketID int64) (TicketBudget, bool, error) {
	b := TicketBudget{TicketID: ticketID}
	err := q.QueryRow(ctx, `SELECT tokens, cost, raise_tokens, raise_cost, set_by, updated_at FROM ticket_budgets WHERE ticket_id = $1`, ticketID).
		Scan(&b.Tokens, &b.Cost, &b.Raise.Tokens, &b.Raise.Cost, &b.SetBy, &b.UpdatedAt)
	if errors.Is(err, db.ErrNoRows) {
		return b, false, nil
	}
	if err != nil {
		return b, false, fmt.Errorf("reading the budget of ticket %d: %w", ticketID, err)
	}
	b.UpdatedAt = b.UpdatedAt.UTC()
	return b, true, nil
}

// SetBudget gives a Ticket its budget and clears any raise waiting.
func (s *Store) SetBudget(ctx context.Context, q db.Querier, ticketID int64, b Budget, by string) error {
	_, err := q.Exec(ctx, `INSERT INTO ticket_budgets (ticket_id, tokens, cost, raise_tokens, raise_cost, set_by, updated_at)
VALUES ($1, $2, $3, 0, 0, $4, $5) ON CONFLICT (ticket_id) DO UPDATE SET tokens = $2, cost = $3, raise_tokens = 0, raise_cost = 0,
set_by = $4, updated_at = $5`, ticketID, b.Tokens, b.Cost, by, s.nowUTC())
	if err != nil {
		return fmt.Errorf("setting the budget of ticket %d: %w", ticketID, err)
	}
	return nil
}

// RaiseBudget records a person's raise of a Ticket's budget, to be added
// to what is spent when its next Session starts; the Ticket keeps its
// budget until then. An empty raise records nothing.
func (s *Store) RaiseBudget(ctx context.Context, q db.Querier, ticketID int64, raise Budget, by string) error {
	if raise.IsZero() {
		return nil
	}
	_, err := q.Exec(ctx, `INSERT INTO ticket_budgets (ticket_id, tokens, cost, raise_tokens, raise_cost, set_by, updated_at)
VALUES ($1, 0, 0, $2, $3, $4, $5) ON CONFLICT (ticket_id) DO UPDATE SET raise_tokens = $2, raise_cost = $3, set_by = $4, updated_at = $5`,
		ticketID, max(raise.Tokens, 0), max(raise.Cost, 0), by, s.nowUTC())
	if err != nil {
		return fmt.Errorf("raising the budget of ticket %d: %w", ticketID, err)
	}
	return nil
}

// ErrBudget is returned by ParseBudget for text that names a budget it
// cannot read.
var ErrBudget = errors.New(`a budget reads like "budget 20M tokens" or "budget $5"`)

// maxBudgetTokens bounds a budget a person gives: larger is a typo.
const maxBudgetTokens = 1 << 40

// ParseBudget finds a budget in a person's words, as they follow a
// continue: "budget 20M tokens", "20000000 tokens", "$5", "5 USD",
// "budget 2.5m", or both ("budget 20M tokens and $5"). A number needs a
// unit (tokens, $, USD) unless it follows the word "budget", when it is
// tokens. ok is false when the text names no budget; an error says
// "budget" comes before a number or amount that cannot be read.
func ParseBudget(text string) (b Budget, ok bool, err error) {
	words := strings.Fields(strings.ToLower(text))
	mentioned := false
	for i := 0; i < len(words); i++ {
		w := strings.Trim(words[i], ",.;:!?()")
		if w == "budget" || w == "budget:" {
			// Only "budget" before a number or an amount speaks of one.
			if i+1 < len(words) && strings.IndexAny(words[i+1][:1], "0123456789$") == 0 {
				mentioned = true
			}
			continue
		}
		next := func(k int) string {
			if i+k < len(words) {
				return strings.Trim(words[i+k], ",.;:!?()")
			}
			return ""
		}
		switch {
		case strings.HasPrefix(w, "$"):
			v, err := strconv.ParseFloat(strings.TrimPrefix(w, "$"), 64)
			if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return Budget{}, false, ErrBudget
			}
			b.Cost, ok = v, true
			continue
		case strings.HasSuffix(w, "$") && len(w) > 1:
			v, err := strconv.ParseFloat(strings.TrimSuffix(w, "$"), 64)
			if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return Budget{}, false, ErrBudget
			}
			b.Cost, ok = v, true
			continue
		}
		n, isNumber := number(w)
		if !isNumber {
			continue
		}
		used := 0
		switch next(1) {
		case "thousand":
			n, used = n*1e3, 1
		case "million":
			n, used = n*1e6, 1
		case "billion":
			n, used = n*1e9, 1
		}
		unit := next(1 + used)
		previous := ""
		if i > 0 {
			previous = strings.Trim(words[i-1], ",.;:!?()")
		}
		switch {
		case unit == "tokens" || unit == "token":
		case unit == "usd" || unit == "dollars" || unit == "dollar" || unit == "$":
			if n <= 0 || math.IsInf(n, 0) {
				return Budget{}, false, ErrBudget
			}
			b.Cost, ok = n, true
			i += used + 1
			continue
		case previous == "budget" || previous == "budget:":
			unit = ""
		default:
			continue
		}
		if n < 1 || n > maxBudgetTokens {
			return Budget{}, false, ErrBudget
		}
		b.Tokens, ok = int64(n), true
		if unit != "" {
			used++
		}
		i += used
	}
	if mentioned && !ok {
		return Budget{}, false, ErrBudget
	}
	return b, ok, nil
}

// number reads "20", "2.5", "20k", "20m", "1.5b".
func number(w string) (float64, bool) {
	mult := 1.0
	switch {
	case strings.HasSuffix(w, "k"):
		mult, w = 1e3, strings.TrimSuffix(w, "k")
	case strings.HasSuffix(w, "m"):
		mult, w = 1e6, strings.TrimSuffix(w, "m")
	case strings.HasSuffix(w, "b"):
		mult, w = 1e9, strings.TrimSuffix(w, "b")
	}
	w = strings.ReplaceAll(w, ",", "")
	if w == "" || (w[0] < '0' || w[0] > '9') {
		return 0, false
	}
	v, err := strconv.ParseFloat(w, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v * mult, true
}
