package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fakegithub "github.com/superagent-dev/superagent/internal/testkit/github"
	fakeopenai "github.com/superagent-dev/superagent/internal/testkit/openai"
)

// shotLink is the markdown image link the screenshot tool returns.
var shotLink = regexp.MustCompile(`!\[(before|after)\]\((http://[^)\s]+/shots/[0-9a-f]{32}\.png)\)`)

const (
	redPage  = "<!doctype html>\n<html><body style=\"margin:0;background:rgb(255,0,0)\"><h1>Hello</h1></body></html>\n"
	bluePage = "<!doctype html>\n<html><body style=\"margin:0;background:rgb(0,0,255)\"><h1>Hello</h1></body></html>\n"
)

// restyler plays the Executor of two Tickets that change index.html.
// The one asked for "blue" serves the page from a command in the sandbox,
// takes a screenshot on the base commit, changes the page, takes another,
// and puts both links the tool returned in the pull request, which it
// then marks ready. The one asked for "green" puts two images from
// elsewhere in the description instead.
func restyler(req fakeopenai.Request) fakeopenai.Reply {
	results := map[string]int{}
	byID := map[string]string{}
	card, ask := "0", ""
	links := map[string]string{}
	var refusal string
	for _, m := range req.Messages {
		if m.Role == "user" && card == "0" {
			if c := candidateCard.FindStringSubmatch(m.Content); c != nil {
				card = c[1]
				ask = m.Content
			}
		}
		for _, c := range m.ToolCalls {
			byID[c.ID] = c.Name
		}
		if m.Role != "tool" {
			continue
		}
		if strings.HasPrefix(m.Content, "refused") || strings.HasPrefix(m.Content, "error") {
			refusal = m.Content
			continue
		}
		results[byID[m.ToolCallID]]++
		for _, l := range shotLink.FindAllStringSubmatch(m.Content, -1) {
			links[l[1]] = l[0]
		}
	}
	call := func(name string, args any) fakeopenai.Reply {
		b, _ := json.Marshal(args)
		return fakeopenai.Calls(fakeopenai.Call("", name, string(b)))
	}
	serve := "python3 -m http.server 8000 --bind 127.0.0.1"
	shot := func(before bool) fakeopenai.Reply {
		return call("screenshot", map[string]any{"url": "http://localhost:8000/index.html", "serve": serve, "before": before,
			"viewport": map[string]int{"width": 800, "height": 600}})
	}
	green := strings.Contains(ask, "green")
	switch {
	case results["reply"] == 0:
		return call("reply", map[string]any{"purpose": "confirm", "in_reply_to": json.RawMessage(card),
			"text": "I will restyle index.html and open a pull request with before and after screenshots."})
	case !green && links["before"] == "":
		return shot(true)
	case results["edit_file"] == 0:
		colour := "rgb(0,0,255)"
		if green {
			colour = "rgb(0,128,0)"
		}
		return call("edit_file", map[string]any{"path": "index.html", "old_text": "rgb(255,0,0)", "new_text": colour})
	case !green && links["after"] == "":
		return shot(false)
	case results["git_commit"] == 0:
		return call("git_commit", map[string]any{"message": "Restyle the page"})
	case results["git_push"] == 0:
		return call("git_push", map[string]any{})
	case results["pr_open"] == 0:
		body := "Restyles the page.\n\nBefore:\n" + links["before"] + "\n\nAfter:\n" + links["after"]
		if green {
			body = "Restyles the page.\n\n![before](https://i.imgur.com/before.png)\n![after](https://i.imgur.com/after.png)"
		}
		return call("pr_open", map[string]any{"title": "Restyle the page", "body": body})
	case results["pr_update"] == 0 && !strings.Contains(refusal, "not ready"):
		return call("pr_update", map[string]any{"ready": true})
	case results["report"] == 0 && refusal != "" && strings.Contains(refusal, "not ready"):
		return call("report", map[string]any{"state": "blocked", "summary": "The pull request is not ready: " + refusal})
	case results["report"] == 0:
		return call("report", map[string]any{"state": "done", "summary": "Restyled the page in a pull request marked ready, with before and after screenshots."})
	}
	return fakeopenai.Text("Done.")
}

// TestInterfaceChangeShowsItsOwnScreenshots follows an interface change
// through the binary: the Executor serves the page from a command in its
// sandbox, takes before and after screenshots with headless Chromium
// there, and its pull request shows both, which the service serves as PNG
// at addresses under SUPERAGENT_PUBLIC_URL; pr_update ready then passes.
// A second Ticket whose description links two images from elsewhere is
// refused and told to use the screenshot tool.
func TestInterfaceChangeShowsItsOwnScreenshots(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	needBrowser(t)
	databases(t, func(t *testing.T, dbURL string) {
		gh := fakegithub.New(t)
		bare := gh.AddRepo(t, helloRepo, "main", map[string]string{"index.html": redPage, "README.md": "# Hello\n"})
		gh.SetPermission(helloRepo, "Codertocat", "write")
		model := scriptedModel(t, restyler)
		const secret, token = "shots-webhook-secret", "shots-admin-token-0123456789"
		env := serviceEnv(t, dbURL, gh, model, secret, token)
		public := "http://" + env["SUPERAGENT_ADDR"]
		env["SUPERAGENT_PUBLIC_URL"] = public
		env["SUPERAGENT_MODEL_IMAGES"] = "on"
		p := start(t, "serve", env, "serve")
		p.waitHTTP("/readyz", 30*time.Second)
		installApp(t, p, secret, "shots-install", dbURL)
		t.Cleanup(func() {
			if t.Failed() {
				for i, r := range model.Requests() {
					t.Logf("model request %d (%s): %s", i, r.Model, tail(r.LastMessage().Content, 6))
				}
			}
		})

		deliverGitHub(t, p, secret, "issue_comment", "shots-1", commentPayload(t, "@superagent please make the page blue"))
		waitFor(t, 5*time.Minute, "the first pull request to be ready", func() bool {
			prs := gh.PullRequests(helloRepo)
			return len(prs) == 1 && !prs[0].Draft
		})
		pr := gh.PullRequests(helloRepo)[0]
		found := shotLink.FindAllStringSubmatch(pr.Body, -1)
		require.Len(t, found, 2, pr.Body)
		want := map[string]color.RGBA{"before": {255, 0, 0, 255}, "after": {0, 0, 255, 255}}
		for _, l := range found {
			require.True(t, strings.HasPrefix(l[2], public+"/shots/"), l[2])
			resp, err := http.Get(l[2]) // no credentials: as GitHub's image proxy fetches it
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "image/png", resp.Header.Get("Content-Type"))
			img, err := png.Decode(bytes.NewReader(body))
			require.NoError(t, err)
			require.Equal(t, 800, img.Bounds().Dx())
			c := color.RGBAModel.Convert(img.At(790, 590)).(color.RGBA)
			require.Equal(t, want[l[1]], c, "the %s screenshot shows the page %s the change", l[1], l[1])
		}
		// The model that accepts images saw each screenshot after taking it.
		seen := 0
		for _, r := range model.Requests() {
			if m := r.LastMessage(); m.Role == "user" {
				parts, _ := m.Raw["content"].([]any)
				for _, p := range parts {
					u, _ := p.(map[string]any)["image_url"].(map[string]any)
					data, ok := strings.CutPrefix(fmt.Sprint(u["url"]), "data:image/png;base64,")
					if !ok {
						continue
					}
					raw, err := base64.StdEncoding.DecodeString(data)
					require.NoError(t, err)
					_, err = png.Decode(bytes.NewReader(raw))
					require.NoError(t, err)
					seen++
				}
			}
		}
		require.Equal(t, 2, seen, "each screenshot shown once")
		resp, err := http.Get(public + "/shots/" + strings.Repeat("0", 32) + ".png")
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		out, err := exec.Command("git", "--git-dir", bare, "show", "--stat", "--format=", pr.Head).CombinedOutput()
		require.NoError(t, err, string(out))
		require.Contains(t, string(out), "index.html")
		require.NotContains(t, string(out), ".superagent-", "nothing of the shots was committed")

		// The second Ticket links two images from elsewhere.
		gh.AddIssue(helloRepo, 2, "Green page", "", "Codertocat")
		second := commentPayload(t, "@superagent please make the page green")
		var payload map[string]any
		require.NoError(t, json.Unmarshal(second, &payload))
		payload["issue"].(map[string]any)["number"] = 2
		second, err = json.Marshal(payload)
		require.NoError(t, err)
		deliverGitHub(t, p, secret, "issue_comment", "shots-2", second)
		var refused string
		waitFor(t, 5*time.Minute, "the second Ticket's pull request to be refused", func() bool {
			for _, r := range model.Requests() {
				for _, m := range r.Messages {
					if m.Role == "tool" && strings.Contains(m.Content, "refused: not ready") {
						refused = m.Content
						return true
					}
				}
			}
			return false
		})
		require.Contains(t, refused, "it changes a user interface (index.html)")
		require.Contains(t, refused, "other image links do not count: take them with the screenshot tool")
		prs := gh.PullRequests(helloRepo)
		require.Len(t, prs, 2)
		require.True(t, prs[1].Draft, "two arbitrary image links do not make it ready")
		p.waitLog("screenshot taken", time.Second)

		code, _ := p.stop(shutdownWithin)
		require.Equal(t, 0, code)
	})
}

// needBrowser skips a test without Debian's Chromium, except in CI.
func needBrowser(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("/usr/lib/chromium/chromium"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("chromium is not installed")
	}
	if _, err := exec.LookPath("python3"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("python3 is not installed")
	}
}
