package executor

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/tickets"
)

// automated reports whether a card's author is an automated reviewer: a
// bot account, or a login the deployment or the team lists as one.
func (e *Executor) automated(ctx context.Context, a tickets.Author) (bool, error) {
	if a.Type == tickets.AuthorBot || strings.HasSuffix(a.Login, "[bot]") {
		return true, nil
	}
	login := strings.ToLower(a.Login)
	for _, l := range e.cfg.ReviewBots {
		if strings.ToLower(l) == login {
			return true, nil
		}
	}
	settings, _, err := e.deps.Prompts.Current(ctx)
	if err != nil {
		return false, fmt.Errorf("reading the review bots: %w", err)
	}
	return slices.ContainsFunc(settings.Sections.Communication.ReviewBots, func(l string) bool { return strings.ToLower(l) == login }), nil
}

// reviewRound keeps an automated reviewer to its rounds: each of its
// reviews on the pull request is a round, and past the limit its reviews
// and comments are recorded but not delivered.
func (e *Executor) reviewRound(ctx context.Context, t tickets.Ticket, c tickets.Card) (verdict, error) {
	bot, err := e.automated(ctx, c.Author)
	if err != nil || !bot {
		return verdict{}, err
	}
	// Each of its earlier reviews on the pull request, given or withheld,
	// was a round.
	rounds, err := e.deps.Tickets.CountDeliveries(ctx, e.deps.DB, t.ID, pullKey(t.Repo, t.PullNumber), "review", c.Author.Login)
	if err != nil {
		return verdict{}, err
	}
	if c.Kind == "review" {
		rounds++
	}
	if rounds > e.cfg.MaxBotRounds {
		return verdict{withhold: fmt.Sprintf("round %d of automated reviewer %s; the limit is %d per pull request",
			rounds, c.Author.Login, e.cfg.MaxBotRounds)}, nil
	}
	return verdict{extra: fmt.Sprintf("host: %s is an automated reviewer (round %d of at most %d); resolve its threads once answered.",
		c.Author.Login, max(rounds, 1), e.cfg.MaxBotRounds)}, nil
}

// checkFailure gives a failed check the failing jobs' log excerpts and
// counts the fix attempts: the first commit that fails is the failure to
// fix, each later commit that fails is a failed attempt, and when they are
// used up the Executor must report blocked (git_push refuses). Jobs that
// fail on one commit are one failure, not one attempt each.
func (e *Executor) checkFailure(ctx context.Context, t tickets.Ticket, c tickets.Card) (verdict, error) {
	ci := e.ciFailure(ctx, t.Repo, c)
	failures, err := e.failedHead(ctx, t, c, ci.head)
	if err != nil {
		return verdict{}, err
	}
	var b strings.Builder
	b.WriteString(ci.text)
	used := failures - 1
	if used >= e.cfg.MaxFixAttempts {
		fmt.Fprintf(&b, "host: this is failure %d; the %d fix attempts are used up. Do not push again: report blocked with what failed and what you tried.\n",
			failures, e.cfg.MaxFixAttempts)
	} else {
		fmt.Fprintf(&b, "host: failure %d; fix attempts used %d of %d.\n", failures, used, e.cfg.MaxFixAttempts)
	}
	return verdict{extra: b.String()}, nil
}

// failedHeadPrefix names the counters that record each commit of a pull
// request that failed a check.
func failedHeadPrefix(number int) string { return "check_failed:" + strconv.Itoa(number) + ":" }

// failedHead records that a check failed on commit head (the commit the
// failed jobs ran on; when unknown, the pull request's head as the failure
// is delivered) and returns how many of the pull request's commits have
// failed. When no commit can be read the card stands for its commit, so a
// failure is never lost.
func (e *Executor) failedHead(ctx context.Context, t tickets.Ticket, c tickets.Card, head string) (int, error) {
	if head == "" {
		head = "card-" + strconv.FormatInt(c.ID, 10)
		if _, pr, err := e.pull(ctx, t); err != nil {
			e.cfg.Logger.Warn("reading the head of a failed pull request", "ticket", t.ID, "error", e.deps.Scrubber.Scrub(err.Error()))
		} else if sha := pr.GetHead().GetSHA(); sha != "" {
			head = sha
		}
	}
	if _, err := e.bump(ctx, e.deps.DB, t.ID, failedHeadPrefix(t.PullNumber)+head); err != nil {
		return 0, err
	}
	return e.failedHeads(ctx, t)
}

// failedHeads counts the commits of the Ticket's pull request that failed
// a check.
func (e *Executor) failedHeads(ctx context.Context, t tickets.Ticket) (int, error) {
	var n int
	err := e.deps.DB.QueryRow(ctx, `SELECT COUNT(*) FROM executor_counters WHERE ticket_id = $1 AND name LIKE $2`,
		t.ID, failedHeadPrefix(t.PullNumber)+"%").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting the failed commits of ticket %d: %w", t.ID, err)
	}
	return n, nil
}

// fixAttemptsUsedUp reports whether the Ticket has used its fix attempts.
func (e *Executor) fixAttemptsUsedUp(ctx context.Context, t tickets.Ticket) (bool, error) {
	if t.PullNumber == 0 {
		return false, nil
	}
	n, err := e.failedHeads(ctx, t)
	if err != nil {
		return false, err
	}
	return n-1 >= e.cfg.MaxFixAttempts, nil
}
