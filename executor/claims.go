package executor

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/tickets"
)

// checkClaims refuses a done report whose facts do not hold: work in the
// workspace that GitHub does not have (uncommitted changes, a commit not
// pushed), or a summary that speaks of a pull request the Ticket does not
// have. The refusal says what is missing.
func (e *Executor) checkClaims(ctx context.Context, t tickets.Ticket, summary string) error {
	var problems []string
	unpushed, err := e.unpushed(ctx, t)
	if err != nil {
		return err
	}
	if len(unpushed) > 0 {
		problems = append(problems, fmt.Sprintf("the workspace holds work GitHub does not have (%s): commit it with git_commit and push it with git_push",
			strings.Join(unpushed, " and ")))
	}
	if p := pullClaim(summary, t); p != "" {
		problems = append(problems, p)
	}
	if len(problems) == 0 {
		return nil
	}
	return session.Refuse("not done: %s. Report done once that holds; if it cannot, report blocked with what is left", strings.Join(problems, "; "))
}

// pullMention is a pull request named in a text: "pull request #12",
// "PR 12", ".../pull/12", or "a pull request" without a number.
var pullMention = regexp.MustCompile(`(?i)\b(?:pull request|PR)\b(?:\s*#?\s*([0-9]+))?|/pull/([0-9]+)`)

// negation before a mention says the text does not claim it ("no pull
// request", "without a PR", "did not open a pull request").
var negation = regexp.MustCompile(`(?i)\b(?:no|not|never|without|instead of|didn't|did not|won't|cannot|can't|unable to)\b[^.;,]*$`)

// pullClaim says what is wrong when a summary claims a pull request the
// Ticket does not have, or "".
func pullClaim(summary string, t tickets.Ticket) string {
	for _, m := range pullMention.FindAllStringSubmatchIndex(summary, -1) {
		before := summary[max(0, m[0]-40):m[0]]
		if negation.MatchString(before) {
			continue
		}
		num := ""
		for _, g := range []int{2, 4} {
			if m[g] >= 0 {
				num = summary[m[g]:m[g+1]]
			}
		}
		switch {
		case t.PullNumber == 0:
			return fmt.Sprintf("the summary speaks of a pull request (%q), but this Ticket has none: push its branch and open one with pr_open, "+
				"or say what was delivered instead", summary[m[0]:m[1]])
		case num != "" && num != strconv.Itoa(t.PullNumber):
			return fmt.Sprintf("the summary names pull request %s, but this Ticket's is %s#%d", num, t.Repo, t.PullNumber)
		}
	}
	return ""
}
