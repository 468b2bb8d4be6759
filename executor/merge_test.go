package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/superagent-dev/superagent/internal/db"
	"github.com/superagent-dev/superagent/internal/testkit/dbtest"
	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
	"github.com/superagent-dev/superagent/promptparts"
	"github.com/superagent-dev/superagent/shots"
	"github.com/superagent-dev/superagent/tickets"
)

var theirs = regexp.MustCompile(`already in #([0-9]+)`)

func TestPersonsPullRequestMakesTheExecutorYield(t *testing.T) {
	t.Parallel()
	const (
		twoSentences = "Carol's pull request already fixes the typo. Closing mine."
		oneSentence  = "Carol's pull request already makes the same fix, so I am closing this one in favour of it:"
	)
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, afterPR(func(tn turn) fakeopenai.Reply {
			m := theirs.FindStringSubmatch(tn.cards)
			closes := 0
			for _, s := range tn.steps {
				if s.name == "pr_close" {
					closes++
				}
			}
			switch {
			case m == nil:
				return fakeopenai.Text("Nothing to do.")
			case !tn.called("github_read"):
				return call("github_read", `{"what":"pull_request","number":`+m[1]+`}`)
			case closes == 0:
				return call("pr_close", `{"reason":"`+twoSentences+`","pointer":"octo/hello#`+m[1]+`"}`)
			case closes == 1:
				return call("pr_close", `{"reason":"`+oneSentence+`","pointer":"octo/hello#`+m[1]+`"}`)
			}
			return fakeopenai.Text("Closed mine in favour of theirs.")
		}))
		tk, pr := e.openPR(t)

		// Carol pushed the same fix on her own branch and opened a pull
		// request; she says so on the Ticket's.
		e.gh.PushAs(t, repo, "carol/readme-typo", map[string]string{"README.md": strings.Replace(readme, "projetc", "project", 1)}, "Fix the README typo")
		number := e.gh.AddPullRequest(t, repo, fakegithub.PullRequestSpec{Login: "carol", Head: "carol/readme-typo", Title: "Fix the README typo"})
		e.admit(t, pr, "carol", "This is already in #"+strconv.Itoa(number)+".")
		e.run(t, tk.ID)

		read := e.modelCalls("github_read")
		require.Contains(t, read[len(read)-1].result, `"user": "carol"`, "the Executor read their pull request")
		closes := e.modelCalls("pr_close")
		require.Len(t, closes, 2)
		require.Equal(t, "refused: the reason is 2 sentences; give one", closes[0].result)
		require.Equal(t, "closed octo/hello#"+strconv.Itoa(pr)+", pointing to octo/hello#"+strconv.Itoa(number)+"; the Ticket has ended", closes[1].result)

		mine := e.pull(t, pr)
		require.Equal(t, "closed", mine.State)
		require.False(t, mine.Merged)
		require.Equal(t, "open", e.pull(t, number).State, "their pull request is untouched")

		var yielded []string
		for _, c := range e.gh.Comments() {
			if strings.Contains(c.Body, oneSentence) {
				yielded = append(yielded, c.Body)
			}
			require.NotContains(t, c.Body, twoSentences)
		}
		require.Len(t, yielded, 1)
		require.True(t, strings.HasPrefix(yielded[0], promptparts.DefaultAgentLine+"\n\n"+oneSentence+" octo/hello#"+strconv.Itoa(number)), yielded[0])
	})
}

func TestAutoMergeOnlyBelowTheThreshold(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		e := setup(t, d, afterPR(func(tn turn) fakeopenai.Reply {
			switch {
			case strings.Contains(tn.cards, "approved: "):
				if !tn.called("pr_update") {
					return call("pr_update", `{"ready":true}`)
				}
				if !tn.called("pr_merge") {
					return call("pr_merge", `{}`)
				}
			case strings.Contains(tn.cards, "merge it"):
				if !tn.called("pr_merge") {
					return call("pr_merge", `{}`)
				}
			}
			return fakeopenai.Text("Done for now.")
		}))
		saveSettings(t, e, `{"delivery_requirements": {"auto_merge": {"enabled": true, "max_changed_lines": 1, "checks": ["test"], "approvals": 1}}}`)
		tk, pr := e.openPR(t)
		head := e.pull(t, pr).HeadSHA
		e.gh.AddCheckRun(repo, head, fakegithub.CheckRunSpec{Name: "test", Conclusion: "success"})
		e.review(t, pr, "bob", "APPROVED", "Looks good.")
		e.run(t, tk.ID)

		// The fix changes two lines (one removed, one added): over 1.
		merges := e.modelCalls("pr_merge")
		require.Len(t, merges, 1)
		require.Equal(t, "refused: auto-merge is not allowed: it changes 2 lines, over the threshold of 1; leave the merge to a person", merges[0].result)
		require.False(t, e.pull(t, pr).Merged)
		require.False(t, e.pull(t, pr).Draft, "marked ready before trying")

		saveSettings(t, e, `{"delivery_requirements": {"auto_merge": {"enabled": true, "max_changed_lines": 10, "checks": ["test"], "approvals": 1}}}`)
		e.admit(t, pr, "bob", "The threshold is 10 lines now, merge it.")
		e.run(t, tk.ID)

		merges = e.modelCalls("pr_merge")
		require.Len(t, merges, 2)
		require.Equal(t, "merged octo/hello#"+strconv.Itoa(pr)+" (2 changed lines, checks green, approving reviews: 1); the Ticket is done", merges[1].result)
		merged := e.pull(t, pr)
		require.True(t, merged.Merged)
		require.Equal(t, "closed", merged.State)
		require.Contains(t, gitShow(t, e.bare, "main:README.md"), "This project says hello.")
	})
}

// pr_update ready:true is refused while the pull request lacks the pushed
// work or, for a user interface change, the before and after screenshots
// the service took for this Ticket: any two image links, or another
// Ticket's screenshot, do not do.
func TestReadyNeedsPushedWorkAndScreenshots(t *testing.T) {
	t.Parallel()
	const pub = "https://agent.example.com"
	const anyImages = "Adds a landing page. Before: ![before](https://example.com/before.png) After: ![after](https://example.com/after.png)"
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		var own, others string // descriptions with this Ticket's and with another's shots
		e := setup(t, d, afterPR(func(tn turn) fakeopenai.Reply {
			if !strings.Contains(tn.cards, "landing page") {
				return fakeopenai.Text("Nothing to do.")
			}
			updates := 0
			for _, s := range tn.steps {
				if s.name == "pr_update" {
					updates++
				}
			}
			body := func(b string) string {
				args, _ := json.Marshal(map[string]any{"ready": true, "body": b})
				return string(args)
			}
			switch {
			case !tn.called("write_file"):
				return call("write_file", `{"path":"static/index.html","content":"<h1>Hello</h1>\n"}`)
			case !tn.called("git_commit"):
				return call("git_commit", `{"message":"Add a landing page"}`)
			case updates == 0:
				return call("pr_update", `{"ready":true}`)
			case !tn.called("git_push"):
				return call("git_push", `{}`)
			case updates == 1:
				return call("pr_update", body("Adds a landing page."))
			case updates == 2:
				return call("pr_update", body(anyImages))
			case updates == 3:
				return call("pr_update", body(others))
			case updates == 4:
				return call("pr_update", body(own))
			}
			return fakeopenai.Text("Ready for review.")
		}))
		e.publicURL = pub
		e.x = e.executor(t)
		tk, pr := e.openPR(t)
		ctx := context.Background()
		store := shots.New(shots.Config{}, d)
		other, err := e.store.CreateTicket(ctx, d, tickets.Ticket{Title: "Another page", Repo: repo})
		require.NoError(t, err)
		img := tinyPNG(t)
		link := func(ticket int64, label string) string {
			sh, err := store.Put(ctx, ticket, label+": http://localhost:8000/", "http://localhost:8000/", img)
			require.NoError(t, err)
			return "![" + label + "](" + shots.URL(pub, sh.Token) + ")"
		}
		after := link(tk.ID, "after")
		own = "Adds a landing page.\n\n" + link(tk.ID, "before") + "\n" + after
		others = "Adds a landing page.\n\n" + link(other.ID, "before") + "\n" + after
		e.admit(t, pr, "alice", "Please add a landing page and mark it ready.")
		e.run(t, tk.ID)

		updates := e.modelCalls("pr_update")
		require.Len(t, updates, 5)
		require.Contains(t, updates[0].result, "refused: not ready: the workspace's commit ")
		require.Contains(t, updates[0].result, "commit and push first")
		require.Contains(t, updates[1].result, "refused: not ready: it changes a user interface (static/index.html): the description needs this Ticket's own screenshots, one before the change and one after (it shows 0 before and 0 after)")
		require.NotContains(t, updates[1].result, "commit and push first")
		require.Contains(t, updates[2].result, "other image links do not count: take them with the screenshot tool", "any two image links do not do")
		require.Contains(t, updates[3].result, "it shows 0 before and 1 after; 1 linked screenshot(s) are not this Ticket's")
		require.Equal(t, "updated octo/hello#"+strconv.Itoa(pr)+"; it is ready for review", updates[4].result)

		p := e.pull(t, pr)
		require.False(t, p.Draft)
		require.True(t, strings.HasPrefix(p.Body, promptparts.DefaultAgentLine+"\n\n"+own), p.Body)
	})
}

// tinyPNG is a small valid PNG.
func tinyPNG(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 4, 3))))
	return buf.Bytes()
}
