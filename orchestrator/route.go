package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/githubapp"
	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/policy"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// Decision is one routing decision of orchestrator_route; its tags are
// the schema the model reads.
type Decision struct {
	Candidate int64    `json:"candidate" jsonschema_description:"the candidate card's id"`
	Action    string   `json:"action" jsonschema:"enum=new,enum=attach,enum=ignore"`
	Ticket    int64    `json:"ticket,omitempty" jsonschema_description:"attach: the Ticket"`
	Reference string   `json:"reference,omitempty" jsonschema_description:"attach: the card's explicit reference that belongs to the Ticket (owner/repo#12, owner/repo@branch, feishu:message/<id>)"`
	Title     string   `json:"title,omitempty" jsonschema_description:"new: a short title"`
	Repo      string   `json:"repo,omitempty" jsonschema_description:"new: owner/name of the repository to work in; attach: the repository the card names for a Ticket that has none yet (set once, for its requester)"`
	Rules     []string `json:"rules,omitempty" jsonschema_description:"new, inferred: the enabled policy rule ids that admit it"`
	Note      string   `json:"note,omitempty" jsonschema_description:"routing facts for the Executor, at most 30 words"`
}

type routeArgs struct {
	Decisions []Decision `json:"decisions" jsonschema:"minItems=1"`
}

// refusal is a decision the host refuses; the model reads its reason.
type refusal struct {
	reason string
	// linkFor is the Feishu user refused for want of a linked GitHub
	// login, whom tellRefusal offers the link privately.
	linkFor string
}

func (r *refusal) Error() string { return r.reason }

func refuse(format string, args ...any) error { return &refusal{reason: fmt.Sprintf(format, args...)} }

// route applies decisions one by one, each in its own transaction, and
// returns one line per decision. The acknowledgements are sent after.
func (o *Orchestrator) route(ctx context.Context, _ session.Call, args routeArgs) (string, error) {
	pol, err := o.policy(ctx)
	if err != nil {
		return "", err
	}
	lines := make([]string, 0, len(args.Decisions))
	for i, d := range args.Decisions {
		result, err := o.decide(ctx, d, pol)
		var r *refusal
		switch {
		case errors.As(err, &r):
			result = "refused: " + r.reason
			o.cfg.Logger.Info("routing decision refused", "card", d.Candidate, "decision", d.Action, "reason", r.reason)
			// The panel's cards inbox shows why the card is still waiting.
			if err := o.deps.Tickets.SetRouteRefusal(ctx, o.deps.DB, d.Candidate, r.reason); err != nil {
				return "", err
			}
		case err != nil:
			return "", fmt.Errorf("decision %d (candidate %d): %w", i+1, d.Candidate, err)
		}
		lines = append(lines, fmt.Sprintf("%d. candidate %d: %s", i+1, d.Candidate, result))
	}
	o.deliver(ctx)
	return strings.Join(lines, "\n"), nil
}

func (o *Orchestrator) policy(ctx context.Context) (policy.Policy, error) {
	settings, _, err := o.deps.Prompts.Current(ctx)
	if err != nil {
		return policy.Policy{}, fmt.Errorf("reading the policy: %w", err)
	}
	return settings.Policy, nil
}

// decide applies one decision in one transaction: the Ticket, its Mandate,
// its subscription to the card's Thread, the card's state and note, the
// Executor job and the acknowledgement intent all commit together or not
// at all. A decision already applied (a retry after a crash, or the model
// repeating itself) answers ok again and changes nothing.
func (o *Orchestrator) decide(ctx context.Context, d Decision, pol policy.Policy) (string, error) {
	if err := RoutingNote(d.Note); err != nil {
		return "", refuse("%s", err)
	}
	// Asking GitHub for a permission takes a network round trip: before
	// the transaction, which on SQLite holds the only write lock.
	switch {
	case d.Action == "new":
		if err := o.gateTarget(ctx, d); err != nil {
			return "", err
		}
	case d.Action == "attach" && strings.TrimSpace(d.Repo) != "":
		if err := o.gateAttachRepo(ctx, d); err != nil {
			return "", err
		}
	}
	var (
		result string
		card   tickets.Card
		fresh  bool
	)
	err := o.deps.DB.InTx(ctx, func(tx *db.Tx) error {
		st := o.deps.Tickets
		c, err := st.Card(ctx, tx, d.Candidate)
		card = c
		if errors.Is(err, tickets.ErrNotFound) {
			return refuse("there is no card %d", d.Candidate)
		}
		if err != nil {
			return err
		}
		if c.State != tickets.CardCandidate {
			if done, ok := already(c, d); ok {
				result = done
				return nil
			}
			return refuse("card %d is not waiting to be routed (it is %s)", c.ID, c.State)
		}
		fresh = true
		switch d.Action {
		case "ignore":
			if err := st.SetCardState(ctx, tx, c.ID, tickets.CardIgnored, 0); err != nil {
				return err
			}
			result = "ok (ignored)"
			return st.SetRoutingNote(ctx, tx, c.ID, d.Note)
		case "new":
			result, err = o.newTicket(ctx, tx, c, d, pol)
			return err
		case "attach":
			result, err = o.attach(ctx, tx, c, d)
			return err
		}
		return refuse("unknown action %q", d.Action)
	})
	if err == nil && fresh {
		o.logRouted(ctx, card, d)
	}
	return result, err
}

// logRouted tells, once the decision has committed, where a card went and,
// for a new Ticket, that the Ticket opened.
func (o *Orchestrator) logRouted(ctx context.Context, c tickets.Card, d Decision) {
	log := o.cfg.Logger
	if d.Action == "ignore" {
		log.Info("card routed", "card", c.ID, "decision", d.Action, "repo", c.Thread.Repo)
		return
	}
	after, err := o.deps.Tickets.Card(ctx, o.deps.DB, c.ID)
	if err != nil || after.TicketID == 0 {
		return
	}
	log.Info("card routed", "card", c.ID, "decision", d.Action, "ticket", after.TicketID, "repo", c.Thread.Repo)
	if d.Action == "new" {
		t, err := o.deps.Tickets.Ticket(ctx, o.deps.DB, after.TicketID)
		if err != nil {
			return
		}
		log.Info("ticket opened", "ticket", t.ID, "card", c.ID, "repo", t.Repo, "origin", t.Origin,
			"state", t.State, "proposal", t.Proposal)
	}
}

// already recognises a decision that was applied before.
func already(c tickets.Card, d Decision) (string, bool) {
	switch {
	case d.Action == "ignore" && c.State == tickets.CardIgnored:
		return "ok (already ignored)", true
	case d.Action == "attach" && c.State == tickets.CardRouted && c.TicketID == d.Ticket:
		return fmt.Sprintf("ok (already attached to ticket %d)", c.TicketID), true
	case d.Action == "new" && c.State == tickets.CardRouted && c.TicketID != 0:
		return fmt.Sprintf("ok (already ticket %d)", c.TicketID), true
	}
	return "", false
}

// defaultActions is what a new Ticket may do in its repositories.
var defaultActions = []string{"reply", "branch", "pull_request"}

func (o *Orchestrator) newTicket(ctx context.Context, tx *db.Tx, c tickets.Card, d Decision, pol policy.Policy) (string, error) {
	st := o.deps.Tickets
	title := oneLine(d.Title)
	if title == "" {
		return "", refuse("a new Ticket needs a title")
	}
	t := tickets.Ticket{Title: title, SourceCardID: c.ID, Rules: d.Rules, Origin: tickets.OriginExplicit,
		Mandate: tickets.Mandate{Source: c.Source, Rules: d.Rules, Actions: defaultActions}}
	explicitErr := o.cfg.Gate.ExplicitNew(c)
	switch {
	case len(d.Rules) == 0 && explicitErr != nil:
		return "", refuse("%s", explicitErr)
	case len(d.Rules) == 0 && !pol.ExplicitRequestExemption && len(pol.Enabled()) == 0:
		// What the Policy section says: with the exemption off, only a
		// rule admits, and none is enabled.
		return "", refuse("the explicit-request exemption is off and no policy rule is enabled, so no request is admitted")
	case len(d.Rules) == 0 && !pol.ExplicitRequestExemption:
		return "", refuse("the explicit-request exemption is off: name the enabled policy rule that admits this request")
	case explicitErr == nil:
		for _, id := range d.Rules {
			if r, ok := pol.Rule(id); !ok || !r.Enabled {
				return "", refuse("policy rule %q is not enabled", id)
			}
		}
	default:
		proposal, err := InferredNew(pol, d.Rules)
		if err != nil {
			return "", refuse("%s", err)
		}
		t.Origin, t.Proposal = tickets.OriginInferred, proposal
		if proposal {
			t.State = tickets.TicketWaiting
		}
	}
	if t.Origin == tickets.OriginExplicit {
		author := c.Author
		t.Mandate.RequestedBy = &author
	}
	repo := strings.TrimSpace(d.Repo)
	if repo == "" && c.Source == tickets.SourceGitHub {
		repo = c.Thread.Repo
	}
	if repo != "" {
		inst, err := githubapp.InstallationFor(ctx, tx, repo)
		if err != nil {
			return "", fmt.Errorf("checking repository %s: %w", repo, err)
		}
		if inst == 0 {
			return "", refuse("the GitHub App is not installed on %s", repo)
		}
		t.Repo, t.Mandate.Repos = repo, []string{repo}
	}
	if err := reviewMandate(c, &t); err != nil {
		return "", err
	}
	created, err := st.CreateTicket(ctx, tx, t)
	if err != nil {
		return "", err
	}
	if err := o.place(ctx, tx, c, created, d.Note); err != nil {
		return "", err
	}
	if err := o.followReviewed(ctx, tx, c, created); err != nil {
		return "", err
	}
	if created.Proposal {
		target, err := o.messageTarget(ctx, tx, c)
		if err != nil {
			return "", err
		}
		how := fmt.Sprintf("reply \"@%s accept\"", o.cfg.BotLogin)
		if c.Source == tickets.SourceFeishu {
			how = "press Accept"
		}
		text := fmt.Sprintf("Proposed work: %s (policy rules: %s). Nothing starts until a person accepts: %s.",
			title, strings.Join(d.Rules, ", "), how)
		if err := o.record(ctx, tx, "proposal:ticket:"+itoa(created.ID), outbox.KindProposal, c, created.ID, target, text); err != nil {
			return "", err
		}
		return fmt.Sprintf("ok (ticket %d proposed; it waits for a person to accept it)", created.ID), nil
	}
	return fmt.Sprintf("ok (ticket %d created)", created.ID), nil
}

// place subscribes the Ticket to the card's Thread, routes the card to it,
// wakes its Executor (unless paused or proposed) and records the pickup
// acknowledgement.
func (o *Orchestrator) place(ctx context.Context, tx *db.Tx, c tickets.Card, t tickets.Ticket, note string) error {
	st := o.deps.Tickets
	if err := st.Subscribe(ctx, tx, t.ID, c.Thread.ID); err != nil {
		return err
	}
	if err := st.SetCardState(ctx, tx, c.ID, tickets.CardRouted, t.ID); err != nil {
		return err
	}
	if err := st.SetRoutingNote(ctx, tx, c.ID, note); err != nil {
		return err
	}
	if t.Pause == nil && !t.Proposal {
		if err := o.EnqueueExecutor(ctx, tx, t.ID); err != nil {
			return err
		}
	}
	return o.recordAck(ctx, tx, c, t.ID)
}

func (o *Orchestrator) attach(ctx context.Context, tx *db.Tx, c tickets.Card, d Decision) (string, error) {
	st := o.deps.Tickets
	if d.Ticket == 0 {
		return "", refuse("attach needs a ticket")
	}
	t, err := st.Ticket(ctx, tx, d.Ticket)
	if errors.Is(err, tickets.ErrNotFound) {
		return "", refuse("there is no ticket %d", d.Ticket)
	}
	if err != nil {
		return "", err
	}
	facts, err := o.facts(ctx, tx, t)
	if err != nil {
		return "", err
	}
	if err := Attach(c, d.Reference, facts); err != nil {
		return "", refuse("%s", err)
	}
	set, err := o.setRepoOnAttach(ctx, tx, t, d)
	if err != nil {
		return "", err
	}
	if err := o.place(ctx, tx, c, t, d.Note); err != nil {
		return "", err
	}
	if set {
		return fmt.Sprintf("ok (attached to ticket %d, which now works in %s)", t.ID, strings.TrimSpace(d.Repo)), nil
	}
	return fmt.Sprintf("ok (attached to ticket %d)", t.ID), nil
}

// facts gathers what the attach check knows of a Ticket.
func (o *Orchestrator) facts(ctx context.Context, q db.Querier, t tickets.Ticket) (TicketFacts, error) {
	st := o.deps.Tickets
	threads, err := st.TicketThreads(ctx, q, t.ID)
	if err != nil {
		return TicketFacts{}, err
	}
	f := TicketFacts{Ticket: t, Threads: threads}
	if t.SourceCardID != 0 {
		src, err := st.Card(ctx, q, t.SourceCardID)
		if err != nil {
			return TicketFacts{}, err
		}
		if src.Source == tickets.SourceFeishu {
			id, err := tickets.FeishuMessageID(ctx, q, src)
			if err != nil {
				return TicketFacts{}, err
			}
			if id != "" {
				f.Messages = append(f.Messages, "feishu:message/"+id)
			}
		}
	}
	sent, err := st.Outgoings(ctx, q, t.ID)
	if err != nil {
		return TicketFacts{}, err
	}
	for _, m := range sent {
		if strings.HasPrefix(m.Target, "feishu:message/") {
			f.Messages = append(f.Messages, m.Target)
		}
	}
	if t.Branch != "" {
		if err := q.QueryRow(ctx, `SELECT COUNT(*) FROM tickets WHERE repo = $1 AND branch = $2 AND state NOT IN ('done', 'cancelled')`,
			t.Repo, t.Branch).Scan(&f.BranchTickets); err != nil {
			return TicketFacts{}, fmt.Errorf("counting tickets on %s@%s: %w", t.Repo, t.Branch, err)
		}
	}
	return f, nil
}

// gateTarget checks that the person who asked may open work in repo, the
// Ticket's target: a request made on GitHub passed the gate in its own
// repository; another repository goes through MayWorkIn, and a request
// made on Feishu through FeishuRequesterMayOpen (which also tells the
// person a refusal). A repository the App is not installed on is left to
// newTicket, which refuses it. The model's choice of repository never
// widens what the person may do.
func (o *Orchestrator) gateTarget(ctx context.Context, d Decision) error {
	c, err := o.deps.Tickets.Card(ctx, o.deps.DB, d.Candidate)
	if err != nil {
		return nil //nolint:nilerr // decide refuses a card that is not there
	}
	repo := strings.TrimSpace(d.Repo)
	if c.Source == tickets.SourceFeishu && repo != "" && c.State == tickets.CardCandidate {
		return o.gateFeishuTarget(ctx, c, repo)
	}
	if c.Source != tickets.SourceGitHub || c.Author.Type != tickets.AuthorUser || repo == "" || strings.EqualFold(repo, c.Thread.Repo) {
		return nil
	}
	inst, err := githubapp.InstallationFor(ctx, o.deps.DB, repo)
	if err != nil || inst == 0 {
		return err // newTicket refuses a repository the App is not installed on
	}
	return asRefusal(o.MayWorkIn(ctx, o.deps.DB, c, repo))
}
