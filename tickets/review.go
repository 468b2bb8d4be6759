package tickets

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ActionReview lets a Ticket post one review on a person's pull request
// (the executor's pr_review). A review Ticket's Mandate allows it and
// reply, and not branch: it never pushes to the person's branch.
const ActionReview = "review"

// ReviewActions is the Mandate's actions of a review Ticket.
var ReviewActions = []string{"reply", ActionReview}

// IsReview reports whether t was asked to review a pull request.
func IsReview(t Ticket) bool { return slices.Contains(t.Mandate.Actions, ActionReview) }

// pullLink is a pull request's address in a message: https://<host>/owner/repo/pull/12.
var pullLink = regexp.MustCompile(`https?://[A-Za-z0-9.-]+/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/pull/([0-9]+)`)

// ReviewRequest reports whether card c asks the bot to review a pull
// request — its first word after any @mentions is "review" — and which
// one: on GitHub the card's own pull request (repo "" and number 0 when
// its Thread has no number), elsewhere the first pull request link of
// its text.
func ReviewRequest(c Card) (repo string, number int, ok bool) {
	if !c.Addressed {
		return "", 0, false
	}
	words := strings.Fields(c.Text)
	for len(words) > 0 && strings.HasPrefix(words[0], "@") {
		words = words[1:]
	}
	if len(words) == 0 || strings.ToLower(strings.TrimRight(words[0], ".!:,")) != "review" {
		return "", 0, false
	}
	if c.Source == SourceGitHub {
		return c.Thread.Repo, c.Thread.Number, c.Thread.Number != 0
	}
	m := pullLink.FindStringSubmatch(c.Text)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(m[2])
	return m[1], n, err == nil && n > 0
}
