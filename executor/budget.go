package executor

import (
	"context"
	"fmt"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// defaultBudget is the budget of a Ticket nobody gave one: the
// deployment's (Config.Session's TokenBudget and CostBudget).
func (e *Executor) defaultBudget() tickets.Budget {
	return tickets.Budget{Tokens: e.cfg.Session.TokenBudget, Cost: e.cfg.Session.CostBudget}
}

// Budget is the most a Ticket's Executor Sessions may spend together: the
// budget it was given, field by field, or else the default.
func (e *Executor) Budget(ctx context.Context, q db.Querier, ticketID int64) (tickets.Budget, error) {
	b := e.defaultBudget()
	own, ok, err := e.deps.Tickets.TicketBudget(ctx, q, ticketID)
	if err != nil || !ok {
		return b, err
	}
	if own.Tokens > 0 {
		b.Tokens = own.Tokens
	}
	if own.Cost > 0 {
		b.Cost = own.Cost
	}
	return b, nil
}

// sessionBudget is the runtime's session.Config.Budget.
func (e *Executor) sessionBudget(ctx context.Context, q db.Querier, ticketID int64) (int64, float64, error) {
	b, err := e.Budget(ctx, q, ticketID)
	return b.Tokens, b.Cost, err
}

// renewBudget gives a continued Ticket what it may spend from now on, in
// tx, as its new Session starts: a raise a person asked for is added to
// what is spent so far; without one, a cap already reached grows by the
// default again, so a continue never stops at once at the same cap. It
// returns a line for the new Session's first message, or "".
func (e *Executor) renewBudget(ctx context.Context, tx *db.Tx, t tickets.Ticket) (string, error) {
	own, _, err := e.deps.Tickets.TicketBudget(ctx, tx, t.ID)
	if err != nil {
		return "", err
	}
	cur, err := e.Budget(ctx, tx, t.ID)
	if err != nil {
		return "", err
	}
	totals, err := e.sessions.Store().TicketTotals(ctx, tx, t.ID)
	if err != nil {
		return "", err
	}
	spent := totals.Usage
	def := e.defaultBudget()
	next := cur
	switch {
	case own.Raise.Tokens > 0:
		next.Tokens = spent.Total() + own.Raise.Tokens
	case cur.Tokens > 0 && spent.Total() >= cur.Tokens && def.Tokens > 0:
		next.Tokens = spent.Total() + def.Tokens
	}
	switch {
	case own.Raise.Cost > 0:
		next.Cost = spent.Cost + own.Raise.Cost
	case cur.Cost > 0 && spent.Cost >= cur.Cost && def.Cost > 0:
		next.Cost = spent.Cost + def.Cost
	}
	if next == cur && own.Raise.IsZero() {
		return "", nil
	}
	by := own.SetBy
	if own.Raise.IsZero() && t.Continue != nil {
		by = t.Continue.By
	}
	if err := e.deps.Tickets.SetBudget(ctx, tx, t.ID, next, by); err != nil {
		return "", err
	}
	tx.AfterCommit(func() {
		e.cfg.Logger.Info("ticket budget renewed", "ticket", t.ID, "repo", t.Repo, "by", by, "budget", next.String(),
			"spent_tokens", spent.Total(), "spent_cost", spent.Cost)
	})
	return fmt.Sprintf("The Ticket's budget is now %s in all; %s tokens are spent so far.", next, tickets.Thousands(spent.Total())), nil
}

// budgetNote says, for a Session stopped at its Ticket's budget, what was
// spent of what, and how a person raises it; "" for any other stop.
func (e *Executor) budgetNote(ctx context.Context, t tickets.Ticket, reason string) string {
	if reason != session.ReasonTokenBudget && reason != session.ReasonCostBudget {
		return ""
	}
	b, err := e.Budget(ctx, e.deps.DB, t.ID)
	if err != nil {
		return ""
	}
	totals, err := e.sessions.Store().TicketTotals(ctx, e.deps.DB, t.ID)
	if err != nil {
		return ""
	}
	spent := fmt.Sprintf("%s tokens", tickets.Thousands(totals.Usage.Total()))
	if reason == session.ReasonCostBudget {
		spent = fmt.Sprintf("cost %.2f", totals.Usage.Cost)
	}
	return fmt.Sprintf("its budget of %s is spent (%s so far); to raise it, say \"continue budget 20M tokens\" (or \"continue budget $5\") "+
		"to the bot where the Ticket was asked for, or use Continue with a budget on the Ticket's page; a plain continue gives it the default budget (%s) again",
		b, spent, e.defaultBudget())
}
