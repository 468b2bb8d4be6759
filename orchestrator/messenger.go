package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// Kinds of outgoing messages the main Session's host sends.
const (
	// KindReaction acknowledges pickup: eyes on GitHub, OnIt on Feishu.
	KindReaction = "reaction"
	// KindComment is a message: a forwarded question.
	KindComment = "comment"
	// KindProposal asks a person to accept an inferred Ticket: a comment
	// on GitHub, a card with an Accept button on Feishu.
	KindProposal = "proposal"
)

// Acknowledger sends one recorded outgoing message; card is the card it
// answers. The host records the intent first and claims it before calling,
// so Send is called at most once per intent.
type Acknowledger interface {
	Send(ctx context.Context, o tickets.Outgoing, card tickets.Card) error
}

// staleSend is how long an intent may stay sending before its sender is
// presumed dead; every send's own HTTP timeout is far shorter.
const staleSend = 2 * time.Minute

// retrySafe are the outgoing messages the other side deduplicates: GitHub
// keeps one reaction per content and App, Feishu one reply per uuid.
var retrySafe = []string{tickets.SourceGitHub + "/" + KindReaction, tickets.SourceFeishu + "/" + KindComment}

// Messenger sends reactions and messages through the GitHub App and the
// Feishu client. Either client may be nil when that source is not set up.
type Messenger struct {
	DB     *db.DB
	GitHub *githubapp.Client
	Feishu *feishu.Client
	// AgentLine begins every GitHub comment. Default promptparts.DefaultAgentLine.
	AgentLine string
	// Prompts, when set, supplies the line instead: the team's current
	// Communication setting, read for every message so a change applies at
	// once.
	Prompts *promptparts.Service
}

// agentLine is the line that begins the next GitHub message.
func (m *Messenger) agentLine(ctx context.Context) (string, error) {
	if m.Prompts != nil {
		st, _, err := m.Prompts.Current(ctx)
		if err != nil {
			return "", fmt.Errorf("reading the agent line: %w", err)
		}
		if line := st.Sections.Communication.AgentLine; line != "" {
			return line, nil
		}
	}
	if m.AgentLine != "" {
		return m.AgentLine, nil
	}
	return promptparts.DefaultAgentLine, nil
}

var _ Acknowledger = (*Messenger)(nil)

// Send delivers o.
func (m *Messenger) Send(ctx context.Context, o tickets.Outgoing, c tickets.Card) error {
	switch o.Source {
	case tickets.SourceGitHub:
		return m.sendGitHub(ctx, o)
	case tickets.SourceFeishu:
		return m.sendFeishu(ctx, o, c)
	}
	return fmt.Errorf("unknown source %q", o.Source)
}

var githubTarget = regexp.MustCompile(`^([^/\s]+)/([^#\s]+)#(issue|issue_comment|pull_comment):([0-9]+)$`)

func (m *Messenger) sendGitHub(ctx context.Context, o tickets.Outgoing) error {
	if m.GitHub == nil {
		return errors.New("GitHub is not configured")
	}
	t := githubTarget.FindStringSubmatch(o.Target)
	if t == nil {
		return fmt.Errorf("unusable GitHub target %q", o.Target)
	}
	owner, repo, what := t[1], t[2], t[3]
	id, _ := strconv.ParseInt(t[4], 10, 64)
	inst, err := githubapp.InstallationFor(ctx, m.DB, owner+"/"+repo)
	if err == nil && inst == 0 {
		err = errors.New("no active installation covers it")
	}
	if err != nil {
		return fmt.Errorf("finding the installation of %s/%s: %w", owner, repo, err)
	}
	gh := m.GitHub.Installation(inst)
	switch {
	case o.Kind == KindReaction && what == "issue":
		_, _, err = gh.Reactions.CreateIssueReaction(ctx, owner, repo, int(id), o.Body)
	case o.Kind == KindReaction && what == "issue_comment":
		_, _, err = gh.Reactions.CreateIssueCommentReaction(ctx, owner, repo, id, o.Body)
	case o.Kind == KindReaction && what == "pull_comment":
		_, _, err = gh.Reactions.CreatePullRequestCommentReaction(ctx, owner, repo, id, o.Body)
	case (o.Kind == KindComment || o.Kind == KindProposal) && what == "issue":
		line, lerr := m.agentLine(ctx)
		if lerr != nil {
			return lerr
		}
		body := line + "\n\n" + o.Body
		_, _, err = gh.Issues.CreateComment(ctx, owner, repo, int(id), &github.IssueComment{Body: &body})
	default:
		return fmt.Errorf("cannot send a %s to %s", o.Kind, o.Target)
	}
	if err != nil {
		return fmt.Errorf("sending %s to %s: %w", o.Kind, o.Target, err)
	}
	return nil
}

func (m *Messenger) sendFeishu(ctx context.Context, o tickets.Outgoing, c tickets.Card) error {
	if m.Feishu == nil {
		return errors.New("the Feishu app is not configured")
	}
	msg, ok := strings.CutPrefix(o.Target, "feishu:message/")
	if !ok || msg == "" {
		return fmt.Errorf("unusable Feishu target %q", o.Target)
	}
	var err error
	switch o.Kind {
	case KindReaction:
		_, err = m.Feishu.React(ctx, msg, c.Thread.Repo, o.Body)
	case KindComment, KindProposal:
		content, cerr := feishuContent(o)
		if cerr != nil {
			return fmt.Errorf("building the message of %s: %w", o.Key, cerr)
		}
		_, err = m.Feishu.Reply(ctx, msg, feishu.OutgoingMessage{UUID: "superagent-" + itoa(o.ID), ChatID: c.Thread.Repo, Content: content})
	default:
		return fmt.Errorf("cannot send a %s on Feishu", o.Kind)
	}
	if err != nil {
		return fmt.Errorf("sending %s to %s: %w", o.Kind, o.Target, err)
	}
	return nil
}

var (
	issueCommentURL = regexp.MustCompile(`#issuecomment-([0-9]+)$`)
	pullCommentURL  = regexp.MustCompile(`#discussion_r([0-9]+)$`)
)

// reactionTarget says where a card's acknowledgement goes: the comment
// itself, else its issue or pull request, else its Feishu message; "" when
// the card has nowhere to react (a push, a check failure).
func (o *Orchestrator) reactionTarget(ctx context.Context, q db.Querier, c tickets.Card) (string, error) {
	switch c.Source {
	case tickets.SourceGitHub:
		if m := issueCommentURL.FindStringSubmatch(c.URL); m != nil {
			return c.Thread.Repo + "#issue_comment:" + m[1], nil
		}
		if m := pullCommentURL.FindStringSubmatch(c.URL); m != nil {
			return c.Thread.Repo + "#pull_comment:" + m[1], nil
		}
		if c.Thread.Number > 0 {
			return c.Thread.Repo + "#issue:" + strconv.Itoa(c.Thread.Number), nil
		}
		return "", nil
	case tickets.SourceFeishu:
		id, err := tickets.FeishuMessageID(ctx, q, c)
		if err != nil || id == "" {
			return "", err
		}
		return "feishu:message/" + id, nil
	}
	return "", nil
}

// messageTarget says where a message about a card goes: its issue or pull
// request conversation, or under its Feishu message.
func (o *Orchestrator) messageTarget(ctx context.Context, q db.Querier, c tickets.Card) (string, error) {
	if c.Source == tickets.SourceGitHub {
		if c.Thread.Number > 0 {
			return c.Thread.Repo + "#issue:" + strconv.Itoa(c.Thread.Number), nil
		}
		return "", nil
	}
	return o.reactionTarget(ctx, q, c)
}

// record stores an outgoing intent for a card in tx; a card without a
// target records nothing.
func (o *Orchestrator) record(ctx context.Context, tx *db.Tx, key, kind string, c tickets.Card, ticketID int64, target, body string) error {
	if target == "" {
		return nil
	}
	_, err := o.deps.Tickets.RecordIntent(ctx, tx, tickets.Outgoing{Key: key, TicketID: ticketID, CardID: c.ID,
		Source: c.Source, Kind: kind, Target: target, Body: body})
	return err
}

// recordAck records the pickup reaction for a card routed to a Ticket.
func (o *Orchestrator) recordAck(ctx context.Context, tx *db.Tx, c tickets.Card, ticketID int64) error {
	target, err := o.reactionTarget(ctx, tx, c)
	if err != nil {
		return err
	}
	emoji := "eyes"
	if c.Source == tickets.SourceFeishu {
		emoji = feishu.EmojiOnIt
	}
	return o.record(ctx, tx, "ack:card:"+itoa(c.ID), KindReaction, c, ticketID, target, emoji)
}

// deliver sends the pending intents: each is claimed in its own statement
// before the call, so a retry after a crash never sends one twice.
func (o *Orchestrator) deliver(ctx context.Context) {
	if o.deps.Acks == nil {
		return
	}
	// A sender that died mid-call left its intent sending. Where the other
	// side deduplicates, send it again; otherwise it stays at most once.
	if _, err := o.deps.Tickets.RetryStale(ctx, o.deps.DB, o.cfg.Now().Add(-staleSend), retrySafe); err != nil {
		o.cfg.Logger.Error("retrying outgoing messages", "error", err)
	}
	pending, err := o.deps.Tickets.PendingIntents(ctx, o.deps.DB, 100)
	if err != nil {
		o.cfg.Logger.Error("listing outgoing messages", "error", err)
		return
	}
	for _, p := range pending {
		won, err := o.deps.Tickets.ClaimIntent(ctx, o.deps.DB, p.ID)
		if err != nil || !won {
			continue
		}
		var card tickets.Card
		if p.CardID != 0 {
			if card, err = o.deps.Tickets.Card(ctx, o.deps.DB, p.CardID); err != nil {
				o.cfg.Logger.Error("reading the card of an outgoing message", "error", err)
			}
		}
		sendErr := o.deps.Acks.Send(ctx, p, card)
		if sendErr != nil && ctx.Err() != nil {
			// Cut off mid-call: whether it arrived is unknown. Leave it
			// sending for the stale sweep.
			return
		}
		if sendErr != nil {
			o.cfg.Logger.Error("sending an outgoing message", "key", p.Key, "error", sendErr)
		}
		if err := o.deps.Tickets.FinishIntent(context.WithoutCancel(ctx), o.deps.DB, p.ID, sendErr); err != nil {
			o.cfg.Logger.Error("recording an outgoing message", "key", p.Key, "error", err)
		}
		if sendErr == nil && p.Kind != KindReaction && card.Thread.Key != "" {
			// Replies to what the bot wrote address it.
			if err := o.deps.Tickets.MarkBotSpoke(ctx, o.deps.DB, card.Thread.Key); err != nil {
				o.cfg.Logger.Error("recording that the bot spoke", "thread", card.Thread.Key, "error", err)
			}
		}
	}
}

// feishuContent is a text message, or for a proposal a card whose Accept
// button comes back as a card action naming the Ticket.
func feishuContent(o tickets.Outgoing) (feishu.Content, error) {
	if o.Kind != KindProposal {
		return feishu.Text(o.Body)
	}
	text := func(s string) map[string]string { return map[string]string{"tag": "plain_text", "content": s} }
	return feishu.Card(map[string]any{
		"elements": []any{
			map[string]any{"tag": "div", "text": text(o.Body)},
			map[string]any{"tag": "action", "actions": []any{map[string]any{
				"tag": "button", "type": "primary", "text": text("Accept"),
				"value": map[string]any{"action": CommandAccept, "ticket": o.TicketID},
			}}},
		},
	})
}
