package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/tickets"
)

// Kinds of outgoing messages Messenger sends for the main Session.
const (
	// KindReaction acknowledges pickup: eyes on GitHub, OnIt on Feishu.
	KindReaction = "reaction"
	// KindComment is a message: a forwarded question.
	KindComment = "comment"
	// KindProposal asks a person to accept an inferred Ticket: a comment
	// on GitHub, a card with an Accept button on Feishu.
	KindProposal = "proposal"
)

// ActionAccept is the card action a proposal's Accept button sends back on
// Feishu; the main Session parses it as its accept command.
const ActionAccept = "accept"

// Messenger sends reactions and messages through the GitHub App and the
// Feishu client. Either client may be nil when that source is not set up.
type Messenger struct {
	DB     *db.DB
	GitHub *githubapp.Client
	Feishu *feishu.Client
	// Prompts supplies the agent line that begins every GitHub comment
	// (see AgentLine). Nil: promptparts.DefaultAgentLine.
	Prompts *promptparts.Service
	// PublicURL is the panel's public base (SUPERAGENT_PUBLIC_URL): a
	// Feishu status message about a Ticket ends with the link to the
	// Ticket's page. Empty: no link (GitHub has the progress comment's).
	PublicURL string
}

// TicketURL is a Ticket's page under base, or "" without a base.
func TicketURL(base string, ticketID int64) string {
	if base == "" || ticketID == 0 {
		return ""
	}
	return strings.TrimRight(base, "/") + "/admin/tickets/" + strconv.FormatInt(ticketID, 10)
}

var _ Sender = (*Messenger)(nil)

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

func (m *Messenger) sendGitHub(ctx context.Context, o tickets.Outgoing) error {
	if m.GitHub == nil {
		return errors.New("GitHub is not configured")
	}
	t, err := parseGitHubTarget(o.Target)
	if err != nil {
		return err
	}
	r, err := m.GitHub.ForRepo(ctx, m.DB, t.owner+"/"+t.repo)
	if err != nil {
		return err
	}
	switch {
	case o.Kind == KindReaction:
		_, err = React(ctx, r, o.Target, o.Body)
	case (o.Kind == KindComment || o.Kind == KindProposal) && t.what == "issue":
		line, lerr := AgentLine(ctx, m.Prompts)
		if lerr != nil {
			return lerr
		}
		if t.thread != 0 {
			// Asked under a review comment: answered in its review
			// thread, not the pull request's conversation.
			_, err = r.ReplyToReviewComment(ctx, int(t.id), t.thread, line+"\n\n"+o.Body)
			break
		}
		_, err = Comment(ctx, r, int(t.id), line+"\n\n"+o.Body)
	default:
		return fmt.Errorf("cannot send a %s to %s", o.Kind, o.Target)
	}
	if err != nil {
		return fmt.Errorf("sending %s to %s: %w", o.Kind, o.Target, err)
	}
	return nil
}

// feishuUser begins the target of a private message to a Feishu user.
const feishuUser = "feishu:user/"

// FeishuUserTarget says where a private message to the Feishu user openID
// goes: their chat with the bot, which nobody else reads.
func FeishuUserTarget(openID string) string { return feishuUser + openID }

// Private reports whether target is one person's private chat.
func Private(target string) bool { return strings.HasPrefix(target, feishuUser) }

func (m *Messenger) sendFeishu(ctx context.Context, o tickets.Outgoing, c tickets.Card) error {
	if m.Feishu == nil {
		return errors.New("the Feishu app is not configured")
	}
	if openID, ok := strings.CutPrefix(o.Target, feishuUser); ok {
		if openID == "" || o.Kind != KindComment {
			return fmt.Errorf("cannot send a %s to %s", o.Kind, o.Target)
		}
		content, err := feishu.Text(o.Body)
		if err != nil {
			return fmt.Errorf("building the message of %s: %w", o.Key, err)
		}
		if _, err := m.Feishu.SendToUser(ctx, openID, feishu.OutgoingMessage{UUID: "superagent-" + strconv.FormatInt(o.ID, 10), Content: content}); err != nil {
			return fmt.Errorf("sending %s to %s: %w", o.Kind, o.Target, err)
		}
		return nil
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
		if u := TicketURL(m.PublicURL, o.TicketID); u != "" {
			o.Body += "\nTicket: " + u
		}
		content, cerr := feishuContent(o)
		if cerr != nil {
			return fmt.Errorf("building the message of %s: %w", o.Key, cerr)
		}
		_, err = m.Feishu.Reply(ctx, msg, feishu.OutgoingMessage{UUID: "superagent-" + strconv.FormatInt(o.ID, 10), ChatID: c.Thread.Repo, Content: content})
	default:
		return fmt.Errorf("cannot send a %s on Feishu", o.Kind)
	}
	if err != nil {
		return fmt.Errorf("sending %s to %s: %w", o.Kind, o.Target, err)
	}
	return nil
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
				"value": map[string]any{"action": ActionAccept, "ticket": o.TicketID},
			}}},
		},
	})
}
