package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/superagent-dev/superagent/executor/workspace"
	"github.com/superagent-dev/superagent/session"
	"github.com/superagent-dev/superagent/shots"
	"github.com/superagent-dev/superagent/tickets"
)

// ToolScreenshot takes a screenshot of a page served inside the sandbox.
const ToolScreenshot = "screenshot"

const screenshotDescription = "Take a PNG screenshot, with headless Chromium inside the Ticket's sandbox, of a page served there: " +
	"give serve, the command that serves it (e.g. python3 -m http.server 8000 --bind 127.0.0.1), and url on localhost; " +
	"each command has a sandbox of its own, so a server an earlier run_command started is gone. " +
	"before: true takes it on the base commit (a clean copy of the commit the branch starts from), else the workspace as it is. " +
	"The service keeps the image and returns the markdown image link to put in the pull request description: " +
	"a change to a user interface is ready only with this tool's before and after images there."

type viewportArgs struct {
	Width  int `json:"width" jsonschema:"minimum=320,maximum=1920"`
	Height int `json:"height" jsonschema:"minimum=200,maximum=2000"`
}

type screenshotArgs struct {
	URL      string        `json:"url" jsonschema_description:"the page inside the sandbox: http://localhost:PORT/… (with serve) or file:///workspace/…"`
	Serve    string        `json:"serve,omitempty" jsonschema_description:"the command that serves the page, run in the background of the shot's sandbox from the root of the checkout; the shot waits until url's port accepts connections"`
	Viewport *viewportArgs `json:"viewport,omitempty" jsonschema_description:"default 1280x800"`
	FullPage bool          `json:"full_page,omitempty" jsonschema_description:"the whole page, up to 4000 pixels tall, instead of the viewport"`
	Before   bool          `json:"before,omitempty" jsonschema_description:"take it on the base commit: the state before the Ticket's change"`
	Timeout  int           `json:"timeout_seconds,omitempty" jsonschema:"minimum=5,maximum=180" jsonschema_description:"default 60"`
}

func (e *Executor) screenshot(ctx context.Context, ws *workspace.Workspace, t tickets.Ticket, a screenshotArgs) (string, error) {
	if e.cfg.PublicURL == "" {
		return "", session.Refuse("the service has no public address (SUPERAGENT_PUBLIC_URL), so no one could see a screenshot: say so in the pull request instead")
	}
	shot := workspace.Shot{URL: strings.TrimSpace(a.URL), Serve: a.Serve, FullPage: a.FullPage, Timeout: time.Duration(a.Timeout) * time.Second}
	if a.Viewport != nil {
		shot.Width, shot.Height = a.Viewport.Width, a.Viewport.Height
	}
	label := "after"
	on := "the workspace"
	if a.Before {
		base, err := e.baseRef(ctx, t)
		if err != nil {
			return "", err
		}
		if shot.Base, err = ws.MergeBase(ctx, base); err != nil {
			return "", err
		}
		label, on = "before", "base commit "+shot.Base[:min(12, len(shot.Base))]
	}
	ws, err := e.commandWorkspace(ctx, ws, t)
	if err != nil {
		return "", err
	}
	data, res, err := ws.Screenshot(ctx, shot)
	if se := (*workspace.ShotError)(nil); errors.As(err, &se) {
		e.cfg.Logger.Warn("screenshot failed", "ticket", t.ID, "url", shot.URL, "before", a.Before, "error", e.deps.Scrubber.Scrub(se.Reason))
		return "", session.Refuse("%s", e.deps.Scrubber.Scrub(se.Reason))
	}
	if err != nil {
		return "", err
	}
	kept, err := e.deps.Shots.Put(ctx, t.ID, label+": "+shot.URL, shot.URL, data)
	if tm := (*shots.TooManyError)(nil); errors.As(err, &tm) {
		return "", session.Refuse("%s: link the ones you took", tm)
	}
	if err != nil {
		return "", err
	}
	link := shots.URL(e.cfg.PublicURL, kept.Token)
	e.showCard(ctx, t.ID)
	e.cfg.Logger.Info("screenshot taken", "ticket", t.ID, "token", kept.Token, "before", a.Before, "width", kept.Width, "height", kept.Height,
		"bytes", len(data), "duration", res.Duration.Round(time.Millisecond))
	return fmt.Sprintf("took a %dx%d screenshot (%s) of %s on %s, %d bytes, kept by the service.\n"+
		"Markdown for the pull request description:\n![%s](%s)", kept.Width, kept.Height, label, shot.URL, on, len(data), label, link), nil
}

// baseRef is the branch the Ticket's work goes into: its pull request's
// base, or "" (origin's default branch) before there is one.
func (e *Executor) baseRef(ctx context.Context, t tickets.Ticket) (string, error) {
	if t.PullNumber == 0 {
		return "", nil
	}
	_, pr, err := e.pull(ctx, t)
	if err != nil {
		return "", err
	}
	return pr.GetBase().GetRef(), nil
}

// screenshotsReady checks a pull request description of a change to a
// user interface: it must show screenshots the service took for this
// Ticket, at least one before the change and one after. Any two image
// links do not do.
func (e *Executor) screenshotsReady(ctx context.Context, t tickets.Ticket, body string) (string, error) {
	const how = "take them with the screenshot tool (before: true on the base commit, then on the branch) and put the markdown image links it returns in the description"
	if e.cfg.PublicURL == "" {
		return "the description needs a real screenshot of the state before the change and one after, and this service has no public address to keep them at (SUPERAGENT_PUBLIC_URL)", nil
	}
	linked := shots.Linked(body, e.cfg.PublicURL)
	own, err := e.deps.Shots.OfTicket(ctx, t.ID)
	if err != nil {
		return "", err
	}
	labels := map[string]string{}
	for _, s := range own {
		labels[s.Token] = s.Label
	}
	var before, after, foreign int
	for _, token := range linked {
		switch l, ok := labels[token]; {
		case !ok:
			foreign++
		case strings.HasPrefix(l, "before"):
			before++
		default:
			after++
		}
	}
	if before > 0 && after > 0 {
		return "", nil
	}
	msg := fmt.Sprintf("the description needs this Ticket's own screenshots, one before the change and one after (it shows %d before and %d after", before, after)
	if foreign > 0 {
		msg += fmt.Sprintf("; %d linked screenshot(s) are not this Ticket's", foreign)
	}
	return msg + "); other image links do not count: " + how, nil
}

// cardShots are the status card's images: the Ticket's latest screenshot
// before the change and its latest after, uploaded to Feishu once each
// (the image key is kept with the shot). One that cannot be uploaded is
// left out, and the card shows the rest.
func (e *Executor) cardShots(ctx context.Context, t tickets.Ticket) ([]any, error) {
	all, err := e.deps.Shots.OfTicket(ctx, t.ID)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	latest := map[string]shots.Shot{}
	for _, s := range all {
		kind, _, _ := strings.Cut(s.Label, ":")
		latest[kind] = s
	}
	var out []any
	for _, kind := range []string{"before", "after"} {
		s, ok := latest[kind]
		if !ok {
			continue
		}
		if s.FeishuImageKey == "" {
			data, err := e.deps.Shots.PNG(ctx, s.Token)
			if err != nil {
				return nil, err
			}
			key, err := e.deps.Feishu.UploadImage(ctx, data)
			if err != nil {
				e.cfg.Logger.Warn("uploading a screenshot to Feishu", "ticket", t.ID, "token", s.Token, "error", err)
				continue
			}
			if err := e.deps.Shots.SetFeishuImageKey(ctx, s.Token, key); err != nil {
				return nil, err
			}
			s.FeishuImageKey = key
		}
		out = append(out, map[string]any{"tag": "img", "img_key": s.FeishuImageKey,
			"alt": map[string]any{"tag": "plain_text", "content": oneLine(e.deps.Scrubber.Scrub(s.Label), 100)}})
	}
	return out, nil
}
