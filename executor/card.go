package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/feishu"
	"github.com/superagent-dev/superagent/jobs"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/tickets"
)

// KindStatusCard is the outgoing kind of a status card's post and patches.
const KindStatusCard = "status_card"

// Status card commands: the values its buttons send back, which the main
// Session applies as the person's command (orchestrator.ParseCommand).
const (
	cardPause    = "pause"
	cardResume   = "resume"
	cardStop     = "stop"
	cardContinue = "continue"
)

// cardRounds bounds how often one sync renders again after a write: a
// change committed while it wrote is shown before it ends.
const cardRounds = 3

// CardWorker brings a Ticket's status card in Feishu up to date
// (jobs.CardArgs).
type CardWorker struct {
	river.WorkerDefaults[jobs.CardArgs]
	e *Executor
}

// Timeout bounds one update: a post or a few patches.
func (w *CardWorker) Timeout(*river.Job[jobs.CardArgs]) time.Duration { return 2 * time.Minute }

// Work syncs the card; a failure is retried by River. The job queued
// behind a running one (the other slot) can start while that one still
// runs: it waits until the older one ends, so one sync at a time posts or
// patches a Ticket's card (two at once would both take the post for theirs).
func (w *CardWorker) Work(ctx context.Context, job *river.Job[jobs.CardArgs]) error {
	older, err := w.e.olderCardSync(ctx, job.ID, job.Args.TicketID)
	if err != nil {
		return err
	}
	if older {
		return river.JobSnooze(time.Second)
	}
	return w.e.SyncCard(ctx, job.Args.TicketID)
}

// olderCardSync reports whether a card job for ticketID older than job is
// running.
func (e *Executor) olderCardSync(ctx context.Context, job, ticketID int64) (bool, error) {
	// River keeps args as jsonb: SQLite's binary form reads back as
	// text through json().
	args := "CAST(args AS TEXT)"
	if e.deps.DB.Dialect() == db.SQLite {
		args = "json(args)"
	}
	rows, err := e.deps.DB.Query(ctx, `SELECT `+args+` FROM river_job WHERE kind = $1 AND state = 'running' AND id < $2`,
		jobs.CardArgs{}.Kind(), job)
	if err != nil {
		return false, fmt.Errorf("reading the running status card jobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return false, fmt.Errorf("reading the running status card jobs: %w", err)
		}
		var a jobs.CardArgs
		if json.Unmarshal([]byte(raw), &a) == nil && a.TicketID == ticketID {
			return true, nil
		}
	}
	return false, rows.Err()
}

// statusCard is a Ticket's row in ticket_feishu_cards.
type statusCard struct {
	ChatID    string
	MessageID string
	BodySHA   string
}

// showCard enqueues the update of the Ticket's status card. A failure is
// logged: the next change enqueues it again.
func (e *Executor) showCard(ctx context.Context, ticketID int64) {
	if e.deps.Feishu == nil {
		return
	}
	if err := e.deps.Wake.ShowCard(ctx, nil, ticketID); err != nil && ctx.Err() == nil {
		e.cfg.Logger.Warn("enqueueing the status card", "ticket", ticketID, "error", err)
	}
}

// SyncCard brings the status card of a Ticket asked for in Feishu up to
// date: posted once, as a reply in the thread of the request, then patched
// in place whenever what it shows changed. Both go through the outbox and
// the card's message id is stored, so a retry after a crash patches
// rather than posts again (a post that died mid-call is sent again under
// the same uuid, which Feishu answers with the first message). A Ticket
// from GitHub, a proposal, or a service without Feishu has no card.
func (e *Executor) SyncCard(ctx context.Context, ticketID int64) error {
	if e.deps.Feishu == nil {
		return nil
	}
	for range cardRounds {
		changed, err := e.syncCardOnce(ctx, ticketID)
		if err != nil || !changed {
			return err
		}
	}
	return nil
}

func (e *Executor) syncCardOnce(ctx context.Context, ticketID int64) (bool, error) {
	t, err := e.deps.Tickets.Ticket(ctx, e.deps.DB, ticketID)
	if err != nil || t.Proposal || t.SourceCardID == 0 {
		return false, err
	}
	src, err := e.deps.Tickets.Card(ctx, e.deps.DB, t.SourceCardID)
	if err != nil || src.Source != tickets.SourceFeishu {
		return false, err
	}
	row, err := e.readCard(ctx, ticketID)
	if err != nil {
		return false, err
	}
	content, err := e.cardContent(ctx, t)
	if err != nil {
		return false, err
	}
	sha := digest(content.JSON)
	if sha == row.BodySHA {
		return false, nil
	}
	box := &outbox.Box{DB: e.deps.DB, Tickets: e.deps.Tickets, Logger: e.cfg.Logger}
	base := fmt.Sprintf("card:ticket:%d", t.ID)
	if row.MessageID == "" {
		request, err := tickets.FeishuMessageID(ctx, e.deps.DB, src)
		if err != nil || request == "" {
			return false, err
		}
		chat := src.Thread.Repo
		post := func(ctx context.Context) (*feishu.SentMessage, error) {
			return e.deps.Feishu.Reply(ctx, request, feishu.OutgoingMessage{UUID: fmt.Sprintf("superagent-card-%d", t.ID), ChatID: chat, Content: content})
		}
		o := tickets.Outgoing{Key: base, TicketID: t.ID, CardID: src.ID, Source: tickets.SourceFeishu, Kind: KindStatusCard,
			Target: "feishu:message/" + request, Body: t.State}
		// The result is the card's message id and the digest of what it
		// showed when posted. posted says this call made the post (or
		// found the one a dead attempt made): another round that finds
		// the intent already sent logs nothing.
		posted := false
		ref, err := box.Write(ctx, o, func(ctx context.Context) (string, error) {
			m, err := post(ctx)
			if err != nil {
				return "", fmt.Errorf("posting the status card of ticket %d: %w", t.ID, err)
			}
			posted = true
			return m.MessageID + " " + sha, nil
		}, func(ctx context.Context) (string, bool, error) {
			// A post whose answer was lost: the same uuid brings back the
			// message Feishu kept, whose content is unknown here, so the
			// next round patches it.
			m, err := post(ctx)
			if err != nil {
				return "", false, err
			}
			posted = true
			return m.MessageID + " ", true, nil
		})
		if err != nil {
			return false, err
		}
		row.MessageID, row.BodySHA, _ = strings.Cut(ref, " ")
		row.ChatID = chat
		if err := e.saveCard(ctx, t.ID, row); err != nil {
			return false, err
		}
		if posted {
			e.cfg.Logger.Info("status card posted", "ticket", t.ID, "card", src.ID, "message", row.MessageID)
		}
		return true, nil
	}
	// Each patch is its own intent, named by what the card showed before
	// and shows now; a patch sends the whole card, so sending it again is
	// harmless.
	o := tickets.Outgoing{Key: base + ":" + digest(row.BodySHA, sha), TicketID: t.ID, CardID: src.ID, Source: tickets.SourceFeishu,
		Kind: KindStatusCard, Target: "feishu:message/" + row.MessageID, Body: t.State}
	id, chat := row.MessageID, row.ChatID
	patched := false
	if _, err := box.Write(ctx, o, func(ctx context.Context) (string, error) {
		if err := e.deps.Feishu.PatchCard(ctx, id, chat, content); err != nil {
			return "", fmt.Errorf("updating the status card of ticket %d: %w", t.ID, err)
		}
		patched = true
		return id, nil
	}, nil); err != nil {
		return false, err
	}
	row.BodySHA = sha
	if err := e.saveCard(ctx, t.ID, row); err != nil {
		return false, err
	}
	if patched {
		e.cfg.Logger.Info("status card updated", "ticket", t.ID, "card", src.ID, "message", id, "state", t.State)
	}
	return true, nil
}

func (e *Executor) readCard(ctx context.Context, ticketID int64) (statusCard, error) {
	var c statusCard
	err := e.deps.DB.QueryRow(ctx, `SELECT chat_id, message_id, body_sha256 FROM ticket_feishu_cards WHERE ticket_id = $1`, ticketID).
		Scan(&c.ChatID, &c.MessageID, &c.BodySHA)
	if err != nil && !errors.Is(err, db.ErrNoRows) {
		return c, fmt.Errorf("reading the status card of ticket %d: %w", ticketID, err)
	}
	return c, nil
}

func (e *Executor) saveCard(ctx context.Context, ticketID int64, c statusCard) error {
	_, err := e.deps.DB.Exec(ctx, `INSERT INTO ticket_feishu_cards (ticket_id, chat_id, message_id, body_sha256, updated_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (ticket_id) DO UPDATE SET chat_id = $2, message_id = $3, body_sha256 = $4, updated_at = $5`,
		ticketID, c.ChatID, c.MessageID, c.BodySHA, e.cfg.Now().UTC())
	if err != nil {
		return fmt.Errorf("recording the status card of ticket %d: %w", ticketID, err)
	}
	return nil
}

// cardState is the state the card shows, and the colour of its header;
// by names who holds the Ticket (holdBy).
func cardState(t tickets.Ticket, by string) (string, string) {
	switch {
	case t.Stop != nil:
		return "stopped by " + by, "red"
	case t.Pause != nil:
		return "paused by " + by, "grey"
	}
	switch t.State {
	case tickets.TicketWaiting:
		return "waiting for an answer", "orange"
	case tickets.TicketInReview:
		return "in review", "turquoise"
	case tickets.TicketDone:
		return "done", "green"
	case tickets.TicketCancelled:
		return "cancelled", "red"
	}
	return t.State, "blue"
}

// cardCommands are the buttons that apply to the Ticket as it is: pause
// and stop while it lives, resume and stop while paused, continue once a
// person stopped it.
func cardCommands(t tickets.Ticket) []string {
	switch {
	case t.Stop != nil:
		return []string{cardContinue}
	case tickets.Ended(t.State):
		return nil
	case t.Pause != nil:
		return []string{cardResume, cardStop}
	}
	return []string{cardPause, cardStop}
}

// cardContent renders the status card: a shared card (config.update_multi,
// which Feishu requires of a card it patches) with the state, repository,
// pull request, latest Report, use, a link to the Ticket page, and the
// command buttons. Text from people and models goes in plain_text only,
// where Feishu reads no markup.
func (e *Executor) cardContent(ctx context.Context, t tickets.Ticket) (feishu.Content, error) {
	plain := func(s string) map[string]any { return map[string]any{"tag": "plain_text", "content": s} }
	field := func(name, value string) map[string]any {
		return map[string]any{"is_short": true, "text": plain(name + "\n" + value)}
	}
	state, colour := cardState(t, e.holdBy(ctx, t))
	repo := t.Repo
	if repo == "" {
		repo = "not set yet"
	}
	fields := []any{field("State", state), field("Repository", repo)}
	if t.PullNumber != 0 {
		fields = append(fields, field("Pull request", fmt.Sprintf("#%d", t.PullNumber)))
	}
	tot, err := e.sessions.Store().TicketTotals(ctx, e.deps.DB, t.ID)
	if err != nil {
		return feishu.Content{}, err
	}
	use := fmt.Sprintf("%d tokens", tot.Usage.Total())
	if tot.Usage.Cost > 0 {
		use += fmt.Sprintf(", cost %.4f", tot.Usage.Cost)
	}
	fields = append(fields, field("Use", use))
	elements := []any{map[string]any{"tag": "div", "fields": fields}}
	reports, err := e.deps.Tickets.Reports(ctx, e.deps.DB, t.ID)
	if err != nil {
		return feishu.Content{}, err
	}
	if n := len(reports); n > 0 {
		r := reports[n-1]
		summary, _, _ := strings.Cut(r.Summary, "\n\nUsage:")
		line := fmt.Sprintf("Latest report (%s): %s", r.State, oneLine(summary, 200))
		elements = append(elements, map[string]any{"tag": "div", "text": plain(e.deps.Scrubber.Scrub(line))})
	}
	images, err := e.cardShots(ctx, t)
	if err != nil {
		return feishu.Content{}, err
	}
	elements = append(elements, images...)
	var actions []any
	for _, cmd := range cardCommands(t) {
		style := "default"
		if cmd == cardStop {
			style = "danger"
		}
		actions = append(actions, map[string]any{"tag": "button", "type": style, "text": plain(strings.ToUpper(cmd[:1]) + cmd[1:]),
			"value": map[string]any{"action": cmd, "ticket": t.ID}})
	}
	if t.PullNumber != 0 && t.Repo != "" {
		actions = append(actions, map[string]any{"tag": "button", "type": "default", "text": plain("Pull request"),
			"url": fmt.Sprintf("https://github.com/%s/pull/%d", t.Repo, t.PullNumber)})
	}
	if u := e.TicketURL(t.ID); u != "" {
		actions = append(actions, map[string]any{"tag": "button", "type": "default", "text": plain("Ticket page"), "url": u})
	}
	if len(actions) > 0 {
		elements = append(elements, map[string]any{"tag": "action", "actions": actions})
	}
	return feishu.Card(map[string]any{
		"config":   map[string]any{"update_multi": true, "wide_screen_mode": true},
		"header":   map[string]any{"template": colour, "title": plain(oneLine("Ticket "+strconv.FormatInt(t.ID, 10)+": "+t.Title, 100))},
		"elements": elements,
	})
}
