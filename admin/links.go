package admin

import (
	"fmt"
	"strings"

	"github.com/superagent-dev/superagent/tickets"
)

// ticketLink is one of a Ticket's places on GitHub or Feishu.
type ticketLink struct {
	Label string
	URL   string
}

// ticketLinks lists where a Ticket lives: its pull request and each Thread
// it follows. A Thread links to the address its cards carry (GitHub's
// html_url, so GitHub Enterprise links stay on its host); a GitHub Thread
// without a card links to github.com. A Feishu Thread without a card has
// no address to link to and is left out.
func ticketLinks(t tickets.Ticket, threads []tickets.Thread, cards []tickets.Card) []ticketLink {
	byThread := map[string]string{}
	for _, c := range cards {
		if c.URL != "" && byThread[c.Thread.Key] == "" {
			u, _, _ := strings.Cut(c.URL, "#")
			byThread[c.Thread.Key] = u
		}
	}
	var out []ticketLink
	seen := map[string]bool{}
	add := func(label, url string) {
		if url != "" && !seen[url] {
			seen[url] = true
			out = append(out, ticketLink{Label: label, URL: url})
		}
	}
	if t.PullNumber != 0 && t.Repo != "" {
		add(fmt.Sprintf("Pull request %s#%d", t.Repo, t.PullNumber), fmt.Sprintf("https://github.com/%s/pull/%d", t.Repo, t.PullNumber))
	}
	for _, th := range threads {
		url := byThread[th.Key]
		if url == "" && th.Source == tickets.SourceGitHub && th.Repo != "" && th.Number > 0 {
			url = fmt.Sprintf("https://github.com/%s/issues/%d", th.Repo, th.Number)
		}
		label := th.Key
		if th.Title != "" {
			label += ": " + th.Title
		}
		add(label, url)
	}
	return out
}
