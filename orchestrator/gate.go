package orchestrator

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/outbox"
	"github.com/superagent-dev/superagent/policy"
	"github.com/superagent-dev/superagent/tickets"
)

// Gate decides who may start work by explicit request and who may change
// the prompts. Every check is a fact of the host: no prompt text reaches it.
type Gate struct {
	// GitHubPermission is the least repository permission (admin, maintain,
	// write, triage, read) an author needs. Default write.
	GitHubPermission string
	// FeishuChats are chat ids in which any member may ask; FeishuMembers
	// are open_ids who may ask in any chat the bot is in. Default: none.
	FeishuChats, FeishuMembers []string
	// AdminGitHubLogins and AdminFeishuIDs may ask the main Session to save
	// prompts. Default: none.
	AdminGitHubLogins, AdminFeishuIDs []string
}

// need is the least GitHub permission the gate asks for.
func (g Gate) need() string {
	if g.GitHubPermission == "" {
		return "write"
	}
	return g.GitHubPermission
}

// Allows reports whether a GitHub permission level passes the gate.
func (g Gate) Allows(level string) bool {
	have, ok := githubLevels[level]
	return ok && have >= githubLevels[g.need()]
}

// githubLevels orders GitHub's permission names.
var githubLevels = map[string]int{"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}

// Author reports why a card's author may not start work, or nil when they
// pass the gate.
func (g Gate) Author(c tickets.Card) error {
	if c.Author.Type != tickets.AuthorUser {
		return fmt.Errorf("the author is a bot; only people start work")
	}
	switch c.Source {
	case tickets.SourceGitHub:
		need := g.need()
		if !g.Allows(c.Author.Permission) {
			perm := c.Author.Permission
			if perm == "" {
				perm = "unknown"
			}
			return fmt.Errorf("the author's permission on %s is %s; %s or higher is needed", c.Thread.Repo, perm, need)
		}
		return nil
	case tickets.SourceFeishu:
		if slices.Contains(g.FeishuMembers, c.Author.ID) || slices.Contains(g.FeishuChats, c.Thread.Repo) {
			return nil
		}
		return fmt.Errorf("neither the author nor the chat is on the allowed Feishu lists")
	}
	return fmt.Errorf("unknown source %q", c.Source)
}

// ExplicitNew is the check of an explicit new Ticket: a card addressed to
// the bot from an author who passes the gate.
func (g Gate) ExplicitNew(c tickets.Card) error {
	if !c.Addressed {
		return fmt.Errorf("card %d does not address the bot, so it is no explicit request", c.ID)
	}
	if err := g.Author(c); err != nil {
		return fmt.Errorf("card %d cannot start work: %w", c.ID, err)
	}
	return nil
}

// Admin is the check of orchestrator_prompts_save: the card must be an
// explicit request (addressed, by a person) from an admin identity.
func (g Gate) Admin(c tickets.Card) error {
	if !c.Addressed || c.Author.Type != tickets.AuthorUser {
		return fmt.Errorf("card %d is not a person's explicit request to the bot", c.ID)
	}
	switch {
	case c.Source == tickets.SourceGitHub && c.Author.Login != "" && slices.Contains(g.AdminGitHubLogins, c.Author.Login):
		return nil
	case c.Source == tickets.SourceFeishu && c.Author.ID != "" && slices.Contains(g.AdminFeishuIDs, c.Author.ID):
		return nil
	}
	return fmt.Errorf("the author of card %d is not an admin", c.ID)
}

// InferredNew is the check of an inferred new Ticket: at least one rule,
// each enabled, and a mode that infers. It reports whether the Ticket must
// wait as a proposal.
func InferredNew(p policy.Policy, rules []string) (proposal bool, err error) {
	if err := p.CheckInferred(rules); err != nil {
		return false, err
	}
	return p.Mode == policy.Propose, nil
}

// Word limits of the main Session's notes.
const (
	RoutingNoteWords = 30
	TicketNoteWords  = 100
)

// RoutingNote refuses a routing note over RoutingNoteWords words.
func RoutingNote(note string) error {
	if n := outbox.Words(note); n > RoutingNoteWords {
		return fmt.Errorf("the routing note has %d words; at most %d are allowed", n, RoutingNoteWords)
	}
	return nil
}

// TicketNote refuses an empty note or one over TicketNoteWords words.
func TicketNote(text string) error {
	n := outbox.Words(text)
	if n == 0 {
		return fmt.Errorf("the note is empty")
	}
	if n > TicketNoteWords {
		return fmt.Errorf("the note has %d words; at most %d are allowed", n, TicketNoteWords)
	}
	return nil
}

// TicketFacts is what the attach check knows of the Ticket.
type TicketFacts struct {
	Ticket tickets.Ticket
	// Threads are the Threads the Ticket follows.
	Threads []tickets.Thread
	// Messages are message ids that belong to it: its source message and
	// the acknowledgements and messages it sent (feishu:message/<id>).
	Messages []string
	// BranchTickets counts the live Tickets working on Ticket.Repo@Branch.
	BranchTickets int
}

// Attach checks that reference is explicit in the card and belongs to the
// Ticket: its issue or pull request (owner/repo#N), its source message or
// an acknowledgement (feishu:message/<id>), or a recent change on its
// branch (owner/repo@branch) when exactly one Ticket works there.
func Attach(c tickets.Card, reference string, f TicketFacts) error {
	ref := strings.TrimSpace(reference)
	if ref == "" {
		return fmt.Errorf("attach needs the explicit reference that ties card %d to ticket %d", c.ID, f.Ticket.ID)
	}
	if tickets.Ended(f.Ticket.State) {
		return fmt.Errorf("ticket %d has ended", f.Ticket.ID)
	}
	if !cardReferences(c, ref) {
		return fmt.Errorf("card %d does not reference %s", c.ID, ref)
	}
	if repo, num, ok := issueRef(ref); ok {
		for _, th := range f.Threads {
			if th.Source == tickets.SourceGitHub && strings.EqualFold(th.Repo, repo) && th.Number == num {
				return nil
			}
		}
		return fmt.Errorf("%s does not belong to ticket %d", ref, f.Ticket.ID)
	}
	if repo, branch, ok := strings.Cut(ref, "@"); ok && !strings.Contains(ref, ":") {
		if !strings.EqualFold(repo, f.Ticket.Repo) || branch != f.Ticket.Branch || f.Ticket.Branch == "" {
			return fmt.Errorf("%s is not the branch of ticket %d", ref, f.Ticket.ID)
		}
		if f.BranchTickets != 1 {
			return fmt.Errorf("%d Tickets work on %s; a change attaches only when exactly one does", f.BranchTickets, ref)
		}
		return nil
	}
	if slices.Contains(f.Messages, ref) {
		return nil
	}
	return fmt.Errorf("%s does not belong to ticket %d", ref, f.Ticket.ID)
}

var issueRefSyntax = regexp.MustCompile(`^([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#([0-9]+)$`)

func issueRef(ref string) (string, int, bool) {
	m := issueRefSyntax.FindStringSubmatch(ref)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(m[2])
	return m[1], n, err == nil
}

// cardReferences reports whether ref is explicit in the card: one of its
// references, or the issue, pull request or branch its Thread is.
func cardReferences(c tickets.Card, ref string) bool {
	for _, r := range c.References {
		if strings.EqualFold(r.String(), ref) {
			return true
		}
	}
	th := c.Thread
	if th.Source == tickets.SourceGitHub && th.Number > 0 && strings.EqualFold(th.Repo+"#"+strconv.Itoa(th.Number), ref) {
		return true
	}
	if th.HeadRef != "" && strings.EqualFold(th.Repo, strings.Split(ref, "@")[0]) && strings.HasSuffix(ref, "@"+th.HeadRef) {
		return true
	}
	return th.Key == "github:"+ref
}

// Wait guard limits: the main Session never waits.
const (
	MaxShellTimeoutSeconds = 30
	MaxJobWaitSeconds      = 5
)

var sleepCommand = regexp.MustCompile(`(^|[;&|\s(])(sleep|timeout|wait)\s`)

// WaitGuard refuses tool arguments that would make the main Session wait:
// a sleep, a shell timeout over 30 s, a job wait over 5 s.
func WaitGuard(args json.RawMessage) error {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return nil //nolint:nilerr // the schema check reports malformed arguments
	}
	var problems []string
	for k, v := range m {
		n, isNum := v.(float64)
		switch k {
		case "sleep", "sleep_seconds", "delay_seconds":
			problems = append(problems, "the main Session never sleeps")
		case "timeout_seconds", "timeout":
			if isNum && n > MaxShellTimeoutSeconds {
				problems = append(problems, fmt.Sprintf("a timeout of %g s is over the %d s limit", n, MaxShellTimeoutSeconds))
			}
		case "wait_seconds", "job_wait_seconds", "wait":
			if isNum && n > MaxJobWaitSeconds {
				problems = append(problems, fmt.Sprintf("a job wait of %g s is over the %d s limit", n, MaxJobWaitSeconds))
			}
		case "command":
			if s, ok := v.(string); ok && sleepCommand.MatchString(s) {
				problems = append(problems, "the main Session never sleeps or waits in a command")
			}
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}
