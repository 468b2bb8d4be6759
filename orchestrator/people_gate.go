package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/people"
	"github.com/superagent-dev/superagent/tickets"
)

// ChatRepos returns the repositories (owner/name) a Feishu chat opens to
// its members without a linked GitHub login (webhooks.Service.ChatRepos).
type ChatRepos func(ctx context.Context, q db.Querier, chatID string) ([]string, error)

// FeishuRequesterMayOpen is the gate on a repository for a Feishu
// requester: the card's chat names repo among the repositories it opens,
// or the person the author resolves to holds a GitHub login (linked by an
// admin or proved through the App's user authorization) whose permission
// on repo passes the same gate as a GitHub requester's. It returns nil
// when they may open work there and a refusal, whose reason is one
// sentence the person and the model can read, when not. Every path that
// lets a Feishu requester open work in or move work to a repository asks
// it.
func (o *Orchestrator) FeishuRequesterMayOpen(ctx context.Context, c tickets.Card, repo string) error {
	if c.Source != tickets.SourceFeishu {
		return fmt.Errorf("card %d is not from Feishu", c.ID)
	}
	if c.Author.Type != tickets.AuthorUser {
		return refuse("only people open work in a repository; the author of card %d is a bot", c.ID)
	}
	if o.deps.ChatRepos != nil {
		open, err := o.deps.ChatRepos(ctx, o.deps.DB, c.Thread.Repo)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(open, func(r string) bool { return strings.EqualFold(r, repo) }) {
			return nil
		}
	}
	who := c.Author.Name
	if who == "" {
		who = "The requester"
	}
	var logins []string
	if o.deps.People != nil {
		p, ok, err := o.deps.People.By(ctx, o.deps.DB, people.KindFeishuOpenID, c.Author.ID)
		if err != nil {
			return err
		}
		if ok {
			logins, who = p.GitHub, p.Name
		}
	}
	if len(logins) == 0 {
		return &refusal{reason: fmt.Sprintf("%s has no linked GitHub login and this chat does not open %s, so I cannot open work there", who, repo),
			linkFor: c.Author.ID}
	}
	inst, err := githubapp.InstallationFor(ctx, o.deps.DB, repo)
	if err != nil {
		return fmt.Errorf("checking repository %s: %w", repo, err)
	}
	if inst == 0 {
		return refuse("the GitHub App is not installed on %s", repo)
	}
	if o.deps.Permissions == nil {
		return refuse("opening work in %s needs %s's GitHub permission there, which this service cannot read", repo, who)
	}
	owner, name, _ := strings.Cut(repo, "/")
	best := "none"
	for _, login := range logins {
		level, err := o.deps.Permissions.Level(ctx, inst, owner, name, login)
		if err != nil {
			return fmt.Errorf("reading %s's permission on %s: %w", login, repo, err)
		}
		if o.cfg.Gate.Allows(level) {
			return nil
		}
		if githubLevels[level] > githubLevels[best] {
			best = level
		}
	}
	return refuse("%s's GitHub permission on %s is %s (as %s) and %s or higher is needed to open work there",
		who, repo, best, strings.Join(logins, ", "), o.cfg.Gate.need())
}

// linkOffer is the private message that offers the Feishu user openID the
// link to prove their GitHub login, or "" when the service cannot offer
// one. It goes to them alone: the link's page has them sign in to Feishu
// as openID before GitHub, so nobody else can complete it.
func (o *Orchestrator) linkOffer(openID, repo string) string {
	if o.cfg.LinkURL == nil || openID == "" {
		return ""
	}
	u := o.cfg.LinkURL(openID)
	if u == "" {
		return ""
	}
	return "You asked for work in " + repo + ", which needs your GitHub permission there, and no GitHub account is linked to your Feishu account yet. " +
		"Link yours here (you sign in to Feishu, then to GitHub; the link works for a day and only for you): " + u + "\nThen ask again in the thread."
}

// tellRefusal records the one sentence that tells the person who asked
// why their request opened no work, once per card and repository; the
// route's delivery sends it. A refusal for want of a linked GitHub login
// also sends the person, privately, the link to prove theirs, once per
// card, and says so in the thread (and to the model, through r).
func (o *Orchestrator) tellRefusal(ctx context.Context, c tickets.Card, repo string, r *refusal) error {
	reason, offer := r.reason, ""
	if c.Source == tickets.SourceFeishu {
		offer = o.linkOffer(r.linkFor, repo)
	}
	if offer != "" {
		reason += "; I have sent them a private message with a link to connect their GitHub account"
	}
	text := strings.TrimSuffix(reason, ".") + "."
	text = strings.ToUpper(text[:1]) + text[1:]
	err := o.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		target, err := o.messageTarget(ctx, tx, c)
		if err != nil {
			return err
		}
		if offer != "" {
			if err := o.record(ctx, tx, "link-offer:card:"+itoa(c.ID), outbox.KindComment, c, 0, outbox.FeishuUserTarget(r.linkFor), offer); err != nil {
				return err
			}
		}
		return o.record(ctx, tx, "refusal:card:"+itoa(c.ID)+":"+strings.ToLower(repo), outbox.KindComment, c, 0, target, text)
	})
	if err == nil {
		r.reason = reason
	}
	return err
}

// gateFeishuTarget applies FeishuRequesterMayOpen to a new Ticket's
// repository and tells the person a refusal.
func (o *Orchestrator) gateFeishuTarget(ctx context.Context, c tickets.Card, repo string) error {
	err := o.FeishuRequesterMayOpen(ctx, c, repo)
	var r *refusal
	if errors.As(err, &r) && c.Addressed {
		if terr := o.tellRefusal(ctx, c, repo, r); terr != nil {
			return terr
		}
	}
	return err
}
