package executor

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

type replyArgs struct {
	Thread    string `json:"thread,omitempty" jsonschema_description:"thread key; optional when in_reply_to is given"`
	Purpose   string `json:"purpose" jsonschema:"enum=confirm,enum=result,enum=answer,enum=decline,enum=yield"`
	Text      string `json:"text"`
	InReplyTo int64  `json:"in_reply_to,omitempty" jsonschema_description:"the card id of the message answered"`
}

// messageOf reads a card the Ticket's Executor was given.
func (e *Executor) messageOf(ctx context.Context, ticketID, cardID int64) (tickets.Card, error) {
	ok, err := e.deps.Tickets.Received(ctx, e.deps.DB, ticketID, cardID)
	if err != nil {
		return tickets.Card{}, err
	}
	if !ok {
		return tickets.Card{}, session.Refuse("card %d is not a message this Ticket received", cardID)
	}
	return e.deps.Tickets.Card(ctx, e.deps.DB, cardID)
}

// replyPlace resolves where a reply goes and checks that the Ticket may
// write there: a Thread it follows for work.
func (e *Executor) replyPlace(ctx context.Context, ticketID int64, a replyArgs) (tickets.Thread, *tickets.Card, error) {
	var card *tickets.Card
	key := strings.TrimSpace(a.Thread)
	if a.InReplyTo != 0 {
		c, err := e.messageOf(ctx, ticketID, a.InReplyTo)
		if err != nil {
			return tickets.Thread{}, nil, err
		}
		if key != "" && key != c.Thread.Key {
			return tickets.Thread{}, nil, session.Refuse("card %d is in %s, not %s", c.ID, c.Thread.Key, key)
		}
		card, key = &c, c.Thread.Key
	}
	if key == "" {
		return tickets.Thread{}, nil, session.Refuse("name the thread or the message (in_reply_to) the reply answers")
	}
	if strings.HasPrefix(key, "github:") {
		t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, ticketID)
		if err != nil {
			return tickets.Thread{}, nil, err
		}
		repo := strings.TrimPrefix(key, "github:")
		if i := strings.IndexAny(repo, "#@"); i >= 0 {
			repo = repo[:i]
		}
		if !slices.ContainsFunc(t.Mandate.Repos, func(r string) bool { return strings.EqualFold(r, repo) }) {
			return tickets.Thread{}, nil, session.Refuse("the Mandate does not name %s; the Ticket writes only in its repositories", repo)
		}
	}
	followed, contextOnly, err := e.deps.Tickets.Follows(ctx, e.deps.DB, ticketID, key)
	if err != nil {
		return tickets.Thread{}, nil, err
	}
	if !followed || contextOnly {
		return tickets.Thread{}, nil, session.Refuse("the Ticket does not follow %s for its work; it may write only in the Threads it follows", key)
	}
	th, err := e.deps.Tickets.ThreadByKey(ctx, e.deps.DB, key)
	return th, card, err
}

func (e *Executor) checkReply(ctx context.Context, call session.Call, a replyArgs) error {
	text := strings.TrimSpace(a.Text)
	if text == "" {
		return session.Refuse("the reply is empty")
	}
	switch a.Purpose {
	case "confirm":
		if a.InReplyTo == 0 {
			return session.Refuse("a confirmation goes under the request: give in_reply_to")
		}
		if outbox.Words(text) < 6 {
			return session.Refuse("a confirmation names the object and the result you expect to deliver; %q is too short", text)
		}
	case "decline", "yield":
		if n := sentences(text); n != 1 {
			return session.Refuse("a %s is one sentence; this is %d", a.Purpose, n)
		}
	}
	th, _, err := e.replyPlace(ctx, call.TicketID, a)
	if err != nil {
		return err
	}
	if th.Source == tickets.SourceFeishu && outbox.Words(text) > e.cfg.MaxChatWords {
		return session.Refuse("a chat message is at most %d words; this one is %d: put the detail in the pull request and link it",
			e.cfg.MaxChatWords, outbox.Words(text))
	}
	return nil
}

var reviewThreadKey = regexp.MustCompile(`^github:([^#]+)#([0-9]+)(?:/review-thread/([0-9]+))?$`)

func (e *Executor) reply(ctx context.Context, call session.Call, a replyArgs) (string, error) {
	th, card, err := e.replyPlace(ctx, call.TicketID, a)
	if err != nil {
		return "", err
	}
	var cardID int64
	if card != nil {
		cardID = card.ID
	}
	key := fmt.Sprintf("reply:ticket:%d:%s", call.TicketID, digest(th.Key, a.Purpose, a.Text, strconv.FormatInt(a.InReplyTo, 10)))
	if a.Purpose == "confirm" {
		key = fmt.Sprintf("confirm:ticket:%d:card:%d", call.TicketID, a.InReplyTo)
	}
	var ref string
	switch {
	case card != nil && card.Kind == tickets.KindAPIRequest:
		ref, err = e.replyOnPage(ctx, call.TicketID, cardID, key, a.Text)
	case th.Source == tickets.SourceGitHub:
		ref, err = e.replyGitHub(ctx, call.TicketID, cardID, th, key, a.Text)
	case th.Source == tickets.SourceFeishu:
		ref, err = e.replyFeishu(ctx, call.TicketID, card, th, key, a.Text)
	default:
		err = fmt.Errorf("unknown source %q", th.Source)
	}
	if err != nil {
		return "", err
	}
	err = e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		if err := e.deps.Tickets.MarkBotSpoke(ctx, tx, th.Key); err != nil {
			return err
		}
		if a.Purpose == "confirm" {
			return e.setConfirmed(ctx, tx, call.TicketID)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return "sent: " + ref, nil
}

func (e *Executor) replyGitHub(ctx context.Context, ticketID, cardID int64, th tickets.Thread, key, text string) (string, error) {
	m := reviewThreadKey.FindStringSubmatch(th.Key)
	if m == nil {
		return "", session.Refuse("%s has no conversation to reply in", th.Key)
	}
	repo := th.Repo
	number, _ := strconv.Atoi(m[2])
	if m[3] == "" {
		return e.commentOn(ctx, ticketID, cardID, repo, key, number, text)
	}
	root, _ := strconv.ParseInt(m[3], 10, 64)
	gh, err := e.installationClient(ctx, repo)
	if err != nil {
		return "", err
	}
	body, err := e.githubBody(ctx, key, text)
	if err != nil {
		return "", err
	}
	o := tickets.Outgoing{Key: key, TicketID: ticketID, CardID: cardID, Source: tickets.SourceGitHub, Kind: "review_reply",
		Target: repo + "#pull_comment:" + m[3], Body: body}
	return e.postReviewReply(ctx, gh, o, repo, number, root)
}

func (e *Executor) replyFeishu(ctx context.Context, ticketID int64, card *tickets.Card, th tickets.Thread, key, text string) (string, error) {
	if e.deps.Feishu == nil {
		return "", errors.New("the Feishu app is not configured")
	}
	var msg string
	if card != nil {
		id, err := tickets.FeishuMessageID(ctx, e.deps.DB, *card)
		if err != nil {
			return "", err
		}
		msg = id
	}
	if msg == "" {
		_, root, _ := strings.Cut(strings.TrimPrefix(th.Key, "feishu:"), "/")
		msg = root
	}
	if msg == "" {
		return "", session.Refuse("there is no Feishu message to reply under in %s", th.Key)
	}
	content, err := feishu.Text(e.deps.Scrubber.Scrub(strings.TrimSpace(text)))
	if err != nil {
		return "", err
	}
	var cardID int64
	if card != nil {
		cardID = card.ID
	}
	o := tickets.Outgoing{Key: key, TicketID: ticketID, CardID: cardID, Source: tickets.SourceFeishu, Kind: "reply",
		Target: "feishu:message/" + msg, Body: text}
	// Feishu sends one message per uuid: a retry cannot duplicate.
	return e.write(ctx, o, func(ctx context.Context) (string, error) {
		sent, err := e.deps.Feishu.Reply(ctx, msg, feishu.OutgoingMessage{UUID: "sa-" + digest(key), ChatID: th.Repo, Content: content})
		if err != nil {
			return "", err
		}
		return "feishu:message/" + sent.MessageID, nil
	}, nil)
}

type reactArgs struct {
	Thread   string `json:"thread,omitempty"`
	Message  int64  `json:"message"`
	Reaction string `json:"reaction"`
}

func (e *Executor) react(ctx context.Context, call session.Call, a reactArgs) (string, error) {
	c, err := e.messageOf(ctx, call.TicketID, a.Message)
	if err != nil {
		return "", err
	}
	if _, _, err := e.replyPlace(ctx, call.TicketID, replyArgs{Thread: a.Thread, InReplyTo: a.Message}); err != nil {
		return "", err
	}
	o := tickets.Outgoing{Key: fmt.Sprintf("react:ticket:%d:card:%d:%s", call.TicketID, c.ID, a.Reaction), TicketID: call.TicketID,
		CardID: c.ID, Source: c.Source, Kind: "reaction", Body: a.Reaction}
	// Both platforms keep one reaction of a kind per account: resending is
	// safe, so no find.
	_, err = e.write(ctx, o, func(ctx context.Context) (string, error) {
		if c.Source == tickets.SourceFeishu {
			if e.deps.Feishu == nil {
				return "", errors.New("the Feishu app is not configured")
			}
			id, err := tickets.FeishuMessageID(ctx, e.deps.DB, c)
			if err != nil || id == "" {
				return "", fmt.Errorf("finding the Feishu message of card %d: %w", c.ID, err)
			}
			return e.deps.Feishu.React(ctx, id, c.Thread.Repo, a.Reaction)
		}
		gh, err := e.installationClient(ctx, c.Thread.Repo)
		if err != nil {
			return "", err
		}
		target := outbox.ReactionTarget(c)
		if target == "" {
			return "", session.Refuse("card %d has nothing to react to", c.ID)
		}
		id, err := outbox.React(ctx, gh, target, a.Reaction)
		if err != nil {
			return "", fmt.Errorf("reacting to card %d: %w", c.ID, err)
		}
		return strconv.FormatInt(id, 10), nil
	}, nil)
	if err != nil {
		return "", err
	}
	return "reacted " + a.Reaction, nil
}

// questions counts the question marks of a text.
func questions(s string) int { return strings.Count(s, "?") + strings.Count(s, "？") }

type reportArgs struct {
	State       string `json:"state" jsonschema:"enum=progress,enum=done,enum=blocked,enum=waiting"`
	Summary     string `json:"summary"`
	HumanAction string `json:"human_action,omitempty"`
	Message     int64  `json:"message,omitempty" jsonschema_description:"card id under which to ask human_action"`
}

func (e *Executor) checkReport(ctx context.Context, call session.Call, a reportArgs) error {
	if strings.TrimSpace(a.Summary) == "" {
		return session.Refuse("a report needs a summary")
	}
	if a.State == tickets.ReportDone && outbox.Words(a.Summary) < 8 {
		return session.Refuse("a done report states what was delivered and how it was verified")
	}
	if questions(a.HumanAction) > 1 {
		return session.Refuse("a report carries at most one human_action question")
	}
	return e.checkMessage(ctx, call.TicketID, a.Message)
}

// checkMessage refuses a card id (message, in_reply_to) that is not a
// message the Ticket received; 0 names none.
func (e *Executor) checkMessage(ctx context.Context, ticketID, cardID int64) error {
	if cardID == 0 {
		return nil
	}
	_, err := e.messageOf(ctx, ticketID, cardID)
	return err
}

// ticketStates is the Ticket state each report state moves it to.
var ticketStates = map[string]string{
	tickets.ReportProgress: tickets.TicketWorking,
	tickets.ReportDone:     tickets.TicketDone,
	tickets.ReportBlocked:  tickets.TicketWaiting,
	tickets.ReportWaiting:  tickets.TicketWaiting,
}

func (e *Executor) report(ctx context.Context, call session.Call, a reportArgs) (string, error) {
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, call.TicketID)
	if err != nil {
		return "", err
	}
	if t.Stop != nil {
		return "", held(t)
	}
	next := ticketStates[a.State]
	if a.State == tickets.ReportDone {
		if next, err = e.doneState(ctx, t, a); err != nil {
			return "", err
		}
	}
	summary := strings.TrimSpace(a.Summary)
	if a.State == tickets.ReportDone {
		totals, err := e.sessions.Store().TicketTotals(ctx, e.deps.DB, call.TicketID)
		if err != nil {
			return "", err
		}
		u := totals.Usage
		cost := fmt.Sprintf("cost %.4f", u.Cost)
		if u.Cost == 0 && u.Total() > 0 {
			cost = "cost unknown (no model price is configured)"
		}
		budget, err := e.Budget(ctx, e.deps.DB, call.TicketID)
		if err != nil {
			return "", err
		}
		summary += fmt.Sprintf("\n\nUsage: %d tokens (input %d, cache reads %d, cache writes %d, output %d) over %d model requests in %d Sessions; %s; the Ticket's budget: %s.",
			u.Total(), u.Input, u.CacheRead, u.CacheWrite, u.Output, totals.Requests, totals.Sessions, cost, budget)
	}
	r := tickets.Report{TicketID: call.TicketID, SessionID: call.SessionID, State: a.State, Summary: summary,
		HumanAction: strings.TrimSpace(a.HumanAction)}
	if a.Message != 0 {
		r.Message = strconv.FormatInt(a.Message, 10)
	}
	err = e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		if _, err := e.deps.Wake.Report(ctx, tx, r); err != nil {
			return err
		}
		before, err := e.deps.Tickets.Ticket(ctx, tx, call.TicketID)
		if err != nil {
			return err
		}
		err = e.deps.Tickets.SetTicketState(ctx, tx, call.TicketID, next)
		if errors.Is(err, tickets.ErrPaused) {
			return nil
		}
		if err == nil && next == tickets.TicketInReview && before.State != tickets.TicketInReview {
			tx.AfterCommit(func() {
				e.cfg.Logger.Info("ticket in review", "ticket", t.ID, "session", call.SessionID, "repo", t.Repo, "pr", t.PullNumber)
			})
		}
		return err
	})
	if err != nil {
		return "", err
	}
	e.cfg.Logger.Info("report", "ticket", call.TicketID, "session", call.SessionID, "state", a.State)
	e.showProgress(ctx, call.TicketID)
	usage := summary[len(strings.TrimSpace(a.Summary)):]
	switch {
	case next == tickets.TicketInReview:
		return fmt.Sprintf("reported done; the Ticket is in review while %s#%d is open: its reviews, checks and comments reach you "+
			"until it is merged or closed, and then the Ticket ends.%s", t.Repo, t.PullNumber, usage), nil
	case a.State == tickets.ReportDone:
		return "reported done; the Ticket is done." + usage, nil
	}
	return "reported " + a.State, nil
}

// doneState is the state a done report moves the Ticket to: in review
// while its pull request is open, else done. The host refuses done while
// the Ticket's own pull request is still a draft, unless the report says,
// in human_action, what is left for a person: a draft is unfinished work.
func (e *Executor) doneState(ctx context.Context, t tickets.Ticket, a reportArgs) (string, error) {
	if err := e.checkClaims(ctx, t, a.Summary); err != nil {
		return "", err
	}
	if t.PullNumber == 0 {
		return tickets.TicketDone, nil
	}
	_, pr, err := e.pull(ctx, t)
	if err != nil {
		return "", err
	}
	if pr.GetState() != "open" {
		return tickets.TicketDone, nil
	}
	if e.isOwn(t, pr) && pr.GetDraft() && strings.TrimSpace(a.HumanAction) == "" {
		return "", session.Refuse("%s#%d is still a draft: mark it ready for review (pr_update ready) once it meets the Delivery requirements, "+
			"or report done with human_action saying what is left for a person", t.Repo, t.PullNumber)
	}
	return tickets.TicketInReview, nil
}

type humanActionArgs struct {
	Question string `json:"question"`
	Message  int64  `json:"message,omitempty"`
}

func (e *Executor) checkHumanAction(ctx context.Context, call session.Call, a humanActionArgs) error {
	q := strings.TrimSpace(a.Question)
	switch {
	case q == "":
		return session.Refuse("the question is empty")
	case questions(q) > 1:
		return session.Refuse("ask one concrete question, not %d", questions(q))
	case outbox.Words(q) > e.cfg.MaxChatWords:
		return session.Refuse("the question is %d words; at most %d", outbox.Words(q), e.cfg.MaxChatWords)
	}
	return e.checkMessage(ctx, call.TicketID, a.Message)
}

func (e *Executor) humanAction(ctx context.Context, call session.Call, a humanActionArgs) (string, error) {
	r := tickets.Report{TicketID: call.TicketID, SessionID: call.SessionID, State: tickets.ReportWaiting,
		Summary: "A question only a person can answer.", HumanAction: strings.TrimSpace(a.Question)}
	if a.Message != 0 {
		r.Message = strconv.FormatInt(a.Message, 10)
	}
	err := e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		if _, err := e.deps.Wake.Report(ctx, tx, r); err != nil {
			return err
		}
		// A waiting Report: the Ticket waits on a person, as for report
		// waiting, so a turn that ends now leaves nothing undone.
		t, err := e.deps.Tickets.Ticket(ctx, tx, call.TicketID)
		if err != nil || (t.State != tickets.TicketWorking && t.State != tickets.TicketOpen) {
			return err
		}
		if err := e.deps.Tickets.SetTicketState(ctx, tx, call.TicketID, tickets.TicketWaiting); err != nil && !errors.Is(err, tickets.ErrPaused) {
			return err
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	e.cfg.Logger.Info("report", "ticket", call.TicketID, "session", call.SessionID, "state", r.State, "human_action", true)
	return "the question goes to the person through the main Session; continue what the Ticket already authorizes", nil
}

type handBackArgs struct {
	Message int64  `json:"message"`
	Reason  string `json:"reason"`
}

func (e *Executor) handBack(ctx context.Context, call session.Call, a handBackArgs) (string, error) {
	if strings.TrimSpace(a.Reason) == "" {
		return "", session.Refuse("give the reason")
	}
	owners, err := e.deps.Tickets.FollowUpTickets(ctx, e.deps.DB, a.Message)
	if err != nil {
		return "", err
	}
	mine := false
	for _, id := range owners {
		mine = mine || id == call.TicketID
	}
	if !mine {
		return "", session.Refuse("card %d is not a follow-up this Ticket received; only those can be handed back", a.Message)
	}
	var back bool
	err = e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		back, err = e.deps.Wake.HandBack(ctx, tx, tickets.HandBack{CardID: a.Message, TicketID: call.TicketID, Reason: a.Reason})
		return err
	})
	if err != nil {
		return "", err
	}
	if back {
		return "handed back; the main Session routes it", nil
	}
	return "handed back; it goes to the main Session once the other Tickets it reached are done with it", nil
}

var githubRef = regexp.MustCompile(`^(?:https://[^/]+/)?([\w.-]+)/([\w.-]+)(?:#|/(?:issues|pull)/)([0-9]+)$`)

// threadKey turns what the model names (a thread key, owner/repo#12, a
// GitHub URL) into a Thread key.
func threadKey(ref string) (key, repo string, number int) {
	ref = strings.TrimSpace(ref)
	if m := githubRef.FindStringSubmatch(strings.TrimPrefix(ref, "github:")); m != nil {
		n, _ := strconv.Atoi(m[3])
		repo = m[1] + "/" + m[2]
		return pullKey(repo, n), repo, n
	}
	return ref, "", 0
}

// threadArgs name a Thread and why (thread_subscribe,
// orchestrator_thread_unrelated).
type threadArgs struct {
	Thread string `json:"thread"`
	Reason string `json:"reason"`
}

func (e *Executor) subscribe(ctx context.Context, call session.Call, a threadArgs) (string, error) {
	key, repo, number := threadKey(a.Thread)
	err := e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		th, err := e.deps.Tickets.ThreadByKey(ctx, tx, key)
		if errors.Is(err, tickets.ErrNotFound) && repo != "" {
			th, err = e.deps.Tickets.UpsertThread(ctx, tx, tickets.Thread{Source: tickets.SourceGitHub, Key: key, Repo: repo, Number: number})
		}
		if errors.Is(err, tickets.ErrNotFound) {
			return session.Refuse("there is no Thread %q", a.Thread)
		}
		if err != nil {
			return err
		}
		return e.deps.Tickets.SubscribeForContext(ctx, tx, call.TicketID, th.ID)
	})
	if err != nil {
		return "", err
	}
	return "following " + key + " for context; new cards there reach you, and you may not write there", nil
}

func (e *Executor) unrelated(ctx context.Context, call session.Call, a threadArgs) (string, error) {
	key, _, _ := threadKey(a.Thread)
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, call.TicketID)
	if err != nil {
		return "", err
	}
	var returned int64
	err = e.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		th, err := e.deps.Tickets.ThreadByKey(ctx, tx, key)
		if errors.Is(err, tickets.ErrNotFound) {
			return session.Refuse("there is no Thread %q", a.Thread)
		}
		if err != nil {
			return err
		}
		if src, err := e.deps.Tickets.Card(ctx, tx, t.SourceCardID); err == nil && src.Thread.ID == th.ID {
			return session.Refuse("%s is where the Ticket's request came from; report instead if the Ticket itself is mistaken", key)
		}
		if err := e.deps.Tickets.Unsubscribe(ctx, tx, t.ID, th.ID); err != nil {
			return err
		}
		if returned, err = e.deps.Tickets.Disown(ctx, tx, t.ID, th.ID); err != nil {
			return err
		}
		held, err := e.deps.Tickets.HeldFollowUps(ctx, tx, t.ID, th.ID)
		if err != nil {
			return err
		}
		for _, id := range held {
			if _, err := e.deps.Wake.HandBack(ctx, tx, tickets.HandBack{CardID: id, TicketID: t.ID, Reason: "unrelated thread: " + a.Reason}); err != nil {
				return err
			}
		}
		if returned > 0 {
			return e.deps.Wake.ScheduleTurn(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("no longer following %s; %d attached card(s) went back to the main Session; nothing was posted there", key, returned), nil
}

// replyOnPage keeps a reply under a request made through the API, which
// has no conversation to write in, on the Ticket's page (and in GET
// /api/tickets/{id}'s messages), where its caller reads it.
func (e *Executor) replyOnPage(ctx context.Context, ticketID, cardID int64, key, text string) (string, error) {
	body := e.deps.Scrubber.Scrub(strings.TrimSpace(text))
	o := tickets.Outgoing{Key: key, TicketID: ticketID, CardID: cardID, Source: tickets.SourceGitHub, Kind: "comment",
		Target: fmt.Sprintf("ticket:%d/page", ticketID), Body: body}
	return e.write(ctx, o, func(context.Context) (string, error) {
		return fmt.Sprintf("kept on the Ticket's page (ticket %d): the request came through the API", ticketID), nil
	}, nil)
}
