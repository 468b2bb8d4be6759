package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// turnCards are the cards a turn of the main Session was given: its
// candidates and the cards of its follow-up notices. orchestrator_stop
// looks for a person's stop request among them, and nowhere else, so a
// Ticket is stopped only on a request the turn is acting on.
type turnCards struct {
	mu  sync.Mutex
	ids []int64
}

type turnCardsKey struct{}

func withTurnCards(ctx context.Context) (context.Context, *turnCards) {
	tc := &turnCards{}
	return context.WithValue(ctx, turnCardsKey{}, tc), tc
}

func (tc *turnCards) add(ids ...int64) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	tc.ids = append(tc.ids, ids...)
}

// cardsOfTurn lists the cards the running turn was given, oldest first.
func cardsOfTurn(ctx context.Context) []int64 {
	tc, _ := ctx.Value(turnCardsKey{}).(*turnCards)
	if tc == nil {
		return nil
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return slices.Clone(tc.ids)
}

// stopWords are what a request to stop says, in the words people use on
// GitHub and in Feishu: the host's floor under the model's reading, so a
// "thanks!" never stops anything. The model still judges whether the
// person means it.
var stopWords = regexp.MustCompile(`(?i)\b(stop|stopp(ed|ing)|stops|cancel|cancell?(ed|ing)|abort(ed|ing)?|halt|nevermind|never\s+mind)\b|停|取消|算了|不用了|别做|不要做`)

// AsksToStop reports whether a card's text, or its button, asks to stop.
func AsksToStop(c tickets.Card) bool {
	if cmd, ok := ParseCommand(c); ok {
		return cmd.Name == CommandStop
	}
	return c.Kind != "card_action" && stopWords.MatchString(c.Text)
}

// mayCommandOn reports why the author of card c may not command Ticket t,
// or nil when they may: the requester, an admin, or someone with the
// gate's permission on the Ticket's own repository — read from GitHub
// when the card was written elsewhere, so a permission on the card's
// repository never reaches another one. A Feishu author passes through
// the gate's Feishu lists.
func (o *Orchestrator) mayCommandOn(ctx context.Context, t tickets.Ticket, c tickets.Card) error {
	if c.Author.Type != tickets.AuthorUser {
		return errors.New("only people command Tickets")
	}
	if tickets.IsRequester(t, c) || o.isAdmin(c) {
		return nil
	}
	if c.Source != tickets.SourceGitHub || t.Repo == "" || strings.EqualFold(t.Repo, c.Thread.Repo) {
		if err := o.cfg.Gate.Author(c); err != nil {
			return fmt.Errorf("%s is not the requester of ticket %d, nor an admin, and %w", tickets.Actor(c), t.ID, err)
		}
		return nil
	}
	inst, err := githubapp.InstallationFor(ctx, o.deps.DB, t.Repo)
	if err != nil {
		return err
	}
	if inst == 0 || o.deps.Permissions == nil {
		return fmt.Errorf("%s wrote in %s; commanding ticket %d needs their permission on %s, which this service cannot read", tickets.Actor(c), c.Thread.Repo, t.ID, t.Repo)
	}
	owner, name, _ := strings.Cut(t.Repo, "/")
	level, err := o.deps.Permissions.Level(ctx, inst, owner, name, c.Author.Login)
	if err != nil {
		return fmt.Errorf("reading %s's permission on %s: %w", c.Author.Login, t.Repo, err)
	}
	if !o.cfg.Gate.Allows(level) {
		return fmt.Errorf("%s's permission on %s, ticket %d's repository, is %s; %s or higher is needed", c.Author.Login, t.Repo, t.ID, level, o.cfg.Gate.need())
	}
	return nil
}

// isAdmin reports whether the card's author is one of the gate's admins,
// addressed to the bot or not.
func (o *Orchestrator) isAdmin(c tickets.Card) bool {
	g := o.cfg.Gate
	switch c.Source {
	case tickets.SourceGitHub:
		return c.Author.Login != "" && slices.Contains(g.AdminGitHubLogins, c.Author.Login)
	case tickets.SourceFeishu:
		return c.Author.ID != "" && slices.Contains(g.AdminFeishuIDs, c.Author.ID)
	}
	return false
}

type stopArgs struct {
	Ticket int64  `json:"ticket"`
	Reason string `json:"reason"`
}

// stop is orchestrator_stop. The host stops the Ticket only on a person's
// request to stop that this turn was given — a candidate or a follow-up
// notice, by someone who may command the Ticket, whose words ask to stop
// — and records the stop as theirs, said once under their card after the
// Executor's last write (like their own stop command).
func (o *Orchestrator) stop(ctx context.Context, _ session.Call, a stopArgs) (string, error) {
	st := o.deps.Tickets
	t, err := st.Ticket(ctx, o.deps.DB, a.Ticket)
	if errors.Is(err, tickets.ErrNotFound) {
		return "", session.Refuse("there is no ticket %d", a.Ticket)
	}
	if err != nil {
		return "", err
	}
	if t.Stop != nil {
		return fmt.Sprintf("ok (ticket %d is already stopped)", t.ID), nil
	}
	if tickets.Ended(t.State) {
		return "", session.Refuse("ticket %d has ended", t.ID)
	}
	var (
		request *tickets.Card
		why     []string
	)
	for _, id := range cardsOfTurn(ctx) {
		c, err := st.Card(ctx, o.deps.DB, id)
		if err != nil {
			return "", err
		}
		if c.Author.Type != tickets.AuthorUser || !AsksToStop(c) {
			continue
		}
		if err := o.mayCommandOn(ctx, t, c); err != nil {
			why = append(why, fmt.Sprintf("card %d: %s", c.ID, err))
			continue
		}
		request = &c
		break
	}
	if request == nil {
		reason := fmt.Sprintf("no card this turn was given is a person's request to stop ticket %d from someone who may command it; stop only on one", t.ID)
		if len(why) > 0 {
			reason += " (" + strings.Join(why, "; ") + ")"
		}
		return "", session.Refuse("%s", reason)
	}
	by, reason := tickets.Actor(*request), oneLine(a.Reason)
	err = o.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		changed, err := st.Stop(ctx, tx, t.ID, by, reason)
		if err != nil || !changed {
			return err
		}
		return o.stopped(ctx, tx, t, request, by, reason)
	})
	if errors.Is(err, tickets.ErrEnded) {
		return "", session.Refuse("ticket %d has ended", t.ID)
	}
	if err != nil {
		return "", err
	}
	o.cfg.Logger.Info("ticket stopped", "ticket", t.ID, "repo", t.Repo, "by", by, "card", request.ID, "via", "main session", "reason", reason)
	return fmt.Sprintf("ok (ticket %d stopped at %s's request, card %d)", t.ID, by, request.ID), nil
}
